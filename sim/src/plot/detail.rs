//! The detail panels: for each chosen processor, measured against true over the run, under
//! one legend that sits above every panel (so it covers none) and names every mark.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor;

use super::{Context, Outcome, WIDTH, palette};
use crate::pofx::TracedRead;

/// The legend above the panels, px.
pub(super) const HEADER: u32 = 118;
/// One processor's panel, px.
pub(super) const ROW: u32 = 230;

/// One point of a processor's panel: an interval closed by a read of counter 0 (consecutive
/// intervals of one value merged), or a read that was refused or faulted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Point {
    /// The interval's start (the previous served read), ms; `None` for a lone read.
    pub(super) from_ms: Option<f64>,
    /// The read's time, ms.
    pub(super) at_ms: f64,
    pub(super) measured_mhz: Option<f64>,
    pub(super) true_mhz: Option<f64>,
    pub(super) outcome: Outcome,
    pub(super) faulted: bool,
    pub(super) discontinuity: bool,
}

impl Point {
    /// Whether `next` continues this interval with the same values (so one segment draws
    /// both): no mark on either, `next` starting where this one ends.
    fn continued_by(&self, next: &Self) -> bool {
        let same = |one: Option<f64>, other: Option<f64>| match (one, other) {
            (Some(one), Some(other)) => (one - other).abs() <= one.abs().max(1.0) * 1e-5,
            (None, None) => true,
            _ => false,
        };
        let plain = |point: &Self| {
            point.outcome == Outcome::Served && !point.faulted && !point.discontinuity
        };
        plain(self)
            && plain(next)
            && self.from_ms.is_some()
            && next.from_ms == Some(self.at_ms)
            && same(self.measured_mhz, next.measured_mhz)
            && same(self.true_mhz, next.true_mhz)
    }
}

/// One chosen processor's points, in the order its reads are digested.
#[derive(Debug, Default)]
pub(super) struct Series {
    points: Vec<Point>,
    /// The time of its last served read of counter 0 on its own processor.
    last_served: Option<f64>,
}

impl Series {
    /// Adds a read of counter 0, judged `outcome`.
    pub(super) fn push(&mut self, read: &TracedRead, outcome: Outcome) {
        let interval = read.interval;
        let point = Point {
            from_ms: interval.and(self.last_served),
            at_ms: read.time_ms,
            measured_mhz: interval.and_then(|interval| interval.measured_mhz),
            true_mhz: interval.and_then(|interval| interval.true_mhz),
            outcome,
            faulted: read.faulted,
            discontinuity: interval.is_some_and(|interval| interval.discontinuity),
        };
        if read.served && !read.foreign {
            self.last_served = Some(read.time_ms);
        }
        match self.points.last_mut() {
            Some(last) if last.continued_by(&point) => last.at_ms = point.at_ms,
            _ => self.points.push(point),
        }
    }

    pub(super) fn points(&self) -> &[Point] {
        &self.points
    }
}

/// What the panels' vertical axis shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum View {
    /// MHz: measured against true.
    #[default]
    Mhz,
    /// `% Processor Performance`: measured over the nominal rate, in %, as perfmon shows it;
    /// the truth over the processor's nominal rate.
    Percent,
}

impl View {
    /// The names `--plot-view` takes.
    pub const NAMES: [&'static str; 2] = ["mhz", "percent"];

    /// The view named `name` (one of [`View::NAMES`]).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "mhz" => Some(Self::Mhz),
            "percent" => Some(Self::Percent),
            _ => None,
        }
    }

    const fn unit(self) -> &'static str {
        match self {
            Self::Mhz => "MHz",
            Self::Percent => "% Processor Performance",
        }
    }
}

/// Turns a point's MHz into the view's unit.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scale {
    pub(super) view: View,
    /// The rate the measured MHz were computed with (the engine's).
    pub(super) measured_nominal: f64,
    /// The simulated processor's nominal MHz.
    pub(super) true_nominal: f64,
}

impl Scale {
    fn new(view: View, context: &Context<'_>) -> Self {
        Self {
            view,
            measured_nominal: context.perf_nominal_mhz,
            true_nominal: f64::from(context.scenario.platform.nominal_mhz.max(1)),
        }
    }

    pub(super) fn apply(self, point: Point) -> Point {
        match self.view {
            View::Mhz => point,
            View::Percent => Point {
                measured_mhz: point.measured_mhz.map(|mhz| mhz / self.measured_nominal * 100.0),
                true_mhz: point.true_mhz.map(|mhz| mhz / self.true_nominal * 100.0),
                ..point
            },
        }
    }

    /// Where the nominal line is drawn.
    pub(super) const fn nominal(self) -> f64 {
        match self.view {
            View::Mhz => self.true_nominal,
            View::Percent => 100.0,
        }
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Draws the legend and, under it, one panel per processor of `processors` with its points
/// of `series`, all on one vertical scale.
pub(super) fn draw(
    area: &Area<'_>,
    context: &Context<'_>,
    view: View,
    (processors, series): (&[u32], &[Vec<Point>]),
) -> Result<(), Box<dyn std::error::Error>> {
    let scale = Scale::new(view, context);
    let series: Vec<Vec<Point>> = series
        .iter()
        .map(|points| points.iter().map(|point| scale.apply(*point)).collect())
        .collect();
    let nominal = scale.nominal();
    let highest = series
        .iter()
        .flatten()
        .flat_map(|point| [point.measured_mhz, point.true_mhz])
        .flatten()
        .filter(|value| value.is_finite())
        .fold(nominal, f64::max);
    // Headroom for the discontinuity marks above the highest line.
    let top = highest * 1.2;
    let (legend_area, charts) = area.split_vertically(HEADER);
    draw_legend(&legend_area, view, context, nominal)?;
    let areas = charts.split_evenly((series.len().max(1), 1));
    for (points, (area, index)) in series.iter().zip(areas.iter().zip(processors)) {
        draw_processor(area, context, view, (*index, points), (nominal, top))?;
    }
    Ok(())
}

/// The legend, above every panel (so it covers none), in two columns.
fn draw_legend(
    area: &Area<'_>,
    view: View,
    context: &Context<'_>,
    nominal: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let nominal = match view {
        View::Mhz => format!("nominal ({nominal:.0} MHz)"),
        View::Percent => "nominal (100 %)".to_owned(),
    };
    let fault = format!("{} (the counter access faulted)", context.fault_name());
    let entries: [(&str, Glyph); 10] = [
        ("true (the simulated processor)", Glyph::Truth),
        ("measured (from the PEP's counts)", Glyph::Measured),
        (&nominal, Glyph::Nominal),
        ("counter discontinuity (reset, wrap, sleep, stop)", Glyph::Discontinuity),
        ("sleep (S3/S4: the counters stop)", Glyph::Band(palette::SLEEP)),
        ("not present (hot-removed, or before its hot-add)", Glyph::Band(palette::ABSENT)),
        ("read refused correctly (faulted, or on another processor)", Glyph::Refused),
        (&fault, Glyph::Fault),
        ("error: a working read refused, a faulted or foreign one served", Glyph::Error),
        ("no line: idle (no C0 time), or across a discontinuity", Glyph::None),
    ];
    area.draw(&Text::new(
        "Detail: measured against true, per processor",
        (20, 4),
        ("sans-serif", 15).into_font().style(FontStyle::Bold),
    ))?;
    let column_width = i32::try_from(WIDTH).unwrap_or(1000) / 2;
    for (number, (label, glyph)) in entries.iter().enumerate() {
        let number = i32::try_from(number).unwrap_or(0);
        let (x, y) = (20 + column_width * (number % 2), 34 + 18 * (number / 2));
        glyph.draw(area, (x, y))?;
        area.draw(&Text::new(*label, (x + 30, y - 7), ("sans-serif", 13)))?;
    }
    let bottom = i32::try_from(HEADER).unwrap_or(0) - 4;
    area.draw(&PathElement::new(
        vec![(0, bottom), (i32::try_from(WIDTH).unwrap_or(1000), bottom)],
        BLACK.mix(0.15),
    ))?;
    Ok(())
}

/// A legend entry's sample.
#[derive(Clone, Copy, Debug)]
enum Glyph {
    Truth,
    Measured,
    Nominal,
    Band(RGBColor),
    Discontinuity,
    Refused,
    Fault,
    Error,
    None,
}

impl Glyph {
    fn draw(self, area: &Area<'_>, (x, y): (i32, i32)) -> Result<(), Box<dyn std::error::Error>> {
        match self {
            Self::Truth => area.draw(&PathElement::new(
                vec![(x, y), (x + 22, y)],
                GREEN.mix(0.45).stroke_width(6),
            ))?,
            Self::Measured => {
                area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], BLUE.stroke_width(2)))?;
            }
            Self::Nominal => area.draw(&DashedPathElement::new(
                vec![(x, y), (x + 22, y)],
                4,
                3,
                BLACK.mix(0.55),
            ))?,
            Self::Band(color) => {
                area.draw(&Rectangle::new([(x, y - 6), (x + 22, y + 6)], color.filled()))?;
                area.draw(&Rectangle::new([(x, y - 6), (x + 22, y + 6)], BLACK.mix(0.25)))?;
            }
            Self::Discontinuity => area.draw(&discontinuity((x + 11, y)))?,
            Self::Refused => area.draw(&refused((x + 11, y)))?,
            Self::Fault => area.draw(&fault((x + 11, y)))?,
            Self::Error => {
                area.draw(&PathElement::new(
                    vec![(x + 11, y - 8), (x + 11, y + 8)],
                    palette::ERROR.mix(0.7).stroke_width(1),
                ))?;
                area.draw(&Rectangle::new(
                    [(x + 7, y - 4), (x + 15, y + 4)],
                    palette::ERROR.filled(),
                ))?;
            }
            Self::None => {}
        }
        Ok(())
    }
}

fn discontinuity<C>(at: C) -> Cross<C, i32> {
    Cross::new(at, 5, BLACK.stroke_width(2))
}

fn refused<C>(at: C) -> TriangleMarker<C, i32> {
    TriangleMarker::new(at, 5, palette::REFUSED.filled())
}

fn fault<C>(at: C) -> Circle<C, i32> {
    Circle::new(at, 4, palette::FAULT.filled())
}

/// One processor's panel.
#[allow(clippy::cast_precision_loss)] // Times and frequencies for axes.
fn draw_processor(
    area: &Area<'_>,
    context: &Context<'_>,
    view: View,
    (index, points): (u32, &[Point]),
    (nominal, top): (f64, f64),
) -> Result<(), Box<dyn std::error::Error>> {
    let duration_ms = context.duration_ms();
    let mut chart = ChartBuilder::on(area)
        .caption(context.name(index), ("sans-serif", 15))
        .margin_top(6)
        .margin_bottom(4)
        .margin_left(8)
        // Room for the last x label, centred on the right edge.
        .margin_right(24)
        // Tick labels, then the unit below them with a gap.
        .x_label_area_size(42)
        .y_label_area_size(if view == View::Percent { 70 } else { 64 })
        .build_cartesian_2d(0.0..duration_ms, 0.0..top)?;
    chart
        .configure_mesh()
        .x_desc("time since the run started (ms)")
        .y_desc(view.unit())
        .axis_desc_style(("sans-serif", 13))
        .label_style(("sans-serif", 12))
        .x_label_formatter(&|ms| format!("{ms:.0}"))
        .y_labels(6)
        .x_labels(11)
        .y_label_formatter(&|value| format!("{value:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    let bands = |spans: &[(f64, f64)], color: RGBColor| {
        spans
            .iter()
            .map(|(start, end)| {
                Rectangle::new([(*start, 0.0), (end.min(duration_ms), top)], color.filled())
            })
            .collect::<Vec<_>>()
    };
    chart.draw_series(bands(&context.sleeps, palette::SLEEP))?;
    let absent = context
        .absences
        .get(usize::try_from(index).unwrap_or(usize::MAX))
        .map_or(&[][..], Vec::as_slice);
    chart.draw_series(bands(absent, palette::ABSENT))?;
    chart.draw_series(
        absent.iter().filter(|(start, end)| end - start > duration_ms / 12.0).map(
            |(start, end)| {
                Text::new(
                    "not present",
                    ((start + end.min(duration_ms)) / 2.0, top * 0.55),
                    TextStyle::from(("sans-serif", 12).into_font()).pos(text_anchor::Pos::new(
                        text_anchor::HPos::Center,
                        text_anchor::VPos::Center,
                    )),
                )
            },
        ),
    )?;
    chart.draw_series(std::iter::once(DashedPathElement::new(
        vec![(0.0, nominal), (duration_ms, nominal)],
        4,
        3,
        BLACK.mix(0.55),
    )))?;
    if let Some(unmeasured) = context.unmeasured(index) {
        chart.draw_series(std::iter::once(Text::new(
            unmeasured,
            (duration_ms / 2.0, top * 0.3),
            TextStyle::from(("sans-serif", 16).into_font().style(FontStyle::Bold))
                .pos(text_anchor::Pos::new(text_anchor::HPos::Center, text_anchor::VPos::Center)),
        )))?;
    }
    // Across a discontinuity (a sleep, a reset) there is no one truth to draw.
    let truth = points.iter().filter(|point| !point.discontinuity).filter_map(|point| {
        Some(PathElement::new(
            vec![(point.from_ms?, point.true_mhz?), (point.at_ms, point.true_mhz?)],
            GREEN.mix(0.45).stroke_width(6),
        ))
    });
    chart.draw_series(truth)?;
    let measured = points.iter().filter_map(|point| {
        Some(PathElement::new(
            vec![(point.from_ms?, point.measured_mhz?), (point.at_ms, point.measured_mhz?)],
            BLUE.stroke_width(2),
        ))
    });
    chart.draw_series(measured)?;
    let jumps =
        points.iter().filter(|point| point.discontinuity).map(|point| (point.at_ms, top * 0.94));
    chart.draw_series(jumps.map(discontinuity))?;
    let marks = |outcome: Outcome| {
        points.iter().filter(move |point| point.outcome == outcome).map(|point| point.at_ms)
    };
    chart.draw_series(marks(Outcome::RefusedCorrectly).map(|at| refused((at, top * 0.05))))?;
    // An error is a red line through the panel, and a square at its foot.
    chart.draw_series(marks(Outcome::Error).map(|at| {
        PathElement::new(vec![(at, 0.0), (at, top)], palette::ERROR.mix(0.7).stroke_width(1))
    }))?;
    chart.draw_series(marks(Outcome::Error).map(|at| {
        EmptyElement::at((at, top * 0.05))
            + Rectangle::new([(-4, -4), (4, 4)], palette::ERROR.filled())
    }))?;
    let faulted = points.iter().filter(|point| point.faulted).map(|point| point.at_ms);
    chart.draw_series(faulted.map(|at| fault((at, top * 0.12))))?;
    Ok(())
}
