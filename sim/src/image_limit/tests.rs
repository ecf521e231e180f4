//! [`MAX_IMAGE_CALLS`] and [`estimated_calls`]: the built-in scenarios stay under the limit,
//! and the estimate is the calls the image makes.

use super::{MAX_IMAGE_CALLS, boot_calls, check_call_limit, estimated_calls};
use crate::builtin;
use crate::scenario::Scenario;

/// `nested-reads` with `processors` processors (and its name changed).
fn nested_reads(processors: u32, arm64: bool) -> Scenario {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/nested-reads.toml"),
    )
    .expect("nested-reads.toml");
    let platform = if arm64 {
        format!("processors = {processors}\ncpu = \"arm64\"")
    } else {
        format!("processors = {processors}")
    };
    let text = text.replacen("processors = 4", &platform, 1).replacen(
        "name = \"nested-reads\"",
        &format!("name = \"nested-{processors}\""),
        1,
    );
    Scenario::from_toml_str(&text).expect("a valid scenario")
}

#[test]
fn every_builtin_scenario_is_under_the_image_call_limit() {
    for (name, scenario) in builtin::all() {
        let calls = estimated_calls(&scenario);
        assert!(calls <= MAX_IMAGE_CALLS, "{name}: about {calls} image calls");
        assert_eq!(check_call_limit(&scenario, name), Ok(()));
    }
}

/// The calls the image made, the entry points' `calls` in `image.stack` of `--json` (release
/// `ppm-sim`, x64 image): 4 465 for `validate nested-reads --pep image` (61 device
/// notifications, 4 403 processor notifications, `DriverEntry`; `sim/tests/image_call_limit.rs`
/// measures it again when the image is built) and 685 621 for the 640-processor file.
#[test]
fn the_estimate_of_nested_reads_is_the_calls_the_image_made() {
    for (scenario, made) in
        [(nested_reads(4, false), 4_465_u64), (nested_reads(640, false), 685_621)]
    {
        let estimate = estimated_calls(&scenario);
        let off = estimate.abs_diff(made) * 1000 / made;
        assert!(off <= 10, "{}: estimated {estimate}, made {made}", scenario.name);
    }
}

#[test]
fn nested_reads_passes_at_1000_arm64_processors_and_not_at_2048() {
    let arm64 = nested_reads(1000, true);
    assert!(arm64.platform.cpu.is_arm64());
    assert!(estimated_calls(&arm64) <= MAX_IMAGE_CALLS, "{}", estimated_calls(&arm64));
    let x64 = nested_reads(2048, false);
    assert_eq!(
        check_call_limit(&x64, "nested-2048.toml"),
        Err(format!(
            "nested-2048.toml: about {} image calls, more than the 1200000 a run on the image \
             may make (about 30 s): simulate fewer processors, raise sample_interval_ms, \
             shorten duration_ms, turn nested_notifications off or run it with --pep engine",
            estimated_calls(&x64)
        ))
    );
}

/// Each outer read with nested notifications on one processor is 1 + 3 windows × 3
/// notifications (no foreign handle); with two or more, 1 + 3 × 4; without them, 1.
#[test]
fn a_nested_read_is_ten_calls_alone_and_thirteen_beside_another_processor() {
    for (name, processors, per_read) in [("single", 1, 10), ("resume-idle", 2, 13)] {
        let mut scenario = builtin::get(name).expect("a built-in scenario");
        assert_eq!(scenario.platform.processors, processors);
        let boot = boot_calls(processors);
        assert_eq!(estimated_calls(&scenario), scenario.expected_reads() + boot);
        scenario.pofx.nested_notifications = true;
        assert_eq!(estimated_calls(&scenario), scenario.expected_reads() * per_read + boot);
    }
}
