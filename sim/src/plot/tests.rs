//! Unit tests of the parent module: what a reader of the picture relies on.

use super::*;
use crate::RunOptions;

/// The SVG of built-in scenario `name` for `processors`, in `view`.
fn svg_of(name: &str, processors: Option<&[u32]>, view: View) -> String {
    let scenario = crate::builtin::get(name).expect("a built-in scenario");
    let collector = PlotCollector::new(&scenario, processors).expect("a collector");
    let options =
        RunOptions { read_observer: Some(collector.observer(None)), ..RunOptions::default() };
    let report = crate::run_with(&scenario, &options);
    collector.svg(&scenario, view, report.engine.nominal_mhz).expect("an SVG")
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

#[test]
fn the_legend_is_above_every_chart_and_names_the_sleep_band() {
    // 16 processors, the most a plot shows; the legend of one chart used to cover its line.
    let all: Vec<u32> = (0..16).collect();
    let svg = svg_of("threaded", Some(&all), View::Mhz);
    let texts = texts(&svg);
    let legend: Vec<_> = texts
        .iter()
        .filter(|(_, _, text)| {
            [
                "true (",
                "measured (",
                "nominal (",
                "sleep (",
                "counter discontinuity",
                "read refused",
                "MSR fault",
            ]
            .iter()
            .any(|label| text.starts_with(label))
        })
        .collect();
    assert_eq!(legend.len(), 7, "{legend:?}");
    assert!(legend.iter().any(|(_, _, text)| text.starts_with("sleep (S3/S4")), "{legend:?}");
    let lowest_legend = legend.iter().map(|(_, y, _)| *y).fold(0.0, f64::max);
    let first_chart = find(&texts, "processor 0");
    assert_eq!(first_chart.len(), 1);
    assert!(first_chart[0].1 > lowest_legend + 20.0, "{lowest_legend} vs {first_chart:?}");
    assert!(find(&texts, "processor 15").len() == 1);
}

#[test]
fn the_last_x_label_is_inside_the_picture_and_the_unit_below_the_labels() {
    let svg = svg_of("resume-s3", Some(&[0]), View::Mhz);
    let texts = texts(&svg);
    // resume-s3 runs 1000 ms: the last label, centred on its tick, needs half its width.
    // Two labels read 1000: the y axis's (MHz) and the x axis's last, the rightmost.
    let mut last = find(&texts, "1000");
    last.sort_by(|one, other| one.0.total_cmp(&other.0));
    let last = &last[last.len() - 1..];
    assert!(last[0].0 <= f64::from(WIDTH) - 16.0, "clipped: {last:?}");
    let unit = find(&texts, "time since the run started (ms)");
    assert_eq!(unit.len(), 1);
    assert!(unit[0].1 >= last[0].1 + 16.0, "squeezed: {unit:?} under {last:?}");
    assert_eq!(find(&texts, "MHz").len(), 1);
}

#[test]
fn the_percent_view_is_measured_over_the_nominal_rate() {
    let scale = Scale { view: View::Percent, measured_nominal: 2000.0, true_nominal: 2400.0 };
    let point = Point {
        from_ms: Some(0.0),
        at_ms: 15.0,
        measured_mhz: Some(2500.0),
        true_mhz: Some(3000.0),
        served: true,
        faulted: false,
        discontinuity: false,
    };
    let scaled = scale.apply(point);
    assert_eq!(scaled.measured_mhz, Some(125.0));
    assert_eq!(scaled.true_mhz, Some(125.0));
    assert!((scale.nominal() - 100.0).abs() < f64::EPSILON);
    let mhz = Scale { view: View::Mhz, ..scale };
    assert_eq!(mhz.apply(point), point);
    // `single`: 2400 MHz on a 2000 MHz part, 120 % — as the report's `% perf` column.
    let svg = svg_of("single", None, View::Percent);
    let texts = texts(&svg);
    assert_eq!(find(&texts, "% Processor Performance").len(), 1);
    assert_eq!(find(&texts, "nominal (100 %)").len(), 1);
    assert!(svg.contains("single: % Processor Performance"), "the title names the view");
    assert_eq!(View::NAMES.map(View::from_name), [Some(View::Mhz), Some(View::Percent)]);
}
