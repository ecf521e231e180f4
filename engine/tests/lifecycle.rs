//! Sequential checks of the DPM lifecycle through the C callbacks: a device holds at most one
//! slot of the processor table, whatever the order of its notifications and of other devices'.
//!
//! Regression test for a bug the `sequence` fuzz target (fuzz/) found: `dpm.rs` `claim_slot`
//! walked the table in order and claimed the first slot whose claim key was 0 *before* reaching
//! the slot the same device already held further on, so a re-PREPARE of a prepared device took
//! a second slot whenever an earlier slot had been freed in between, and two REGISTERs of the
//! device then both succeeded.
#![cfg(not(loom))]

use ppm_caller::fixture::NoCounters;
use ppm_engine::Pep;
use ppm_engine::config::Config;

fn engine(capacity: usize) -> &'static Pep<NoCounters> {
    ppm_caller::boot(NoCounters, &Config::new(), capacity)
}

/// The basic order, and a re-PREPARE of a registered device, with no hole in the table.
#[test]
fn a_device_is_registered_once() {
    let pep = engine(4);
    let first = ppm_caller::add_processor::<NoCounters>("\\_SB.CPU0");
    assert!(ppm_caller::prepare::<NoCounters>("\\_SB.CPU0"), "a registered device is still ours");
    assert!(ppm_caller::register::<NoCounters>("\\_SB.CPU0").is_null(), "registered twice");
    assert_eq!(pep.registered_count(), 1);
    assert!(ppm_caller::unregister::<NoCounters>(first));
    let again = ppm_caller::add_processor::<NoCounters>("\\_SB.CPU0");
    assert_ne!(again, first);
    assert_eq!(pep.registered_count(), 1);
}

/// A re-PREPARE of a prepared device after an earlier slot was freed must not take that slot
/// too: the device would hold two slots and could be registered twice.
#[test]
fn a_re_prepare_after_an_earlier_slot_was_freed_takes_no_second_slot() {
    let pep = engine(2);
    let other = ppm_caller::add_processor::<NoCounters>("\\_SB.CPU0"); // slot 0
    assert!(ppm_caller::prepare::<NoCounters>("\\_SB.CPU1")); // slot 1
    assert!(ppm_caller::unregister::<NoCounters>(other)); // slot 0 free again
    assert!(ppm_caller::prepare::<NoCounters>("\\_SB.CPU1")); // must find slot 1, not claim slot 0
    let first = ppm_caller::register::<NoCounters>("\\_SB.CPU1");
    assert!(!first.is_null());
    assert!(ppm_caller::prepare::<NoCounters>("\\_SB.CPU1"));
    let second = ppm_caller::register::<NoCounters>("\\_SB.CPU1");
    assert!(second.is_null(), "one device registered twice: {first:p} and {second:p}");
    assert_eq!(pep.registered_count(), 1);
    // And the table still has room for another device.
    assert!(ppm_caller::prepare::<NoCounters>("\\_SB.CPU2"));
}
