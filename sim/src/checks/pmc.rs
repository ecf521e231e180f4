//! The checks of MSR and PMU access: `msr.only_advertised` and `pmc.reservation_respected`.

use std::fmt::Write as _;

use ppm_engine::abi::STATUS_SUCCESS;
use ppm_engine::pmc::{self, WriteViolation};

use crate::cpu::is_pmu_msr;
use crate::machine::pmu::{AccessContext, MsrAccess};

use super::{CheckResult, Context};

const fn context_name(context: AccessContext) -> &'static str {
    match context {
        AccessContext::DriverSetup => "by the driver's setup",
        AccessContext::Initialisation => "at initialisation",
        AccessContext::Callback => "in a PEP callback",
        AccessContext::Resume => "in RESUME_FROM_SYSTEM_STATE",
    }
}

/// What is wrong with an MSR write, if anything: only the driver's setup and a PEP enabling its
/// counters again on resume, holding the PMU reservation, may write, and only what the engine
/// declares in `pmc::DECLARED_WRITES` (the fields of fixed counters 1 and 2 in
/// `IA32_FIXED_CTR_CTRL` and their enable bits in `IA32_PERF_GLOBAL_CTRL`).
fn write_problem(write: &MsrAccess) -> Option<String> {
    let value = write.written.unwrap_or(0);
    let what = format!(
        "MSR {:#x} written ({value:#x}) on processor {} {}",
        write.msr,
        write.processor,
        context_name(write.context)
    );
    let problem = if !write.reserved {
        "without a PMU reservation".to_owned()
    } else if !matches!(write.context, AccessContext::DriverSetup | AccessContext::Resume) {
        "outside the driver's setup and RESUME_FROM_SYSTEM_STATE: a PEP writes no other MSR"
            .to_owned()
    } else {
        // What the engine declares it may write (pmc::DECLARED_WRITES) is the rule.
        match pmc::check_write(write.msr, write.previous, value, write.reserved) {
            Ok(()) => return None,
            Err(WriteViolation::OtherBits(changed)) => {
                format!("changed bits {changed:#x} of other counters' configuration")
            }
            Err(WriteViolation::Undeclared | WriteViolation::Unreserved) => {
                "not a control register of fixed counters 1 and 2 (pmc::DECLARED_WRITES)".to_owned()
            }
        }
    };
    Some(format!("{what} {problem}"))
}

impl Context<'_> {
    pub(super) fn msr_only_advertised(&self) -> CheckResult {
        let observations = self.observations;
        let arm = self.scenario.platform.cpu.is_arm64();
        let failures: Vec<String> = observations
            .unannounced_msr_reads
            .iter()
            .map(|read| {
                let why = if arm {
                    "ID_AA64PFR0_EL1 did not announce the AMU (an undefined instruction)"
                } else if is_pmu_msr(read.msr) {
                    "CPUID did not announce it or the PMU was not reserved"
                } else {
                    "CPUID did not announce it"
                };
                let name = crate::cpu::sysreg::name(read.msr);
                format!("{name} read on processor {} but {why}", read.processor)
            })
            .collect();
        let ok = if arm {
            format!(
                "{} register reads, all announced by ID_AA64PFR0_EL1 (no MSR, no unannounced AMU register)",
                observations.msr_reads
            )
        } else {
            format!("{} MSR reads, all announced by CPUID", observations.msr_reads)
        };
        let mut result = CheckResult::from_failures("msr.only_advertised", &failures, ok);
        if !result.passed && observations.unannounced_msr_read_count > failures.len() {
            let _ = write!(
                result.detail,
                " ({} unannounced reads in all)",
                observations.unannounced_msr_read_count
            );
        }
        result
    }

    /// No PMU register read or written without a PMU reservation; no MSR written at all except
    /// the control registers of fixed counters 1 and 2, by the driver's setup after the
    /// reservation, leaving every other counter's configuration as found; and a reservation
    /// that did not end with the counters enabled everywhere given back.
    pub(super) fn reservation_respected(&self) -> CheckResult {
        let id = "pmc.reservation_respected";
        let log = self.machine.msr_access_log();
        let mut failures: Vec<String> = log
            .unreserved_reads
            .iter()
            .map(|read| {
                format!(
                    "PMU register {:#x} read on processor {} {} without a PMU reservation",
                    read.msr,
                    read.processor,
                    context_name(read.context)
                )
            })
            .collect();
        let unlisted = log.unreserved_read_count.saturating_sub(log.unreserved_reads.len() as u64);
        if unlisted > 0 {
            failures.push(format!("{unlisted} more PMU register reads without a reservation"));
        }
        failures.extend(log.writes.iter().filter_map(write_problem));
        let reservation = self.machine.reservation();
        if let Some(record) = &reservation
            && record.status == STATUS_SUCCESS
            && !record.freed
            && !self.machine.fixed_counters_ready()
        {
            failures.push(
                "the PMU is reserved but the fixed counters were not enabled everywhere, and the reservation was not given back".to_owned(),
            );
        }
        let summary = match &reservation {
            None => "no reservation wanted".to_owned(),
            Some(record) if record.freed => {
                format!("reservation {} given back after a failure", record.request)
            }
            Some(record) => format!(
                "reservation {} answered {:#010x}",
                record.request,
                record.status.cast_unsigned()
            ),
        };
        let writes = match log.write_count {
            0 => "no MSR written".to_owned(),
            count => format!(
                "{count} MSR writes, all to the fixed counters' controls by the driver's setup, keeping the other counters' configuration"
            ),
        };
        let reads = match log.pmu_reads {
            0 => "no PMU register read".to_owned(),
            count => format!("{count} PMU register reads, all under the reservation"),
        };
        CheckResult::from_failures(id, &failures, format!("{summary}; {writes}; {reads}"))
    }
}
