//! Unit tests of the parent module.

use super::analysis::analyse_read;
use super::pep::PepUnderTest;
use super::records::PairAccess;
use crate::cpu::msr;
use crate::machine::Machine;
use crate::platform::MsrRead;
use crate::platform::PlatformOp;

fn read(msr: u32, masked: bool, epoch: u64) -> PlatformOp {
    PlatformOp::ReadMsr(MsrRead {
        processor: 0,
        msr,
        value: Some(1),
        masked,
        mask_epoch: epoch,
        announced: true,
        at_ns: 0,
    })
}

#[test]
fn the_engine_instance_can_be_shared_by_processor_threads() {
    const fn shareable<T: Sync>() {}
    shareable::<PepUnderTest>();
    shareable::<Machine>();
}

#[test]
fn read_analysis_finds_what_is_between_and_around_the_pair() {
    let good = [read(msr::IA32_APERF, true, 3), read(msr::IA32_MPERF, true, 3)];
    assert_eq!(
        analyse_read(&good).0,
        PairAccess::BackToBackMasked { actual_msr: msr::IA32_APERF, nominal_msr: msr::IA32_MPERF }
    );
    let reenabled = [read(msr::IA32_APERF, true, 3), read(msr::IA32_MPERF, true, 4)];
    assert!(
        matches!(analyse_read(&reenabled).0, PairAccess::Problem(problem) if problem.contains("re-enabled"))
    );
    let unmasked = [read(msr::IA32_APERF, false, 3), read(msr::IA32_MPERF, false, 3)];
    assert!(
        matches!(analyse_read(&unmasked).0, PairAccess::Problem(problem) if problem.contains("enabled"))
    );
    let between = [
        read(msr::IA32_APERF, true, 3),
        PlatformOp::Cpuid { leaf: 0, subleaf: 0 },
        read(msr::IA32_MPERF, true, 3),
    ];
    assert!(
        matches!(analyse_read(&between).0, PairAccess::Problem(problem) if problem.contains("Cpuid"))
    );
    let reversed = [read(msr::IA32_MPERF, true, 3), read(msr::IA32_APERF, true, 3)];
    assert!(matches!(analyse_read(&reversed).0, PairAccess::Problem(_)));
    assert_eq!(analyse_read(&[]).0, PairAccess::NoRead);
}
