//! `ppm-sim run --plot`: measured against true frequency, per processor, over the run.
//!
//! For each interval of the FREQUENCY counter, the frequency Windows computes from it against
//! the simulated truth of that interval, with counter discontinuities, faulted and refused
//! reads and sleeps marked. Drawn with `plotters` as SVG; PNG is that SVG rasterised with
//! `resvg` (text in the system's fonts).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

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

    /// Draws the plot of `scenario`'s run into `path` as `format`; `shown` is the name
    /// messages give (the file `path` is renamed to: see [`crate::output`]).
    ///
    /// # Errors
    /// A one-line message when drawing or writing failed.
    pub fn write(
        &self,
        scenario: &Scenario,
        format: Format,
        path: &Path,
        shown: &Path,
    ) -> Result<(), String> {
        let svg = self.svg(scenario).map_err(|error| format!("--plot: cannot draw: {error}"))?;
        let written = match format {
            Format::Svg => std::fs::write(path, svg).map_err(|error| error.to_string()),
            Format::Png => rasterise(&svg, path),
        };
        written.map_err(|error| format!("--plot: {}: cannot write: {error}", shown.display()))
    }

    /// The plot as SVG text.
    fn svg(&self, scenario: &Scenario) -> Result<String, Box<dyn std::error::Error>> {
        let series: Vec<Vec<Point>> = self
            .series
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(points, _)| points.clone())
            .collect();
        let top = series
            .iter()
            .flatten()
            .flat_map(|point| [point.measured_mhz, point.true_mhz])
            .flatten()
            .fold(f64::from(scenario.platform.nominal_mhz), f64::max)
            * 1.5;
        let rows = u32::try_from(series.len()).unwrap_or(1).max(1);
        let mut text = String::new();
        {
            let root =
                SVGBackend::with_string(&mut text, (1000, 80 + 220 * rows)).into_drawing_area();
            root.fill(&WHITE)?;
            let root = root.titled(
                &format!(
                    "{}: measured (what Windows computes from each interval) vs true MHz",
                    scenario.name
                ),
                ("sans-serif", 20),
            )?;
            let areas = root.split_evenly((series.len().max(1), 1));
            for (row, (points, (area, index))) in
                series.iter().zip(areas.iter().zip(self.processors.iter())).enumerate()
            {
                draw_processor(area, scenario, (*index, points), top, row == 0)?;
            }
            root.present()?;
        }
        Ok(text)
    }
}

/// One processor's chart; the first carries the legend.
#[allow(clippy::cast_precision_loss)] // Times and frequencies for axes.
fn draw_processor(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    scenario: &Scenario,
    (index, points): (u32, &[Point]),
    top: f64,
    legend: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let duration_ms = f64::from(scenario.pofx.duration_ms).max(1.0);
    let mut chart = ChartBuilder::on(area)
        .caption(format!("processor {index}"), ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..duration_ms, 0.0..top)?;
    chart
        .configure_mesh()
        .x_desc("ms")
        .y_desc("MHz")
        .x_label_formatter(&|ms| format!("{ms:.0}"))
        .y_label_formatter(&|mhz| format!("{mhz:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    for (_, start_ms, resume_ms) in scenario.sleeps() {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(f64::from(start_ms), 0.0), (f64::from(resume_ms), top)],
            BLACK.mix(0.08).filled(),
        )))?;
    }
    // Across a discontinuity (a sleep, a reset) there is no one truth to draw.
    let truth = points.iter().filter(|point| !point.discontinuity).filter_map(|point| {
        Some(PathElement::new(
            vec![(point.from_ms?, point.true_mhz?), (point.at_ms, point.true_mhz?)],
            GREEN.mix(0.45).stroke_width(6),
        ))
    });
    chart.draw_series(truth)?.label("true").legend(|(x, y)| {
        PathElement::new(vec![(x, y), (x + 20, y)], GREEN.mix(0.45).stroke_width(6))
    });
    let measured = points.iter().filter_map(|point| {
        Some(PathElement::new(
            vec![(point.from_ms?, point.measured_mhz?), (point.at_ms, point.measured_mhz?)],
            BLUE.stroke_width(2),
        ))
    });
    chart
        .draw_series(measured)?
        .label("measured")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    let jumps = points
        .iter()
        .filter(|point| point.discontinuity)
        .map(|point| Cross::new((point.at_ms, top * 0.95), 5, RED.stroke_width(2)));
    chart
        .draw_series(jumps)?
        .label("counter discontinuity (reset, wrap, sleep, stop)")
        .legend(|(x, y)| Cross::new((x + 10, y), 5, RED.stroke_width(2)));
    let refused = points
        .iter()
        .filter(|point| !point.served)
        .map(|point| TriangleMarker::new((point.at_ms, top * 0.05), 5, MAGENTA.filled()));
    chart
        .draw_series(refused)?
        .label("read refused (FALSE)")
        .legend(|(x, y)| TriangleMarker::new((x + 10, y), 5, MAGENTA.filled()));
    let faulted = points
        .iter()
        .filter(|point| point.faulted)
        .map(|point| Circle::new((point.at_ms, top * 0.1), 4, RED.filled()));
    chart
        .draw_series(faulted)?
        .label("MSR fault")
        .legend(|(x, y)| Circle::new((x + 10, y), 4, RED.filled()));
    // One legend, in the first chart's headroom.
    if legend {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
    }
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
