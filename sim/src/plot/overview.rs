//! The overview: one row per processor over time, each cell the `% Processor Performance` of
//! that processor in that time bin, or why there is none, with reads refused correctly, faults
//! and errors marked.
//!
//! Bounds: at most [`MAX_BINS`] time bins, each a whole number of sample intervals (so every
//! bin holds the same number of reads); at least one pixel row per processor
//! ([`row_height`]). The cells are kept while the run digests its reads (12 bytes a cell:
//! 2048 processors × 300 bins is 7.4 MB) and drawn as one image of bins × processors pixels,
//! embedded in the SVG as PNG: its size follows what the cells hold, not how many there are
//! (a uniform run of 2048 processors is a few kB).

use std::sync::{Mutex, PoisonError};

use plotters::prelude::*;
use plotters::style::text_anchor;
use resvg::tiny_skia;

use super::{Context, Outcome, WIDTH, palette};
use crate::pofx::TracedRead;
use crate::scenario::Scenario;

/// The most time bins of a row.
pub const MAX_BINS: u32 = 300;

/// The tallest a processor's row is drawn, px (a handful of processors).
const MAX_ROW: u32 = 16;
/// The height the rows aim to fill, px, when there are many.
const ROWS_TARGET: u32 = 520;
/// Left of the cells: the rows' labels, px.
const LEFT: i32 = 190;
/// Right of the cells, px.
const RIGHT: i32 = 30;
/// Above the cells: the heading and the sleeps' bar, px.
const TOP: u32 = 40;
/// Under the cells: the time axis, then the legend, px.
const BOTTOM: u32 = 44 + 82;

/// The height of one processor's row for `processors` processors, px: at least 1.
#[must_use]
pub fn row_height(processors: u32) -> u32 {
    (ROWS_TARGET / processors.max(1)).clamp(1, MAX_ROW)
}

/// The overview's height for `processors` processors, px.
pub(super) fn height(processors: u32) -> u32 {
    TOP + row_height(processors) * processors + BOTTOM
}

/// What a cell saw.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    /// Σ measured MHz × `ΔNominal` over the intervals whose middle is in the bin.
    weighted_mhz: f32,
    /// Σ `ΔNominal` of those intervals.
    weight: f32,
    /// [`IDLE`], [`REFUSED`], [`FAULT`], [`ERROR`].
    flags: u8,
}

/// An interval with no C0 time counted ended in the bin.
const IDLE: u8 = 1;
/// A read was refused correctly (on another processor).
const REFUSED: u8 = 2;
/// A counter access faulted (and the read was refused, correctly).
const FAULT: u8 = 4;
/// A working read was refused, or a faulted or foreign one served.
const ERROR: u8 = 8;
/// An interval across a counter discontinuity (a reset, a wrap, a sleep) ended in the bin.
const JUMP: u8 = 16;

/// One processor's cells.
#[derive(Debug)]
struct Row {
    cells: Vec<Cell>,
    /// The time of its last served read of counter 0 on its own processor.
    last_served: Option<f64>,
}

/// Every processor's cells, filled as the reads are digested (one lock per processor: each
/// is read by one worker).
#[derive(Debug)]
pub(super) struct Grid {
    /// A bin's length, ms.
    bin_ms: u32,
    bins: u32,
    rows: Vec<Mutex<Row>>,
}

impl Grid {
    /// The empty cells of `scenario`'s processors.
    pub(super) fn new(scenario: &Scenario) -> Self {
        let interval = scenario.pofx.sample_interval_ms.max(1);
        let duration = scenario.pofx.duration_ms.max(1);
        // The OS reads at every multiple of the interval before the end: the bins cover the
        // intervals up to the last read.
        let last_read = (duration - 1) / interval * interval;
        let bin_ms = interval * (last_read / interval).max(1).div_ceil(MAX_BINS);
        let bins = last_read.div_ceil(bin_ms).max(1);
        let cells = usize::try_from(bins).unwrap_or(1);
        let rows = (0..scenario.platform.processors)
            .map(|_| Mutex::new(Row { cells: vec![Cell::default(); cells], last_served: None }))
            .collect();
        Self { bin_ms, bins, rows }
    }

    /// The bin of time `ms`.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Clamped to the bins.
    pub(super) fn bin(&self, ms: f64) -> usize {
        let bin = (ms / f64::from(self.bin_ms)).floor().clamp(0.0, f64::from(self.bins - 1));
        bin as usize
    }

    /// How many bins a row has, and a bin's length, ms.
    #[cfg(test)]
    pub(super) const fn shape(&self) -> (u32, u32) {
        (self.bins, self.bin_ms)
    }

    /// Takes `read`, judged `outcome`, into its processor's row.
    pub(super) fn observe(&self, read: &TracedRead, outcome: Outcome) {
        if let Some(row) =
            usize::try_from(read.processor).ok().and_then(|index| self.rows.get(index))
        {
            self.take(&mut row.lock().unwrap_or_else(PoisonError::into_inner), read, outcome);
        }
    }

    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)] // Colours: f32.
    fn take(&self, row: &mut Row, read: &TracedRead, outcome: Outcome) {
        let at = self.bin(read.time_ms);
        let flag = match outcome {
            Outcome::Served => 0,
            Outcome::RefusedCorrectly if read.faulted => FAULT,
            Outcome::RefusedCorrectly => REFUSED,
            Outcome::Error => ERROR,
        };
        if let Some(cell) = row.cells.get_mut(at) {
            cell.flags |= flag;
        }
        if read.counter_index != 0 || read.foreign {
            return;
        }
        let from = row.last_served;
        if read.served {
            row.last_served = Some(read.time_ms);
        }
        let Some(interval) = read.interval else { return };
        let middle = self.bin(from.map_or(read.time_ms, |from| f64::midpoint(from, read.time_ms)));
        let Some(cell) = row.cells.get_mut(middle) else { return };
        if interval.discontinuity {
            cell.flags |= JUMP;
            return;
        }
        match interval.measured_mhz.filter(|mhz| mhz.is_finite()) {
            Some(mhz) if interval.delta_nominal > 0 => {
                let weight = interval.delta_nominal as f32;
                cell.weighted_mhz += mhz as f32 * weight;
                cell.weight += weight;
            }
            _ => cell.flags |= IDLE,
        }
    }

    /// What each cell shows, and the colour scale's top.
    pub(super) fn heat(&self, context: &Context<'_>) -> Heat {
        let nominal = context.perf_nominal_mhz;
        let rows: Vec<Vec<Cell>> = self
            .rows
            .iter()
            .map(|row| row.lock().unwrap_or_else(PoisonError::into_inner).cells.clone())
            .collect();
        let highest = rows
            .iter()
            .flatten()
            .filter(|cell| cell.weight > 0.0)
            .map(|cell| f64::from(cell.weighted_mhz / cell.weight) / nominal * 100.0)
            .filter(|percent| percent.is_finite())
            .fold(100.0, f64::max);
        // A round top, 25 % at a time, at most MAX_PERCENT (above it: the top colour).
        let top = ((highest / 25.0).ceil() * 25.0).min(MAX_PERCENT);
        let bin_ms = f64::from(self.bin_ms);
        let overlaps = |spans: &[(f64, f64)], bin: u32| {
            let (start, end) = (f64::from(bin) * bin_ms, f64::from(bin + 1) * bin_ms);
            spans.iter().any(|(from, to)| *from < end && *to > start)
        };
        let kinds = rows
            .iter()
            .zip(0_u32..)
            .map(|(cells, index)| {
                let absent = context
                    .absences
                    .get(usize::try_from(index).unwrap_or(usize::MAX))
                    .map_or(&[][..], Vec::as_slice);
                let unmeasured = context.unmeasured(index).is_some();
                cells
                    .iter()
                    .zip(0_u32..)
                    .map(|(cell, bin)| {
                        if cell.flags & ERROR != 0 {
                            Kind::Error
                        } else if cell.flags & FAULT != 0 {
                            Kind::Fault
                        } else if cell.flags & REFUSED != 0 {
                            Kind::Refused
                        } else if cell.weight > 0.0 {
                            Kind::Percent(
                                f64::from(cell.weighted_mhz / cell.weight) / nominal * 100.0,
                            )
                        } else if overlaps(absent, bin) {
                            Kind::Absent
                        } else if overlaps(&context.sleeps, bin) {
                            Kind::Sleep
                        } else if unmeasured {
                            Kind::NoCounters
                        } else if cell.flags & IDLE != 0 {
                            Kind::Idle
                        } else if cell.flags & JUMP != 0 {
                            Kind::Discontinuity
                        } else {
                            Kind::Unread
                        }
                    })
                    .collect()
            })
            .collect();
        Heat { kinds, top, bin_ms: self.bin_ms, bins: self.bins }
    }
}

/// The highest % the colour scale goes to; higher cells take its top colour.
const MAX_PERCENT: f64 = 400.0;

/// What a cell shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    /// `% Processor Performance` over the bin.
    Percent(f64),
    /// Only intervals with no C0 time counted.
    Idle,
    /// The system slept.
    Sleep,
    /// The processor was not present.
    Absent,
    /// The PEP gave the processor no counters, or declined it.
    NoCounters,
    /// A read was refused correctly (on another processor).
    Refused,
    /// A counter access faulted; the read was refused, correctly.
    Fault,
    /// A working read refused, or a faulted or foreign one served.
    Error,
    /// Only an interval across a counter discontinuity: nothing to measure.
    Discontinuity,
    /// No read ended in the bin (and none of the above explains it).
    Unread,
}

impl Kind {
    /// The cell's colour on a scale whose top is `top` %.
    fn color(self, top: f64) -> RGBColor {
        match self {
            Self::Percent(percent) => scale_color(percent / top),
            Self::Idle => palette::IDLE,
            Self::Sleep => palette::SLEEP,
            Self::Absent => palette::ABSENT,
            Self::NoCounters => palette::NO_COUNTERS,
            Self::Refused => palette::REFUSED,
            Self::Fault => palette::FAULT,
            Self::Error => palette::ERROR,
            Self::Discontinuity | Self::Unread => WHITE,
        }
    }
}

/// Every cell's kind, one row per processor.
#[derive(Debug)]
pub(super) struct Heat {
    pub(super) kinds: Vec<Vec<Kind>>,
    /// The colour scale's top, %.
    pub(super) top: f64,
    bin_ms: u32,
    bins: u32,
}

/// The colour scale (viridis: perceptually uniform, readable in grey and by colour-blind
/// readers), from 0 to 1: its colours at every eighth.
const SCALE: [(u8, u8, u8); 9] = [
    (0x44, 0x01, 0x54),
    (0x48, 0x28, 0x78),
    (0x3e, 0x49, 0x89),
    (0x31, 0x68, 0x8e),
    (0x26, 0x82, 0x8e),
    (0x1f, 0x9e, 0x89),
    (0x35, 0xb7, 0x79),
    (0x6e, 0xce, 0x58),
    (0xfd, 0xe7, 0x25),
];

/// The scale's colour at `fraction` (clamped to 0..=1).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Channels in 0..=255.
fn scale_color(fraction: f64) -> RGBColor {
    let position = if fraction.is_finite() { fraction.clamp(0.0, 1.0) } else { 1.0 } * 8.0;
    let floor = position.floor().min(7.0);
    let (below, within) = (floor as usize, position - floor);
    let (from, to) = (SCALE[below], SCALE[below + 1]);
    let mix = |one: u8, other: u8| {
        (f64::from(other) - f64::from(one)).mul_add(within, f64::from(one)).round() as u8
    };
    RGBColor(mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}

/// The cells as an image: one pixel per cell, placed over a rectangle of the picture.
#[derive(Debug)]
pub(super) struct Cells {
    pixels: tiny_skia::Pixmap,
    /// Left, top, width, height in the picture, px.
    place: (f32, f32, f32, f32),
    /// A cell's pixels: across, down.
    #[cfg(test)]
    cell: (usize, usize),
}

impl Cells {
    /// The cells of `heat` over `place`, each `(width, height)` pixels (so that viewers that
    /// smooth an image, as librsvg does, blur only the cells' edges).
    fn new(
        heat: &Heat,
        place: (f32, f32, f32, f32),
        (width, height): (u32, u32),
    ) -> Result<Self, String> {
        let rows = u32::try_from(heat.kinds.len()).map_err(|error| error.to_string())?;
        let (width, height) = (width.max(1), height.max(1));
        let mut pixels = tiny_skia::Pixmap::new(heat.bins.max(1) * width, rows.max(1) * height)
            .ok_or("the overview has no cells")?;
        let stride = usize::try_from(pixels.width()).unwrap_or(0) * 4;
        let (width, height) =
            (usize::try_from(width).unwrap_or(1), usize::try_from(height).unwrap_or(1));
        for (row, kinds) in pixels.data_mut().chunks_exact_mut(stride * height).zip(&heat.kinds) {
            let (first, rest) = row.split_at_mut(stride);
            for (cell, kind) in first.chunks_exact_mut(4 * width).zip(kinds) {
                let RGBColor(red, green, blue) = kind.color(heat.top);
                for pixel in cell.chunks_exact_mut(4) {
                    pixel.copy_from_slice(&[red, green, blue, 255]);
                }
            }
            for line in rest.chunks_exact_mut(stride) {
                line.copy_from_slice(first);
            }
        }
        Ok(Self {
            pixels,
            place,
            #[cfg(test)]
            cell: (width, height),
        })
    }

    /// The image, as an SVG element: a PNG, each cell one pixel, drawn without smoothing.
    pub(super) fn svg_image(&self) -> String {
        use base64::Engine as _;
        let png = self.pixels.encode_png().unwrap_or_default();
        let (x, y, width, height) = self.place;
        format!(
            "<image x=\"{x}\" y=\"{y}\" width=\"{width}\" height=\"{height}\" preserveAspectRatio=\"none\" image-rendering=\"optimizeSpeed\" style=\"image-rendering:pixelated\" href=\"data:image/png;base64,{}\"/>\n",
            base64::engine::general_purpose::STANDARD.encode(png)
        )
    }

    /// Draws the cells into `pixmap` at their place, without smoothing.
    pub(super) fn draw_into(&self, pixmap: &mut tiny_skia::Pixmap) {
        let (x, y, width, height) = self.place;
        #[allow(clippy::cast_precision_loss)] // A few thousand pixels.
        let scale = (width / self.pixels.width() as f32, height / self.pixels.height() as f32);
        pixmap.draw_pixmap(
            0,
            0,
            self.pixels.as_ref(),
            &tiny_skia::PixmapPaint {
                quality: tiny_skia::FilterQuality::Nearest,
                ..tiny_skia::PixmapPaint::default()
            },
            tiny_skia::Transform::from_row(scale.0, 0.0, 0.0, scale.1, x, y),
            None,
        );
    }

    /// The colour of the cell of processor `row` in time bin `bin` (for tests).
    #[cfg(test)]
    pub(super) fn color(&self, row: usize, bin: usize) -> Option<RGBColor> {
        let (x, y) = (bin * self.cell.0, row * self.cell.1);
        let pixel = self.pixels.pixel(u32::try_from(x).ok()?, u32::try_from(y).ok()?)?;
        Some(RGBColor(pixel.red(), pixel.green(), pixel.blue()))
    }

    /// How many rows and bins the image holds (for tests).
    #[cfg(test)]
    pub(super) fn shape(&self) -> (usize, usize) {
        let (width, height) = (self.pixels.width(), self.pixels.height());
        (
            usize::try_from(height).unwrap_or(0) / self.cell.1,
            usize::try_from(width).unwrap_or(0) / self.cell.0,
        )
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Draws the overview's axes, labels and legend into `area` and returns its cells, placed
/// where they go in the picture.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)] // Pixels and ms.
pub(super) fn draw(
    area: &Area<'_>,
    context: &Context<'_>,
    heat: &Heat,
) -> Result<Cells, Box<dyn std::error::Error>> {
    let processors = u32::try_from(heat.kinds.len()).unwrap_or(u32::MAX);
    let row = row_height(processors);
    let (base_x, base_y) = area.get_base_pixel();
    let width = i32::try_from(WIDTH).unwrap_or(1000) - LEFT - RIGHT;
    let top = i32::try_from(TOP).unwrap_or(0);
    let height = i32::try_from(row * processors).unwrap_or(i32::MAX);
    let span_ms = f64::from(heat.bins) * f64::from(heat.bin_ms);
    let x_of = |ms: f64| LEFT + (ms / span_ms * f64::from(width)).round() as i32;
    let font = |size| ("sans-serif", size).into_font();
    area.draw(&Text::new(
        format!(
            "Overview: % Processor Performance of every processor (measured / the PEP's nominal {:.0} MHz, the report's % perf), {} ms bins",
            context.perf_nominal_mhz, heat.bin_ms
        ),
        (20, 6),
        font(15).style(FontStyle::Bold),
    ))?;
    // The sleeps, as a bar above the cells (a short sleep may not fill a bin).
    for (start, resume) in &context.sleeps {
        let (from, to) = (x_of(*start), x_of(resume.min(span_ms)).max(x_of(*start) + 2));
        area.draw(&Rectangle::new([(from, top - 9), (to, top - 3)], palette::SLEEP.filled()))?;
        area.draw(&Rectangle::new([(from, top - 9), (to, top - 3)], BLACK.mix(0.4)))?;
    }
    area.draw(&Rectangle::new(
        [(LEFT - 1, top - 1), (LEFT + width + 1, top + height + 1)],
        BLACK.mix(0.5),
    ))?;
    draw_row_labels(area, context, (processors, row), top)?;
    // The time axis.
    let axis = top + height + 2;
    let step = tick_step(span_ms);
    for tick in 0..=ticks(span_ms, step) {
        let ms = f64::from(tick) * step;
        let x = x_of(ms);
        draw_tick(area, (x, axis), format!("{ms:.0}"), 12)?;
    }
    area.draw(&Text::new(
        "time since the run started (ms)",
        (LEFT + width / 2, axis + 24),
        centred_below(13),
    ))?;
    draw_legend(area, context, heat, axis + 46)?;
    let place = ((base_x + LEFT) as f32, (base_y + top) as f32, width as f32, height as f32);
    let across = u32::try_from(width).unwrap_or(1) / heat.bins.max(1);
    Ok(Cells::new(heat, place, (across.max(1), row))?)
}

/// The rows' labels: every row with its device id when the rows are tall enough, else every
/// so many rows (a power of two, so that each processor group's first row is labelled).
fn draw_row_labels(
    area: &Area<'_>,
    context: &Context<'_>,
    (processors, row): (u32, u32),
    top: i32,
) -> Result<(), Box<dyn std::error::Error>> {
    let every = (0..12).map(|power| 1_u32 << power).find(|every| every * row >= 14).unwrap_or(2048);
    let style = TextStyle::from(("sans-serif", 11).into_font())
        .pos(text_anchor::Pos::new(text_anchor::HPos::Right, text_anchor::VPos::Center));
    for index in (0..processors).step_by(usize::try_from(every).unwrap_or(1)) {
        let y = top + i32::try_from(index * row).unwrap_or(0);
        let label = if every == 1 && row >= 12 {
            let id = context
                .processor(index)
                .map_or(String::new(), |processor| super::shown(&processor.device_id, 20));
            format!("{} {id}", context.instance(index))
        } else {
            context.instance(index)
        };
        let centre = if every == 1 { y + i32::try_from(row / 2).unwrap_or(0) } else { y };
        area.draw(&Text::new(label, (LEFT - 8, centre), style.clone()))?;
        area.draw(&PathElement::new(vec![(LEFT - 5, centre), (LEFT - 1, centre)], BLACK))?;
    }
    Ok(())
}

/// A tick down from `(x, y)`, and `label` centred under it.
fn draw_tick(
    area: &Area<'_>,
    (x, y): (i32, i32),
    label: String,
    size: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    area.draw(&PathElement::new(vec![(x, y), (x, y + 4)], BLACK))?;
    area.draw(&Text::new(label, (x, y + 5), centred_below(size)))?;
    Ok(())
}

/// Text of `size` centred on its point and hanging below it.
fn centred_below(size: u32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font())
        .pos(text_anchor::Pos::new(text_anchor::HPos::Center, text_anchor::VPos::Top))
}

/// How many steps of `step` fit in `span` (a few dozen at most).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Small and positive.
fn ticks(span: f64, step: f64) -> u32 {
    (span / step + 1e-9).floor().clamp(0.0, 100.0) as u32
}

/// A round step for at most about 11 ticks over `span` ms.
fn tick_step(span: f64) -> f64 {
    let rough = span / 10.0;
    let power = 10_f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|factor| factor * power)
        .find(|step| *step >= rough)
        .unwrap_or(power * 10.0)
}

/// The colour scale and the cells' other colours.
fn draw_legend(
    area: &Area<'_>,
    context: &Context<'_>,
    heat: &Heat,
    y: i32,
) -> Result<(), Box<dyn std::error::Error>> {
    let font = |size| ("sans-serif", size).into_font();
    area.draw(&Text::new("% perf:", (20, y + 1), font(13)))?;
    let (left, length) = (80, 360);
    for step in 0..length {
        let color = scale_color(f64::from(step) / f64::from(length - 1));
        area.draw(&Rectangle::new([(left + step, y), (left + step + 1, y + 12)], color.filled()))?;
    }
    area.draw(&Rectangle::new([(left, y), (left + length, y + 12)], BLACK.mix(0.5)))?;
    let tick = if heat.top > 200.0 { 50.0 } else { 25.0 };

    #[allow(clippy::cast_possible_truncation)] // Pixels.
    for number in 0..=ticks(heat.top, tick) {
        let percent = f64::from(number) * tick;
        let x = left + (percent / heat.top * f64::from(length)).round() as i32;
        let label = if (percent - heat.top).abs() < 1e-9 && heat.top >= MAX_PERCENT {
            format!("≥ {percent:.0}")
        } else {
            format!("{percent:.0}")
        };
        draw_tick(area, (x, y + 12), label, 11)?;
    }
    area.draw(&Text::new(
        "100 % = nominal; a cell is its bin's ΣΔActual / ΣΔNominal",
        (left + length + 14, y + 1),
        font(12),
    ))?;
    let fault = format!("{} (read refused)", context.fault_name());
    let entries: [(&str, RGBColor); 8] = [
        ("idle (no C0 time counted)", palette::IDLE),
        ("across a counter discontinuity", WHITE),
        ("sleep", palette::SLEEP),
        ("not present (hot-removed)", palette::ABSENT),
        ("no counters: nothing measured", palette::NO_COUNTERS),
        ("read refused correctly", palette::REFUSED),
        (&fault, palette::FAULT),
        ("error (see the detail legend)", palette::ERROR),
    ];
    let column = 240;
    for (number, (label, color)) in entries.iter().enumerate() {
        let number = i32::try_from(number).unwrap_or(0);
        let (x, row_y) = (20 + column * (number % 4), y + 38 + 18 * (number / 4));
        area.draw(&Rectangle::new([(x, row_y), (x + 18, row_y + 11)], color.filled()))?;
        area.draw(&Rectangle::new([(x, row_y), (x + 18, row_y + 11)], BLACK.mix(0.35)))?;
        area.draw(&Text::new(*label, (x + 24, row_y), font(12)))?;
    }
    Ok(())
}
