//! Unit tests of crate-private helpers. The engine's behaviour through its C callbacks is
//! tested from `engine/tests/` (`callbacks.rs`, `arm64.rs`, ...), through `ppm-caller`.

use crate::counters::max_actual_per_reference;
use crate::perf::PerfCapabilities;

#[test]
fn the_turbo_ratio_bound_has_a_floor() {
    // HWP highest 40 / guaranteed 20: at most 2 + 1 = 3, raised to the floor of 4.
    assert_eq!(
        max_actual_per_reference(&PerfCapabilities {
            highest: 40,
            nominal: 20,
            lowest_nonlinear: 8,
            lowest: 4
        }),
        4
    );
    assert_eq!(
        max_actual_per_reference(&PerfCapabilities {
            highest: 100,
            nominal: 20,
            lowest_nonlinear: 8,
            lowest: 4
        }),
        6
    );
}
