//! Unit tests of the parent module: what a reader of the picture relies on.

use super::*;
use crate::RunOptions;
use crate::pofx::TracedInterval;

/// Runs `scenario` with a collector for `processors` and draws its picture in `view`.
fn draw(
    scenario: &Scenario,
    processors: Option<&[u32]>,
    view: View,
) -> (Arc<PlotCollector>, Picture) {
    let collector = PlotCollector::new(scenario, processors).expect("a collector");
    let options =
        RunOptions { read_observer: Some(collector.observer(None)), ..RunOptions::default() };
    let report = crate::run_with(scenario, &options);
    let picture = collector.draw(scenario, &report, view).expect("a picture");
    (collector, picture)
}

fn builtin(name: &str) -> Scenario {
    crate::builtin::get(name).expect("a built-in scenario")
}

/// The SVG of built-in scenario `name` for `processors`, in `view`.
fn svg_of(name: &str, processors: Option<&[u32]>, view: View) -> String {
    draw(&builtin(name), processors, view).1.svg_with_cells()
}

/// Every `<text>` of `svg`: its x, y and content.
fn texts(svg: &str) -> Vec<(f64, f64, String)> {
    svg.split("<text ")
        .skip(1)
        .map(|element| {
            let element = &element[..element.find("</text>").expect("an end")];
            let (tag, content) = element.split_once('>').expect("a tag");
            let tag = format!(" {tag}");
            let attribute = |name: &str| -> f64 {
                let start = tag.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
                let value = &tag[start..];
                value[..value.find('"').expect("a closing quote")].parse().expect("a number")
            };
            (attribute("x"), attribute("y"), content.trim().to_owned())
        })
        .collect()
}

fn find<'a>(texts: &'a [(f64, f64, String)], content: &str) -> Vec<&'a (f64, f64, String)> {
    texts.iter().filter(|(_, _, text)| text == content).collect()
}

fn starting<'a>(texts: &'a [(f64, f64, String)], start: &str) -> Vec<&'a (f64, f64, String)> {
    texts.iter().filter(|(_, _, text)| text.starts_with(start)).collect()
}

/// A scenario of `processors` processors at 2400 MHz, 70 % busy, for `duration_ms`, with
/// `extra` TOML appended.
fn scenario(processors: u32, duration_ms: u32, extra: &str) -> Scenario {
    Scenario::from_toml_str(&format!(
        "name = \"t\"\n[platform]\nprocessors = {processors}\nnominal_mhz = 2000\n\
         [pofx]\nduration_ms = {duration_ms}\n\
         [[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 2400\nbusy_percent = 70\n{extra}"
    ))
    .expect("a valid scenario")
}

#[test]
fn the_legend_is_above_every_panel_and_panels_are_named_as_perfmon_names_them() {
    // 16 processors, the most the panels show.
    let all: Vec<u32> = (0..16).collect();
    let svg = svg_of("threaded", Some(&all), View::Mhz);
    let texts = texts(&svg);
    let labels = [
        "true (",
        "measured (",
        "nominal (",
        "counter discontinuity",
        "sleep (S3/S4",
        "not present (hot-removed, or before",
        "read refused correctly (",
        "MSR fault (the counter access",
        "error: ",
        "no line: idle",
    ];
    let legend: Vec<_> = texts
        .iter()
        .filter(|(_, _, text)| labels.iter().any(|label| text.starts_with(label)))
        .collect();
    assert_eq!(legend.len(), labels.len(), "{legend:?}");
    let lowest_legend = legend.iter().map(|(_, y, _)| *y).fold(0.0, f64::max);
    let first = find(&texts, "Processor Information(0,0) · cpu 0 · \\_SB.CPU0");
    assert_eq!(first.len(), 1, "{texts:?}");
    assert!(first[0].1 > lowest_legend + 20.0, "{lowest_legend} vs {first:?}");
    assert_eq!(starting(&texts, "Processor Information(0,15) · cpu 15 · ").len(), 1);
}

#[test]
fn panels_of_a_second_group_say_its_group_and_number() {
    let scenario = scenario(70, 60, "");
    let (_, picture) = draw(&scenario, Some(&[66]), View::Mhz);
    let texts = texts(&picture.svg);
    // Processor 66 is the third of group 1: perfmon's "1,2", the report's grp:nr 1:2.
    assert_eq!(starting(&texts, "Processor Information(1,2) · cpu 66 · ").len(), 1, "{texts:?}");
}

#[test]
fn the_last_x_label_is_inside_the_picture_and_the_unit_below_the_labels() {
    let svg = svg_of("resume-s3", Some(&[0]), View::Mhz);
    let texts = texts(&svg);
    // The panel: below its caption.
    let caption = starting(&texts, "Processor Information(0,0)")[0].1;
    let panel: Vec<_> = texts.iter().filter(|(_, y, _)| *y > caption).cloned().collect();
    // resume-s3 runs 1000 ms: the last label, centred on its tick, needs half its width.
    // Two labels read 1000: the y axis's (MHz) and the x axis's last, the rightmost.
    let mut last = find(&panel, "1000");
    last.sort_by(|one, other| one.0.total_cmp(&other.0));
    let last = &last[last.len() - 1..];
    assert!(last[0].0 <= f64::from(WIDTH) - 16.0, "clipped: {last:?}");
    let unit = find(&panel, "time since the run started (ms)");
    assert_eq!(unit.len(), 1);
    assert!(unit[0].1 >= last[0].1 + 16.0, "squeezed: {unit:?} under {last:?}");
    assert_eq!(find(&panel, "MHz").len(), 1);
}

#[test]
fn the_percent_view_is_measured_over_the_nominal_rate() {
    let scale =
        detail::Scale { view: View::Percent, measured_nominal: 2000.0, true_nominal: 2400.0 };
    let point = Point {
        from_ms: Some(0.0),
        at_ms: 15.0,
        measured_mhz: Some(2500.0),
        true_mhz: Some(3000.0),
        outcome: Outcome::Served,
        faulted: false,
        discontinuity: false,
    };
    let scaled = scale.apply(point);
    assert_eq!(scaled.measured_mhz, Some(125.0));
    assert_eq!(scaled.true_mhz, Some(125.0));
    assert!((scale.nominal() - 100.0).abs() < f64::EPSILON);
    let mhz = detail::Scale { view: View::Mhz, ..scale };
    assert_eq!(mhz.apply(point), point);
    // `single`: 2400 MHz on a 2000 MHz part, 120 % — as the report's `% perf` column.
    let svg = svg_of("single", None, View::Percent);
    let texts = texts(&svg);
    assert_eq!(find(&texts, "% Processor Performance").len(), 1);
    assert_eq!(find(&texts, "nominal (100 %)").len(), 1);
    assert!(svg.contains("then % Processor Performance vs true"), "the title names the view");
    assert_eq!(View::NAMES.map(View::from_name), [Some(View::Mhz), Some(View::Percent)]);
}

#[test]
fn the_summary_says_how_many_processors_the_panels_show() {
    let (_, picture) = draw(&scenario(17, 60, ""), None, View::Mhz);
    assert!(
        picture
            .svg
            .contains("8 of 17 processors shown in detail (--plot-processors chooses up to 16)"),
        "no caption"
    );
    let (_, picture) = draw(&scenario(4, 60, ""), None, View::Mhz);
    assert!(picture.svg.contains("all 4 processors shown in detail"));
    assert!(!picture.svg.contains(" of 4 processors shown"));
}

#[test]
fn the_overview_has_one_row_per_processor_and_bounded_bins() {
    // 2048 processors: one row each, every row at least one pixel tall.
    let scenario = scenario(2048, 60, "");
    let (collector, picture) = draw(&scenario, None, View::Mhz);
    // Reads at 0, 15, 30 and 45 ms: three intervals, three bins.
    assert_eq!(picture.cells.shape(), (2048, 3));
    assert!(overview::row_height(2048) >= 1);
    // 2400 MHz over the PEP's 2000: 120 %, the same colour in every row.
    let heat = collector.grid.heat(&Context::new(&scenario, &crate::run(&scenario)));
    assert!(heat.kinds.iter().all(|row| row[1] == heat.kinds[0][1]));
    assert!(matches!(heat.kinds[2047][1], overview::Kind::Percent(p) if (p - 120.0).abs() < 0.01));
    // The embedded image: a PNG as the cells, small for a uniform run.
    let svg = picture.svg_with_cells();
    assert_eq!(svg.matches("<image ").count(), 1);
    assert!(svg.len() < 400_000, "{} bytes", svg.len());
    // A long run: at most MAX_BINS bins, each a whole number of sample intervals.
    let long = Scenario::from_toml_str(
        "name = \"long\"\n[platform]\nprocessors = 1\nnominal_mhz = 2000\n\
         [pofx]\nduration_ms = 600000\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\n\
         frequency_mhz = 2000\nbusy_percent = 50\n",
    )
    .expect("a scenario");
    let grid = overview::Grid::new(&long);
    let (bins, bin_ms) = grid.shape();
    assert!(bins <= overview::MAX_BINS && bins * bin_ms >= 599_985, "{bins} × {bin_ms}");
    assert_eq!(bin_ms % long.pofx.sample_interval_ms, 0);
}

/// The colour of processor `row`'s cell at `ms` in `picture`.
fn cell(collector: &PlotCollector, picture: &Picture, row: usize, ms: f64) -> RGBColor {
    picture.cells.color(row, collector.grid.bin(ms)).expect("a cell")
}

#[test]
fn arm64_faults_are_amu_faults_and_refused_correctly() {
    // arm64: the AMU of processor 5 faults from 1100 to 1160 ms.
    let (collector, picture) = draw(&builtin("arm64"), None, View::Mhz);
    let svg = picture.svg_with_cells();
    assert!(svg.contains("AMU fault (the counter access faulted)"));
    assert!(svg.contains("AMU fault (read refused)"));
    assert!(!svg.contains("MSR"), "an ARM64 run names no MSR");
    assert_eq!(cell(&collector, &picture, 5, 1120.0), palette::FAULT);
    let x86 = svg_of("msr-fault", None, View::Mhz);
    assert!(x86.contains("MSR fault (the counter access faulted)") && !x86.contains("AMU"));
}

#[test]
fn correct_refusals_and_errors_have_their_own_colours() {
    // wrong-processor: reads of 0 and 1 on processor 3 at 250 ms, refused as they must be.
    let (collector, picture) = draw(&builtin("wrong-processor"), None, View::Mhz);
    assert_eq!(cell(&collector, &picture, 0, 250.0), palette::REFUSED);
    assert_eq!(cell(&collector, &picture, 2, 250.0), overview_color(&collector, &picture, 2));
    assert_ne!(palette::REFUSED, palette::ERROR);
    // What the PEP answered, judged as the checks judge it.
    let read = |served, faulted, foreign| TracedRead {
        time_ms: 15.0,
        processor: 0,
        counter_index: 0,
        nominal: 1,
        actual: 1,
        served,
        faulted,
        foreign,
        interval: None::<TracedInterval>,
    };
    assert_eq!(Outcome::of(&read(true, false, false)), Outcome::Served);
    assert_eq!(Outcome::of(&read(false, true, false)), Outcome::RefusedCorrectly);
    assert_eq!(Outcome::of(&read(false, false, true)), Outcome::RefusedCorrectly);
    assert_eq!(Outcome::of(&read(false, false, false)), Outcome::Error);
    assert_eq!(Outcome::of(&read(true, true, false)), Outcome::Error);
    assert_eq!(Outcome::of(&read(true, false, true)), Outcome::Error);
    // An error in the overview is red, whatever else the bin holds.
    let scenario = scenario(1, 60, "");
    let collector = PlotCollector::new(&scenario, None).expect("a collector");
    collector.observe(&TracedRead { time_ms: 30.0, ..read(false, false, false) });
    let heat = collector.grid.heat(&Context::new(&scenario, &crate::run(&scenario)));
    assert_eq!(heat.kinds[0][collector.grid.bin(30.0)], overview::Kind::Error);
}

/// The colour of processor `row`'s cells in steady state (the middle of the run).
fn overview_color(collector: &PlotCollector, picture: &Picture, row: usize) -> RGBColor {
    cell(collector, picture, row, 500.0)
}

#[test]
fn absences_and_sleeps_are_not_idle() {
    // hot-add: 6 arrives at 100 ms, 3 leaves at 400 ms.
    let (collector, picture) = draw(&builtin("hot-add"), None, View::Mhz);
    assert_eq!(cell(&collector, &picture, 6, 50.0), palette::ABSENT);
    assert_eq!(cell(&collector, &picture, 3, 700.0), palette::ABSENT);
    assert_ne!(cell(&collector, &picture, 3, 200.0), palette::ABSENT);
    let spans = absences(&builtin("hot-add"));
    assert_eq!(spans[3], vec![(400.0, 1000.0)]);
    assert_eq!(spans[6], vec![(0.0, 100.0), (600.0, 750.0)]);
    assert!(spans[0].is_empty());
    let svg = picture.svg_with_cells();
    let texts = texts(&svg);
    assert_eq!(find(&texts, "not present (hot-removed)").len(), 1, "the overview's legend");
    // 3 from 400 ms, 6 before 100 and from 600 to 750 ms, 7 before 250 ms.
    assert_eq!(find(&texts, "not present").len(), 4, "in the panels of 3, 6 and 7");
    // resume-s3 sleeps from 400 to 600 ms.
    let scenario = builtin("resume-s3");
    let (_, start, _) = scenario.sleeps()[0];
    let (collector, picture) = draw(&scenario, None, View::Mhz);
    assert_eq!(cell(&collector, &picture, 0, f64::from(start) + 60.0), palette::SLEEP);
    assert_ne!(palette::SLEEP, palette::IDLE);
}

#[test]
fn a_processor_without_counters_says_nothing_was_measured() {
    let (collector, picture) = draw(&builtin("no-counters"), None, View::Mhz);
    let texts = texts(&picture.svg);
    let panels = texts
        .iter()
        .filter(|(_, _, text)| {
            text.starts_with("no counters (") && text.ends_with("): nothing measured")
        })
        .count();
    assert_eq!(panels, 4, "{texts:?}");
    assert_eq!(find(&texts, "no counters: nothing measured").len(), 1, "the overview's legend");
    for row in 0..4 {
        assert_eq!(cell(&collector, &picture, row, 150.0), palette::NO_COUNTERS);
    }
}

#[test]
fn user_supplied_strings_are_escaped() {
    let mut ids: Vec<String> = (0..4).map(|index| format!("\"\\\\_SB.CPU{index}\"")).collect();
    ids[1] = "\"\\\\_SB.CPU1<&>\\u001b[2J\\r\"".to_owned();
    let scenario = Scenario::from_toml_str(&format!(
        "name = \"n<&>\"\n[platform]\nprocessors = 4\nnominal_mhz = 2000\n\
         device_ids = [{}]\n[config]\ndevice_id_patterns = [\"\\\\_SB.CPU#*\"]\n\
         [pofx]\nduration_ms = 60\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\n\
         frequency_mhz = 2000\nbusy_percent = 50\n",
        ids.join(", ")
    ))
    .expect("a scenario");
    let (_, picture) = draw(&scenario, None, View::Mhz);
    let svg = picture.svg_with_cells();
    assert!(!svg.chars().any(|c| c.is_control() && c != '\n'), "a raw control character");
    assert!(svg.contains("\\_SB.CPU1&lt;&amp;&gt;\\u{1b}[2J\\r"), "the id, escaped");
    assert!(svg.contains("n&lt;&amp;&gt;: every processor"), "the name, escaped");
    resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default()).expect("valid SVG");
    assert_eq!(shown("abcdef", 3), "abc…");
}
