//! The engine's MSR writes are the ones `pmc::DECLARED_WRITES` declares: what
//! `enable_fixed_counters` and its restore write passes `check_write` for any value found, and
//! `check_write` refuses an undeclared MSR, a write without the reservation and a write that
//! changes another counter's bits.
#![cfg(not(loom))]

use ppm_engine::pmc::{
    DECLARED_WRITES, SavedPmuControl, WriteViolation, check_write, enabled_control,
};
use ppm_engine::x86::msr;

/// xorshift64: many "found" control values, deterministically.
fn values() -> impl Iterator<Item = u64> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    std::iter::repeat_with(move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    })
    .take(4096)
    .chain([0, u64::MAX, 0x330, 1 << 33])
}

#[test]
fn enabling_and_restoring_write_only_the_declared_bits() {
    let mut found = values();
    while let (Some(fixed_ctr_ctrl), Some(perf_global_ctrl)) = (found.next(), found.next()) {
        let saved = SavedPmuControl { fixed_ctr_ctrl, perf_global_ctrl };
        let enabled = enabled_control(saved);
        let writes = [
            (msr::IA32_FIXED_CTR_CTRL, saved.fixed_ctr_ctrl, enabled.fixed_ctr_ctrl),
            (msr::IA32_PERF_GLOBAL_CTRL, saved.perf_global_ctrl, enabled.perf_global_ctrl),
        ];
        for (number, before, after) in writes {
            assert_eq!(check_write(number, Some(before), after, true), Ok(()), "{number:#x}");
            assert_eq!(check_write(number, Some(after), before, true), Ok(()), "restore");
        }
    }
}

#[test]
fn anything_else_is_a_violation() {
    assert_eq!(DECLARED_WRITES.len(), 2);
    assert_eq!(check_write(msr::IA32_APERF, Some(0), 0, true), Err(WriteViolation::Undeclared));
    assert_eq!(check_write(msr::IA32_FIXED_CTR1, None, 0, true), Err(WriteViolation::Undeclared));
    assert_eq!(
        check_write(msr::IA32_FIXED_CTR_CTRL, Some(0), 0x330, false),
        Err(WriteViolation::Unreserved)
    );
    // Fixed counter 0's field (bits 0..=3) belongs to another owner.
    assert_eq!(
        check_write(msr::IA32_FIXED_CTR_CTRL, Some(0), 0x333, true),
        Err(WriteViolation::OtherBits(0x3))
    );
    assert_eq!(
        check_write(msr::IA32_PERF_GLOBAL_CTRL, Some(0), (1 << 33) | 1, true),
        Err(WriteViolation::OtherBits(1))
    );
}
