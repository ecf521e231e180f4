//! What a call's platform trace says about how it read the counters.

use super::records::{PairAccess, RawRead};
use crate::cpu::msr;
use crate::platform::{MsrRead, PlatformOp};

/// The raw counter values of a call's trace, if it read a counter pair: of the pairs it read
/// (a PEP reads a pair again when an SMI or a descheduled VM stretched the first), the one
/// whose nominal read followed its actual read most closely — the pair a PEP keeps.
pub(super) fn raw_read(trace: &[PlatformOp]) -> Option<RawRead> {
    let reads: Vec<&MsrRead> = trace
        .iter()
        .filter_map(|op| match op {
            PlatformOp::ReadMsr(read) => Some(read),
            _ => None,
        })
        .collect();
    let mut best: Option<(u64, RawRead)> = None;
    for (position, actual) in reads.iter().enumerate() {
        let Some(partner) = nominal_partner(actual.msr) else { continue };
        let Some(nominal) = reads.iter().skip(position + 1).find(|read| read.msr == partner) else {
            continue;
        };
        let (Some(actual_value), Some(nominal_value)) = (actual.value, nominal.value) else {
            continue;
        };
        let gap = nominal.at_ns.saturating_sub(actual.at_ns);
        if best.is_none_or(|(best_gap, _)| gap < best_gap) {
            let raw =
                RawRead { actual: actual_value, nominal: nominal_value, at_ns: nominal.at_ns };
            best = Some((gap, raw));
        }
    }
    best.map(|(_, raw)| raw)
}

/// The nominal-count MSR that pairs with an actual-count MSR.
const fn nominal_partner(actual: u32) -> Option<u32> {
    match actual {
        msr::IA32_APERF => Some(msr::IA32_MPERF),
        msr::AMD_APERF_READ_ONLY => Some(msr::AMD_MPERF_READ_ONLY),
        msr::IA32_FIXED_CTR1 => Some(msr::IA32_FIXED_CTR2),
        crate::cpu::sysreg::AMEVCNTR00 => Some(crate::cpu::sysreg::AMEVCNTR01),
        _ => None,
    }
}

/// How one `FEEDBACK_READ` read the counters, and whether a read faulted.
pub(super) fn analyse_read(trace: &[PlatformOp]) -> (PairAccess, bool) {
    let faulted =
        trace.iter().any(|op| matches!(op, PlatformOp::ReadMsr(read) if read.value.is_none()));
    let mut access = PairAccess::NoRead;
    for (position, op) in trace.iter().enumerate() {
        let PlatformOp::ReadMsr(read) = op else { continue };
        let Some(partner) = nominal_partner(read.msr) else {
            if matches!(
                read.msr,
                msr::IA32_MPERF
                    | msr::AMD_MPERF_READ_ONLY
                    | msr::IA32_FIXED_CTR2
                    | crate::cpu::sysreg::AMEVCNTR01
            ) && access == PairAccess::NoRead
            {
                access = PairAccess::Problem(format!("MPERF ({:#x}) read before APERF", read.msr));
            }
            continue;
        };
        // An SMI between the two reads is the hardware's doing, not the PEP's.
        let next = trace.iter().skip(position + 1).find(|op| !matches!(op, PlatformOp::Smi { .. }));
        let verdict = match next {
            Some(PlatformOp::ReadMsr(next)) if next.msr == partner => {
                if !read.masked || !next.masked {
                    PairAccess::Problem("counters read with interrupts enabled".to_owned())
                } else if read.mask_epoch != next.mask_epoch {
                    PairAccess::Problem(
                        "interrupts re-enabled between the APERF and MPERF reads".to_owned(),
                    )
                } else {
                    PairAccess::BackToBackMasked { actual_msr: read.msr, nominal_msr: next.msr }
                }
            }
            Some(other) => {
                PairAccess::Problem(format!("{other:?} between the APERF and MPERF reads"))
            }
            None if read.value.is_none() => PairAccess::NoRead,
            None => PairAccess::Problem("APERF read without MPERF".to_owned()),
        };
        if matches!(verdict, PairAccess::Problem(_)) || access == PairAccess::NoRead {
            access = verdict;
        }
    }
    (access, faulted)
}
