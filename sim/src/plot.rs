//! `ppm-sim run --plot`: measured against true frequency, per processor, over the run.
//!
//! For each interval of the FREQUENCY counter, the frequency Windows computes from it (blue)
//! against the simulated truth of that interval (green), with the nominal rate (dashed),
//! counter discontinuities, faulted and refused reads and sleeps marked. One chart per
//! processor (at most [`MAX_PLOTTED_PROCESSORS`]), under one legend that sits above every
//! chart (so it covers none) and names every mark, the sleep band included.
//!
//! `--plot-view percent` ([`View::Percent`]) shows `% Processor Performance` instead, what
//! perfmon shows: the measured rate over the engine's nominal rate (`ΔActual / ΔNominal`, in
//! %), against the truth over the simulated processor's nominal rate — the two differ when the
//! engine's nominal rate is wrong.
//!
//! Drawn with `plotters` as SVG; PNG is that SVG rasterised with `resvg` (text in the
//! system's fonts).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::pofx::{ReadObserver, TracedRead};
use crate::scenario::Scenario;

/// The most processors one plot shows.
pub const MAX_PLOTTED_PROCESSORS: usize = 16;
/// How many processors a plot shows when none are chosen: the first ones.
pub const DEFAULT_PLOTTED_PROCESSORS: u32 = 8;

/// One point of a processor's plot: an interval closed by a read of counter 0, or a read that
/// was refused or faulted.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    /// The interval's start (the previous served read), ms; `None` for a lone read.
    from_ms: Option<f64>,
    /// The read's time, ms.
    at_ms: f64,
    measured_mhz: Option<f64>,
    true_mhz: Option<f64>,
    served: bool,
    faulted: bool,
    discontinuity: bool,
}

/// The file format of a plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.svg`.
    Svg,
    /// `.png`.
    Png,
}

impl Format {
    /// The format named by `path`'s extension.
    ///
    /// # Errors
    /// A one-line message when the extension is neither `.svg` nor `.png`.
    pub fn of(path: &Path) -> Result<Self, String> {
        match path.extension().and_then(|extension| extension.to_str()) {
            Some(extension) if extension.eq_ignore_ascii_case("svg") => Ok(Self::Svg),
            Some(extension) if extension.eq_ignore_ascii_case("png") => Ok(Self::Png),
            _ => Err(format!(
                "--plot: {}: expected a file name ending in .svg or .png",
                path.display()
            )),
        }
    }
}

/// Collects the points of the chosen processors while a run digests its reads.
#[derive(Debug)]
pub struct PlotCollector {
    processors: Vec<u32>,
    /// Per chosen processor: its points and the time of its last served read of counter 0.
    series: Mutex<Vec<(Vec<Point>, Option<f64>)>>,
}

impl PlotCollector {
    /// A collector for `processors` (at most [`MAX_PLOTTED_PROCESSORS`], each below the
    /// scenario's count).
    ///
    /// # Errors
    /// A one-line message naming the processor or the count that is out of range.
    pub fn new(scenario: &Scenario, processors: Option<&[u32]>) -> Result<Arc<Self>, String> {
        let count = scenario.platform.processors;
        let processors: Vec<u32> = processors
            .map_or_else(|| (0..count.min(DEFAULT_PLOTTED_PROCESSORS)).collect(), <[u32]>::to_vec);
        if processors.is_empty() || processors.len() > MAX_PLOTTED_PROCESSORS {
            return Err(format!(
                "--plot-processors: expected 1..={MAX_PLOTTED_PROCESSORS} processors, found {}",
                processors.len()
            ));
        }
        if let Some(bad) = processors.iter().find(|index| **index >= count) {
            return Err(format!(
                "--plot-processors: processor {bad} does not exist (the scenario has {count}: 0..={})",
                count - 1
            ));
        }
        let mut seen = processors.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != processors.len() {
            return Err("--plot-processors: a processor is listed twice".to_owned());
        }
        let series = Mutex::new(vec![(Vec::new(), None); processors.len()]);
        Ok(Arc::new(Self { processors, series }))
    }

    /// Takes `read` if it is of a chosen processor's counter 0.
    pub fn observe(&self, read: &TracedRead) {
        if read.counter_index != 0 {
            return;
        }
        let Some(position) = self.processors.iter().position(|index| *index == read.processor)
        else {
            return;
        };
        let interval = read.interval;
        let point = Point {
            from_ms: None,
            at_ms: read.time_ms,
            measured_mhz: interval.and_then(|interval| interval.measured_mhz),
            true_mhz: interval.and_then(|interval| interval.true_mhz),
            served: read.served,
            faulted: read.faulted,
            discontinuity: interval.is_some_and(|interval| interval.discontinuity),
        };
        let mut series = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((points, last_served)) = series.get_mut(position) {
            points.push(Point { from_ms: interval.and(*last_served), ..point });
            if read.served {
                *last_served = Some(read.time_ms);
            }
        }
        drop(series);
    }

    /// An observer that feeds this collector and then `next` (if any).
    #[must_use]
    pub fn observer(self: &Arc<Self>, next: Option<ReadObserver>) -> ReadObserver {
        let collector = Arc::clone(self);
        ReadObserver(Arc::new(move |read: &TracedRead| {
            collector.observe(read);
            if let Some(next) = &next {
                (next.0)(read);
            }
        }))
    }

    /// Draws the plot of `scenario`'s run into `path` as `format`, in `view`; `nominal_mhz`
    /// is the FREQUENCY counter's rate the engine reported (what `% Processor Performance` is
    /// relative to); `shown` is the name messages give (the file `path` is renamed to: see
    /// [`crate::output`]).
    ///
    /// # Errors
    /// A one-line message when drawing or writing failed.
    pub fn write(
        &self,
        scenario: &Scenario,
        (view, nominal_mhz): (View, u32),
        format: Format,
        (path, shown): (&Path, &Path),
    ) -> Result<(), String> {
        let svg = self
            .svg(scenario, view, nominal_mhz)
            .map_err(|error| format!("--plot: cannot draw: {error}"))?;
        let written = match format {
            Format::Svg => std::fs::write(path, svg).map_err(|error| error.to_string()),
            Format::Png => rasterise(&svg, path),
        };
        written.map_err(|error| format!("--plot: {}: cannot write: {error}", shown.display()))
    }

    /// The plot as SVG text.
    fn svg(
        &self,
        scenario: &Scenario,
        view: View,
        nominal_mhz: u32,
    ) -> Result<String, Box<dyn std::error::Error>> {
        // The engine's rate when it reported one (measured % is ΔActual / ΔNominal); the
        // truth against the simulated processor's own nominal rate.
        let measured_nominal =
            f64::from(if nominal_mhz == 0 { scenario.platform.nominal_mhz } else { nominal_mhz });
        let true_nominal = f64::from(scenario.platform.nominal_mhz.max(1));
        let scale = Scale { view, measured_nominal, true_nominal };
        let series: Vec<Vec<Point>> = self
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(points, _)| points.iter().map(|point| scale.apply(*point)).collect())
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
        let rows = u32::try_from(series.len()).unwrap_or(1).max(1);
        let mut text = String::new();
        {
            let root = SVGBackend::with_string(&mut text, (WIDTH, HEADER + ROW * rows))
                .into_drawing_area();
            root.fill(&WHITE)?;
            let what = match view {
                View::Mhz => "measured (what Windows computes from each interval) vs true MHz",
                View::Percent => {
                    "% Processor Performance (measured over nominal, as perfmon shows it) vs true"
                }
            };
            let root = root.titled(
                &format!("{}: {what}", crate::text::escaped(&scenario.name)),
                ("sans-serif", 20),
            )?;
            let (legend_area, charts) = root.split_vertically(HEADER - TITLE);
            draw_legend(&legend_area, view, nominal)?;
            let areas = charts.split_evenly((series.len().max(1), 1));
            for (points, (area, index)) in
                series.iter().zip(areas.iter().zip(self.processors.iter()))
            {
                draw_processor(area, scenario, view, (*index, points), (nominal, top))?;
            }
            root.present()?;
        }
        Ok(text)
    }
}

/// The picture's width, px.
const WIDTH: u32 = 1000;
/// The title's height, px.
const TITLE: u32 = 36;
/// The title and the legend above the charts, px.
const HEADER: u32 = TITLE + 66;
/// One processor's chart, px.
const ROW: u32 = 230;

/// What a plot's vertical axis shows.
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
struct Scale {
    view: View,
    /// The rate the measured MHz were computed with (the engine's).
    measured_nominal: f64,
    /// The simulated processor's nominal MHz.
    true_nominal: f64,
}

impl Scale {
    fn apply(self, point: Point) -> Point {
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
    const fn nominal(self) -> f64 {
        match self.view {
            View::Mhz => self.true_nominal,
            View::Percent => 100.0,
        }
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The legend, above every chart (so it covers none), in three columns.
fn draw_legend(
    area: &Area<'_>,
    view: View,
    nominal: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let nominal = match view {
        View::Mhz => format!("nominal ({nominal:.0} MHz)"),
        View::Percent => "nominal (100 %)".to_owned(),
    };
    let entries: [(&str, Glyph); 8] = [
        ("true (the simulated processor)", Glyph::Truth),
        ("measured (from the PEP's counts)", Glyph::Measured),
        (&nominal, Glyph::Nominal),
        ("sleep (S3/S4: the counters stop)", Glyph::Sleep),
        ("counter discontinuity (reset, wrap, sleep, stop)", Glyph::Discontinuity),
        ("read refused (FALSE)", Glyph::Refused),
        ("MSR fault", Glyph::Fault),
        ("no line: idle, or across a discontinuity", Glyph::None),
    ];
    let column_width = i32::try_from(WIDTH).unwrap_or(1000) / 3;
    for (number, (label, glyph)) in entries.iter().enumerate() {
        let number = i32::try_from(number).unwrap_or(0);
        let (x, y) = (20 + column_width * (number % 3), 10 + 20 * (number / 3));
        glyph.draw(area, (x, y))?;
        area.draw(&Text::new(*label, (x + 30, y - 7), ("sans-serif", 13)))?;
    }
    area.draw(&PathElement::new(
        vec![(0, 68 - 4), (i32::try_from(WIDTH).unwrap_or(1000), 68 - 4)],
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
    Sleep,
    Discontinuity,
    Refused,
    Fault,
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
            Self::Sleep => {
                area.draw(&Rectangle::new([(x, y - 6), (x + 22, y + 6)], SLEEP.filled()))?;
                area.draw(&Rectangle::new([(x, y - 6), (x + 22, y + 6)], BLACK.mix(0.25)))?;
            }
            Self::Discontinuity => area.draw(&Cross::new((x + 11, y), 5, RED.stroke_width(2)))?,
            Self::Refused => area.draw(&TriangleMarker::new((x + 11, y), 5, MAGENTA.filled()))?,
            Self::Fault => area.draw(&Circle::new((x + 11, y), 4, RED.filled()))?,
            Self::None => {}
        }
        Ok(())
    }
}

/// The sleep band's colour.
const SLEEP: RGBAColor = RGBAColor(0, 0, 0, 0.1);

/// One processor's chart.
#[allow(clippy::cast_precision_loss)] // Times and frequencies for axes.
fn draw_processor(
    area: &Area<'_>,
    scenario: &Scenario,
    view: View,
    (index, points): (u32, &[Point]),
    (nominal, top): (f64, f64),
) -> Result<(), Box<dyn std::error::Error>> {
    let duration_ms = f64::from(scenario.pofx.duration_ms).max(1.0);
    let mut chart = ChartBuilder::on(area)
        .caption(format!("processor {index}"), ("sans-serif", 15))
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
    for (_, start_ms, resume_ms) in scenario.sleeps() {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(f64::from(start_ms), 0.0), (f64::from(resume_ms).min(duration_ms), top)],
            SLEEP.filled(),
        )))?;
    }
    chart.draw_series(std::iter::once(DashedPathElement::new(
        vec![(0.0, nominal), (duration_ms, nominal)],
        4,
        3,
        BLACK.mix(0.55),
    )))?;
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
    let jumps = points
        .iter()
        .filter(|point| point.discontinuity)
        .map(|point| Cross::new((point.at_ms, top * 0.94), 5, RED.stroke_width(2)));
    chart.draw_series(jumps)?;
    let refused = points
        .iter()
        .filter(|point| !point.served)
        .map(|point| TriangleMarker::new((point.at_ms, top * 0.05), 5, MAGENTA.filled()));
    chart.draw_series(refused)?;
    let faulted = points
        .iter()
        .filter(|point| point.faulted)
        .map(|point| Circle::new((point.at_ms, top * 0.12), 4, RED.filled()));
    chart.draw_series(faulted)?;
    Ok(())
}

/// Renders `svg` into a PNG file at `path`, with the system's fonts for its text.
fn rasterise(svg: &str, path: &Path) -> Result<(), String> {
    use resvg::{tiny_skia, usvg};
    let mut options = usvg::Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_system_fonts();
    // The SVG asks for "sans-serif": map it to a sans family the system has.
    let family = fonts
        .faces()
        .flat_map(|face| face.families.iter().map(|(name, _)| name.clone()))
        .find(|name| name.contains("Sans") && !name.contains("Mono"))
        .or_else(|| {
            fonts.faces().find_map(|face| face.families.first().map(|(name, _)| name.clone()))
        });
    if let Some(family) = family {
        fonts.set_sans_serif_family(family);
    }
    let tree = usvg::Tree::from_str(svg, &options).map_err(|error| error.to_string())?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| "the image has no pixels".to_owned())?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.save_png(path).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests;
