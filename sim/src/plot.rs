//! `ppm-sim run --plot`: every processor at a glance, then measured against true frequency for
//! the chosen ones.
//!
//! The picture has two parts, under one title and a line that says what is shown:
//!
//! - **The overview** (`overview`): one row per processor (all of them, 1 to 2048), time
//!   across, each cell the `% Processor Performance` Windows shows for that time (the measured
//!   rate over the PEP's nominal rate, as the report's `% perf`), on a colour scale; cells where
//!   nothing can be measured say why in their own colour — idle, asleep, not present
//!   (hot-removed or not yet hot-added), no counters — and reads refused correctly, faults and
//!   errors are marked over the heat. At most `overview::MAX_BINS` time bins (a whole number
//!   of sample intervals each) and at least one pixel row per processor; the SVG carries the
//!   cells as one embedded PNG image, so its size and the time it takes to open stay small at
//!   2048 processors.
//! - **The detail panels** (`detail`): for each chosen processor (at most
//!   [`MAX_PLOTTED_PROCESSORS`], default the first [`DEFAULT_PLOTTED_PROCESSORS`]; the line
//!   above says "8 of 17 processors shown"), the frequency Windows computes from each interval
//!   of the FREQUENCY counter (blue) against the simulated truth of that interval (green), the
//!   nominal rate dashed, sleeps and absences shaded, counter discontinuities crossed, reads
//!   refused correctly, faults and errors marked each in its own colour. Panels are named as
//!   perfmon names the processor (`Processor Information(0,3)`, the report's `grp:nr` 0:3),
//!   with its index and device id; a processor the PEP gave no counters says so.
//!
//! `--plot-view percent` ([`View::Percent`]) shows `% Processor Performance` in the panels
//! instead of MHz, what perfmon shows: the measured rate over the engine's nominal rate
//! (`ΔActual / ΔNominal`, in %), against the truth over the simulated processor's nominal rate
//! — the two differ when the engine's nominal rate is wrong.
//!
//! A read is judged as the checks judge it (`Outcome`): refusing a read whose counter access
//! faulted, or a read made on another processor than its handle's, is correct; refusing a read
//! of working counters, or serving a faulted or foreign one, is an error.
//!
//! Drawn with `plotters` as SVG; PNG is that SVG rasterised with `resvg` (text in the system's
//! fonts), the overview's cells drawn into it pixel for pixel. Every user-supplied string (the
//! scenario's name, device ids) passes through `shown` before it is drawn.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use plotters::prelude::*;

use crate::pofx::{ReadObserver, TracedRead};
use crate::report::Report;
use crate::scenario::{CpuKind, EventKind, ProcessorSet, Scenario};

mod detail;
mod overview;

pub use detail::View;
use detail::{Point, Series};

/// The colours every part of the picture shares.
mod palette {
    use plotters::style::RGBColor;

    /// The system sleeps.
    pub const SLEEP: RGBColor = RGBColor(0xc6, 0xdb, 0xef);
    /// The processor is not present (hot-removed, or not yet hot-added).
    pub const ABSENT: RGBColor = RGBColor(0x8c, 0x8c, 0x8c);
    /// A read refused correctly.
    pub const REFUSED: RGBColor = RGBColor(0xd9, 0x4f, 0xc1);
    /// A counter access faulted.
    pub const FAULT: RGBColor = RGBColor(0xff, 0x7f, 0x00);
    /// An error: a working read refused, a faulted or foreign one served.
    pub const ERROR: RGBColor = RGBColor(0xe4, 0x1a, 0x1c);
    /// No time in C0: nothing to measure.
    pub const IDLE: RGBColor = RGBColor(0xdc, 0xdc, 0xdc);
    /// The PEP gave the processor no counters, or declined it: nothing measured.
    pub const NO_COUNTERS: RGBColor = RGBColor(0xd8, 0xc3, 0xa5);
}
use overview::Grid;

/// The most processors the detail panels show.
pub const MAX_PLOTTED_PROCESSORS: usize = 16;
/// How many processors the detail panels show when none are chosen: the first ones.
pub const DEFAULT_PLOTTED_PROCESSORS: u32 = 8;

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

/// How the PEP answered a read, judged as the checks judge it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Served on its own processor with working counters.
    Served,
    /// Refused, as it must be: its counter access faulted, or it was made on another
    /// processor than its handle's.
    RefusedCorrectly,
    /// Refused with working counters on its own processor, or served although its counter
    /// access faulted or it was made on another processor.
    Error,
}

impl Outcome {
    const fn of(read: &TracedRead) -> Self {
        match (read.served, read.faulted || read.foreign) {
            (true, false) => Self::Served,
            (false, true) => Self::RefusedCorrectly,
            _ => Self::Error,
        }
    }
}

/// Collects, while a run digests its reads, every processor's overview cells and the chosen
/// processors' points.
#[derive(Debug)]
pub struct PlotCollector {
    /// The processors of the detail panels.
    processors: Vec<u32>,
    /// The processors' count in the scenario.
    count: u32,
    /// Per chosen processor: its points.
    series: Vec<Mutex<Series>>,
    /// Every processor's overview cells.
    grid: Grid,
}

impl PlotCollector {
    /// A collector for `scenario` whose detail panels show `processors` (at most
    /// [`MAX_PLOTTED_PROCESSORS`], each below the scenario's count; default the first
    /// [`DEFAULT_PLOTTED_PROCESSORS`]).
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
        let series = processors.iter().map(|_| Mutex::new(Series::default())).collect();
        Ok(Arc::new(Self { processors, count, series, grid: Grid::new(scenario) }))
    }

    /// Takes `read` into its processor's overview row and, when it is of a chosen processor's
    /// counter 0, into its panel.
    pub fn observe(&self, read: &TracedRead) {
        let outcome = Outcome::of(read);
        self.grid.observe(read, outcome);
        if read.counter_index != 0 {
            return;
        }
        let Some(position) = self.processors.iter().position(|index| *index == read.processor)
        else {
            return;
        };
        if let Some(series) = self.series.get(position) {
            series.lock().unwrap_or_else(PoisonError::into_inner).push(read, outcome);
        }
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

    /// Draws the plot of `scenario`'s run, whose report is `report`, into `path` as `format`,
    /// its panels in `view`; `shown` is the name messages give (the file `path` is renamed
    /// to: see [`crate::output`]).
    ///
    /// # Errors
    /// A one-line message when drawing or writing failed.
    pub fn write(
        &self,
        (scenario, report): (&Scenario, &Report),
        view: View,
        format: Format,
        (path, shown): (&Path, &Path),
    ) -> Result<(), String> {
        let picture = self
            .draw(scenario, report, view)
            .map_err(|error| format!("--plot: cannot draw: {error}"))?;
        let written = match format {
            Format::Svg => {
                std::fs::write(path, picture.svg_with_cells()).map_err(|error| error.to_string())
            }
            Format::Png => picture.rasterise(path),
        };
        written.map_err(|error| format!("--plot: {}: cannot write: {error}", shown.display()))
    }

    /// The picture: its SVG text without the overview's cells, and those cells.
    fn draw(
        &self,
        scenario: &Scenario,
        report: &Report,
        view: View,
    ) -> Result<Picture, Box<dyn std::error::Error>> {
        let context = Context::new(scenario, report);
        let heat = self.grid.heat(&context);
        let series: Vec<Vec<Point>> = self
            .series
            .iter()
            .map(|series| series.lock().unwrap_or_else(PoisonError::into_inner).points().to_vec())
            .collect();
        let panels = u32::try_from(series.len()).unwrap_or(1).max(1);
        let overview_height = overview::height(self.count);
        let height = TITLE + SUMMARY + overview_height + detail::HEADER + detail::ROW * panels;
        let mut text = String::new();
        let cells;
        {
            let root = SVGBackend::with_string(&mut text, (WIDTH, height)).into_drawing_area();
            root.fill(&WHITE)?;
            let what = match view {
                View::Mhz => "every processor's % performance, then measured vs true MHz",
                View::Percent => {
                    "every processor's % performance, then % Processor Performance vs true"
                }
            };
            let root = root.titled(
                &format!("{}: {what}", shown(&scenario.name, MAX_NAME_SHOWN)),
                ("sans-serif", 20),
            )?;
            let (summary, rest) = root.split_vertically(SUMMARY);
            summary.draw(&Text::new(
                self.summary(&context),
                (20, 2),
                ("sans-serif", 14).into_font().color(&BLACK.mix(0.8)),
            ))?;
            let (overview_area, panels_area) = rest.split_vertically(overview_height);
            cells = overview::draw(&overview_area, &context, &heat)?;
            detail::draw(&panels_area, &context, view, (&self.processors, &series))?;
            root.present()?;
        }
        Ok(Picture { svg: text, cells })
    }

    /// The line under the title: the machine, and how many processors the panels show.
    fn summary(&self, context: &Context<'_>) -> String {
        let platform = &context.scenario.platform;
        let shown = self.processors.len();
        let count = self.count;
        let detail = if usize::try_from(count).is_ok_and(|count| count == shown) {
            format!("all {count} processor{} shown in detail", crate::report::plural(count))
        } else {
            format!(
                "{shown} of {count} processors shown in detail (--plot-processors chooses up to {MAX_PLOTTED_PROCESSORS})"
            )
        };
        format!(
            "{count} {} processor{} ({}, nominal {} MHz); overview: every processor; {detail}",
            if context.arm64 { "ARM64" } else { "x86-64" },
            crate::report::plural(count),
            platform.cpu.name(),
            platform.nominal_mhz
        )
    }
}

/// A drawn plot: SVG text and the overview's cells, placed at a pixel rectangle.
struct Picture {
    svg: String,
    cells: overview::Cells,
}

impl Picture {
    /// The SVG with the overview's cells embedded as one PNG image.
    fn svg_with_cells(&self) -> String {
        let end = self.svg.rfind("</svg>").unwrap_or(self.svg.len());
        let mut svg = String::with_capacity(self.svg.len() + 4096);
        svg.push_str(&self.svg[..end]);
        svg.push_str(&self.cells.svg_image());
        svg.push_str(&self.svg[end..]);
        svg
    }

    /// Renders the picture into a PNG file at `path`, with the system's fonts for its text.
    fn rasterise(&self, path: &Path) -> Result<(), String> {
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
        let tree = usvg::Tree::from_str(&self.svg, &options).map_err(|error| error.to_string())?;
        let size = tree.size().to_int_size();
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
            .ok_or_else(|| "the image has no pixels".to_owned())?;
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        self.cells.draw_into(&mut pixmap);
        pixmap.save_png(path).map_err(|error| error.to_string())
    }
}

/// What every part of the picture needs to know of the run.
struct Context<'a> {
    scenario: &'a Scenario,
    report: &'a Report,
    /// Whether the processors are ARM64 (faults are the AMU's, not an MSR's).
    arm64: bool,
    /// The rate `% Processor Performance` is relative to: the PEP's nominal rate when it
    /// reported one, else the simulated processor's.
    perf_nominal_mhz: f64,
    /// The sleeps: (start, resume) ms.
    sleeps: Vec<(f64, f64)>,
    /// Per processor: the spans it is not present (before its hot-add, after a hot-remove),
    /// ms.
    absences: Vec<Vec<(f64, f64)>>,
}

impl<'a> Context<'a> {
    fn new(scenario: &'a Scenario, report: &'a Report) -> Self {
        let nominal = if report.engine.nominal_mhz == 0 {
            scenario.platform.nominal_mhz
        } else {
            report.engine.nominal_mhz
        };
        Self {
            scenario,
            report,
            arm64: scenario.platform.cpu == CpuKind::Arm64,
            perf_nominal_mhz: f64::from(nominal.max(1)),
            sleeps: scenario
                .sleeps()
                .into_iter()
                .map(|(_, start, resume)| (f64::from(start), f64::from(resume)))
                .collect(),
            absences: absences(scenario),
        }
    }

    fn duration_ms(&self) -> f64 {
        f64::from(self.scenario.pofx.duration_ms).max(1.0)
    }

    /// What a fault is called on this machine.
    const fn fault_name(&self) -> &'static str {
        if self.arm64 { "AMU fault" } else { "MSR fault" }
    }

    /// Processor `index`'s line of the report.
    fn processor(&self, index: u32) -> Option<&crate::report::ProcessorReport> {
        self.report
            .processors
            .get(usize::try_from(index).ok()?)
            .filter(|processor| processor.index == index)
            .or_else(|| self.report.processors.iter().find(|processor| processor.index == index))
    }

    /// Why processor `index` has nothing measured whatever it ran, if so: the PEP declined it
    /// or gave it no counters.
    fn unmeasured(&self, index: u32) -> Option<String> {
        let processor = self.processor(index)?;
        if !processor.accepted {
            Some("declined by the PEP: nothing measured".to_owned())
        } else if processor.counters == 0 {
            Some(self.report.engine.no_counters_reason.as_ref().map_or_else(
                || "no counters: nothing measured".to_owned(),
                |reason| format!("no counters ({}): nothing measured", shown(reason, 48)),
            ))
        } else {
            None
        }
    }

    /// Processor `index` as perfmon names it, with the report's index and its device id:
    /// `Processor Information(0,3) · cpu 3 · \_SB.CPU3`.
    fn name(&self, index: u32) -> String {
        self.processor(index).map_or_else(
            || format!("cpu {index}"),
            |processor| {
                format!(
                    "Processor Information({},{}) · cpu {} · {}",
                    processor.group,
                    processor.number,
                    processor.index,
                    shown(&processor.device_id, MAX_ID_SHOWN)
                )
            },
        )
    }

    /// Processor `index`'s perfmon instance name, `0,3`.
    fn instance(&self, index: u32) -> String {
        self.processor(index).map_or_else(
            || index.to_string(),
            |processor| format!("{},{}", processor.group, processor.number),
        )
    }
}

/// Per processor: the spans it is not present, ms, from the `hot-add`/`hot-remove` events.
fn absences(scenario: &Scenario) -> Vec<Vec<(f64, f64)>> {
    let count = usize::try_from(scenario.platform.processors).unwrap_or(0);
    let mut changes: Vec<Vec<(u32, usize, bool)>> = vec![Vec::new(); count];
    for (number, event) in scenario.events.iter().enumerate() {
        let added = match event.kind {
            EventKind::HotAdd => true,
            EventKind::HotRemove => false,
            _ => continue,
        };
        if let ProcessorSet::List(list) = &event.processors {
            for index in list {
                if let Some(changes) =
                    usize::try_from(*index).ok().and_then(|index| changes.get_mut(index))
                {
                    changes.push((event.at_ms, number, added));
                }
            }
        }
    }
    let end = f64::from(scenario.pofx.duration_ms);
    changes
        .into_iter()
        .map(|mut changes| {
            changes.sort_unstable();
            let mut spans = Vec::new();
            // Absent from the start when the first change adds the processor.
            let mut absent_since = changes.first().filter(|change| change.2).map(|_| 0.0);
            for (at_ms, _, added) in changes {
                match (added, absent_since) {
                    (true, Some(since)) => {
                        spans.push((since, f64::from(at_ms)));
                        absent_since = None;
                    }
                    (false, None) => absent_since = Some(f64::from(at_ms)),
                    _ => {}
                }
            }
            if let Some(since) = absent_since {
                spans.push((since, end));
            }
            spans
        })
        .collect()
}

/// The most characters of a device id a label shows.
const MAX_ID_SHOWN: usize = 40;
/// The most characters of the scenario's name the title shows.
const MAX_NAME_SHOWN: usize = 64;

/// A user-supplied string as the plot draws it: at most `limit` characters of it, then `…`,
/// escaped by [`crate::text::escaped`] (control characters as `\u{1b}`, `\r`: no viewer or
/// terminal sees them raw and the SVG stays well-formed XML; the SVG backend escapes `<`, `>`,
/// `&` and quotes).
fn shown(text: &str, limit: usize) -> String {
    let (mut out, cut) = crate::text::escaped_head(text, limit);
    if cut {
        out.push('…');
    }
    out
}

/// The picture's width, px.
const WIDTH: u32 = 1000;
/// The title's height, px.
const TITLE: u32 = 36;
/// The line under the title, px.
const SUMMARY: u32 = 24;

#[cfg(test)]
mod tests;
