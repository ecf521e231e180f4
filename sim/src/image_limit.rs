//! The image call limit: the calls a run on the image (`--pep image`) will make, estimated
//! before its runner starts, and [`MAX_IMAGE_CALLS`], which bounds them (docs/image-backend.md,
//! "Limits").

use crate::pofx::{UNMASKED_WINDOWS_PER_READ, notifications_per_window};
use crate::scenario::Scenario;

/// The most image calls a run on the image may make ([`estimated_calls`], before it starts).
///
/// Each call is a round trip to the runner and its emulated code: 17.7–18.2 µs a call on
/// the 2-core VM (release `ppm-sim`, the spinning handoff) for `nested-reads` at 640
/// processors (689 000 calls, 12.5 s) and at 1000 processors on ARM64 (1.08 M calls, 18.9 s);
/// 24.5 µs at 2048 processors (2.2 M calls, 54 s). So 1.2 M calls take about 22 s at the first
/// rate and 29.4 s at the slowest rate measured: every file within the limits runs in under
/// 30 s, and every built-in scenario (at most 86 000 calls, `big-2048`) and `nested-reads` at
/// 1000 processors pass.
pub const MAX_IMAGE_CALLS: u64 = 1_200_000;

/// The image calls of a run that are not reads, measured over the built-in scenarios.
///
/// `DriverEntry`, the device notifications (about 49 and 3 per processor) and the processor
/// notifications around the reads (about 110 and 8 per processor).
#[must_use]
pub fn boot_calls(processors: u32) -> u64 {
    160 + 11 * u64::from(processors)
}

/// The image calls a run of `scenario` makes, estimated before it starts.
///
/// Its reads ([`Scenario::expected_reads`](Scenario::expected_reads)), each
/// with the nested notifications of its unmasked interrupt windows when `[pofx]
/// nested_notifications` is on (13 calls per read with a second processor), plus
/// [`boot_calls`].
#[must_use]
pub fn estimated_calls(scenario: &Scenario) -> u64 {
    let processors = scenario.platform.processors;
    let per_read = if scenario.pofx.nested_notifications {
        1 + UNMASKED_WINDOWS_PER_READ * notifications_per_window(processors > 1)
    } else {
        1
    };
    scenario.expected_reads().saturating_mul(per_read).saturating_add(boot_calls(processors))
}

/// Refuses a run of `scenario` (`name`: its file) on the image over [`MAX_IMAGE_CALLS`] calls.
///
/// Checked before a runner starts.
///
/// # Errors
/// One line naming `name`, the estimate, the limit and what to change.
pub fn check_call_limit(scenario: &Scenario, name: &str) -> Result<(), String> {
    let calls = estimated_calls(scenario);
    if calls <= MAX_IMAGE_CALLS {
        return Ok(());
    }
    Err(format!(
        "{name}: about {calls} image calls, more than the {MAX_IMAGE_CALLS} a run on the image \
         may make (about 30 s): simulate fewer processors, raise sample_interval_ms, shorten \
         duration_ms, turn nested_notifications off or run it with --pep engine"
    ))
}

#[cfg(test)]
mod tests;
