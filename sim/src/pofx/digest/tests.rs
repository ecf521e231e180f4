//! Unit tests of the parent module.

use super::*;

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
