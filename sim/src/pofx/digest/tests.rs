//! Unit tests of the parent module.

use super::*;

#[test]
fn findings_keep_the_first_three_in_order_and_count_the_rest() {
    let mut first = Findings::new();
    first.push("a".to_owned());
    first.push_many("b", 4);
    assert_eq!(first.kept(), ["a", "b", "b"]);
    assert_eq!(first.len(), 5);
    let mut described = 0;
    first.push_with(|| {
        described += 1;
        "c".to_owned()
    });
    assert_eq!(described, 0, "a finding past the first three is counted, not described");
    let mut all = Findings::new();
    all.push("x".to_owned());
    all.absorb(&first, |finding| format!("1: {finding}"));
    assert_eq!(all.kept(), ["x", "1: a", "1: b"]);
    assert_eq!(all.len(), 7);
    assert!(!all.is_empty() && Findings::new().is_empty());
}

#[test]
fn a_long_run_holds_one_sample_of_reads_per_processor() {
    let text = "name = \"long\"\n[platform]\nprocessors = 3\nnominal_mhz = 2000\n[config]\nperformance_counter_view = true\n[pofx]\nduration_ms = 20000\nsample_interval_ms = 10\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 2600\nbusy_percent = 70\n";
    let scenario = Scenario::from_toml_str(text).expect("valid");
    let output = crate::run_detailed(&scenario, &crate::RunOptions::default());
    assert!(output.report.passed);
    for record in &output.observations.processors {
        let counters = record.described_counters().len();
        assert_eq!(counters, 2);
        // 2001 samples of two counters, all digested; two reads held.
        assert_eq!(record.digest.reads, 2001 * counters);
        assert_eq!(record.digest.held_reads(), counters, "processor {}", record.index);
    }
}
