//! The driver's part before the PEP exists: the PMU reservation and the fixed counters.
//!
//! Played as `DriverEntry` plays it (`src/pmu.rs`): the PMU reservation for the fixed-counter
//! source through the emulated HAL, then enabling the fixed counters on every processor, as
//! that processor. The engine decides whether a reservation is wanted ([`ppm_engine::pmc::counters_to_reserve`]:
//! only where the configuration may select the fixed counters, CPUID announces them and, for the
//! automatic order, APERF/MPERF are missing) and builds the resource list
//! ([`ppm_engine::pmc::reservation`]). The emulated `HalAllocateHardwareCounters` refuses it
//! with `STATUS_INSUFFICIENT_RESOURCES` while another owner holds the PMU (`pmu_busy`). Only
//! after a successful reservation does the driver touch a PMU register: it enables counters 1
//! and 2 on every processor with [`ppm_engine::pmc::enable_fixed_counters`], through the
//! platform's `write_msr`; a failure on any processor restores the processors done and gives
//! the PMU back. The platform's `fixed_counters_reserved` then reports whether the counters
//! are reserved and enabled everywhere.

use std::cell::Cell;

use ppm_engine::Config;
use ppm_engine::abi::{
    NTSTATUS, PHYSICAL_COUNTER_RESOURCE_LIST, ResourceTypeRange, STATUS_INVALID_PARAMETER,
    STATUS_SUCCESS,
};
use ppm_engine::cpu::CpuFeatures;
use ppm_engine::pmc::{self, Reservation, SavedPmuControl};

use crate::machine::Machine;
use crate::platform::{self, OnProcessor, PlatformOp, SimPlatform};

thread_local! {
    /// The calling thread is the driver reserving the PMU and enabling the counters.
    static DRIVER_SETUP: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is in the driver's PMU setup (for the access log).
#[must_use]
pub fn in_driver_setup() -> bool {
    DRIVER_SETUP.with(Cell::get)
}

/// Marks the calling thread as the driver's PMU setup while alive.
struct DriverSetup;

impl DriverSetup {
    fn enter() -> Self {
        DRIVER_SETUP.with(|setup| setup.set(true));
        Self
    }
}

impl Drop for DriverSetup {
    fn drop(&mut self) {
        DRIVER_SETUP.with(|setup| setup.set(false));
    }
}

/// How the driver's PMU setup ended (the driver's names for its log and `State` key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No reservation was wanted.
    NotNeeded,
    /// The HAL refused the reservation.
    Refused,
    /// Enabling the counters failed; everything was restored and the PMU given back.
    ProgrammingFailed,
    /// Reserved and enabled on every processor.
    Reserved,
}

impl Outcome {
    /// The driver's name for the outcome.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::NotNeeded => "not-needed",
            Self::Refused => "refused",
            Self::ProgrammingFailed => "programming-failed",
            Self::Reserved => "reserved",
        }
    }
}

/// The emulated `HalAllocateHardwareCounters(NULL, 0, ResourceList, &Handle)`.
///
/// For every processor of every group: `list` is `None` for a NULL `ResourceList` (exclusive ownership of
/// the PMU) or the list the driver passes. A list must hold one `ResourceTypeRange` descriptor
/// with `Flags` 0 and `Begin <= End` (`STATUS_INVALID_PARAMETER` otherwise); the machine
/// refuses with `STATUS_INSUFFICIENT_RESOURCES` while another owner holds the PMU.
#[must_use]
pub fn allocate_hardware_counters(
    machine: &Machine,
    list: Option<&PHYSICAL_COUNTER_RESOURCE_LIST>,
) -> NTSTATUS {
    let request = match list {
        None => "NULL (exclusive ownership of the PMU)".to_owned(),
        Some(list) => {
            let [descriptor] = list.Descriptors;
            if list.Count != 1 || descriptor.Type != ResourceTypeRange || descriptor.Flags != 0 {
                return STATUS_INVALID_PARAMETER;
            }
            // SAFETY: a ResourceTypeRange descriptor's union holds `Range` (two ULONGs: any
            // bit pattern is valid).
            let range = unsafe { descriptor.u.Range };
            if range.Begin > range.End {
                return STATUS_INVALID_PARAMETER;
            }
            format!("1 ResourceTypeRange descriptor, counters {}..={}", range.Begin, range.End)
        }
    };
    machine.allocate_hardware_counters(request)
}

/// Reserves the PMU and enables the fixed counters on processors `0..processors`.
///
/// Only if the configuration and CPUID call for it, as the driver does before creating the
/// PEP. Returns the outcome and the platform operations it made (CPUID on processor 0, the PMU control reads and
/// writes on each processor).
#[must_use]
pub fn reserve_and_enable(
    platform: &SimPlatform,
    config: &Config,
    processors: u32,
) -> (Outcome, Vec<PlatformOp>) {
    let _setup = DriverSetup::enter();
    platform::begin_trace();
    let outcome = reserve(platform, config, processors);
    (outcome, platform::take_trace())
}

fn reserve(platform: &SimPlatform, config: &Config, processors: u32) -> Outcome {
    let machine = platform.machine();
    let cpu = {
        let _on = OnProcessor::enter(None, 0);
        CpuFeatures::detect(platform)
    };
    let Some(counters) = pmc::counters_to_reserve(config, &cpu) else {
        return Outcome::NotNeeded;
    };
    let reservation = pmc::reservation(config.pmu_reservation, &counters);
    let list = match &reservation {
        Reservation::ExclusivePmu => None,
        Reservation::List(list) => Some(list),
    };
    if allocate_hardware_counters(machine, list) != STATUS_SUCCESS {
        return Outcome::Refused;
    }
    let mut saved: Vec<SavedPmuControl> = Vec::new();
    for index in 0..processors {
        let _on = OnProcessor::enter(None, index);
        let Ok(found) = pmc::enable_fixed_counters(platform) else {
            for (done, found) in (0..).zip(saved) {
                let _on = OnProcessor::enter(None, done);
                let _ = pmc::restore_fixed_counters(platform, found);
            }
            machine.free_hardware_counters();
            return Outcome::ProgrammingFailed;
        };
        saved.push(found);
    }
    machine.set_fixed_counters_ready(true);
    Outcome::Reserved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::PlatformFaults;
    use crate::scenario::Scenario;
    use ppm_engine::abi::STATUS_INSUFFICIENT_RESOURCES;
    use std::sync::Arc;

    fn platform(extra: &str) -> SimPlatform {
        let text = format!(
            "name = \"t\"\n[platform]\nprocessors = 4\nnominal_mhz = 2000\ncounter_source = \"fixed-pmc\"\n{extra}[pofx]\nduration_ms = 10\n"
        );
        let scenario = Scenario::from_toml_str(&text).expect("valid");
        SimPlatform::new(Arc::new(Machine::new(&scenario)), PlatformFaults::default())
    }

    #[test]
    fn reserves_then_enables_every_processor() {
        let platform = platform("");
        let (outcome, trace) = reserve_and_enable(&platform, &Config::new(), 4);
        assert_eq!(outcome, Outcome::Reserved);
        let writes = trace.iter().filter(|op| matches!(op, PlatformOp::WriteMsr(_))).count();
        assert_eq!(writes, 8);
        let machine = platform.machine();
        assert!(machine.pmu_reserved() && machine.fixed_counters_ready());
        for index in 0..4 {
            let state = machine.fixed_counters(index).expect("a PMU");
            assert_eq!(state.counting, [false, true, true]);
        }
        assert_eq!(machine.msr_access_log().write_count, 8);
    }

    #[test]
    fn a_refusal_or_a_failure_leaves_the_pmu_as_found() {
        let busy = platform("pmu_busy = true\n");
        let (outcome, trace) = reserve_and_enable(&busy, &Config::new(), 4);
        assert_eq!(outcome, Outcome::Refused);
        assert!(trace.iter().all(|op| matches!(op, PlatformOp::Cpuid { .. })));
        let record = busy.machine().reservation().expect("asked");
        assert_eq!(record.status, STATUS_INSUFFICIENT_RESOURCES);
        // Processor 2's MSR accesses fault: 0 and 1 are restored and the PMU given back.
        let failing = platform("");
        failing.machine().set_msr_fault(2, true);
        let (outcome, _) = reserve_and_enable(&failing, &Config::new(), 4);
        assert_eq!(outcome, Outcome::ProgrammingFailed);
        let machine = failing.machine();
        assert!(!machine.pmu_reserved() && !machine.fixed_counters_ready());
        assert!(machine.reservation().is_some_and(|record| record.freed));
        for index in [0, 1, 3] {
            let state = machine.fixed_counters(index).expect("a PMU");
            assert_eq!((state.counting, state.fixed_ctr_ctrl), ([false; 3], 0), "{index}");
        }
        // No reservation is wanted where APERF/MPERF serve.
        let mut aperf = Config::new();
        aperf.counter_source = ppm_engine::config::CounterSourcePreference::AperfMperf;
        assert_eq!(reserve_and_enable(&platform(""), &aperf, 4).0, Outcome::NotNeeded);
    }
}
