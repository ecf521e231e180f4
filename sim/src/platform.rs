//! [`SimPlatform`]: the engine's [`Platform`] over the simulated machine.
//!
//! The emulator "runs as" a processor by entering it on the calling thread
//! ([`OnProcessor::enter`]): that sets the thread's current processor and enters the engine
//! instance the callbacks serve (`ppm_caller::ThreadHost<SimPlatform>`), and restores both when
//! the guard drops. What the thread carries while it runs as a processor — and why it cannot
//! be passed down — is [`ambient`]'s: one value per thread. Every hardware
//! operation the engine performs — `CPUID`, MSR reads, the time source, stalls — is recorded in
//! the thread's trace ([`begin_trace`], [`take_trace`]) with the interrupt-masking state at the
//! time, so that checks can see what the engine did inside one callback.
//!
//! Interrupt masking is simulated per thread: [`Platform::with_interrupts_masked`] masks, runs,
//! and restores the previous state, and counts every unmasked→masked transition (the mask
//! "epoch"), so two reads are known to be in one masked section when they share an epoch.
//!
//! Interrupts arriving during a callback are modelled per thread too ([`nest`]): while a
//! [`NestingGuard`] lives, every platform call takes simulated time on the processor, and at
//! each [`InjectionPoint`] reached with interrupts unmasked the platform delivers nested
//! notifications on the same processor — never inside a masked section, where hardware
//! delivers no interrupt (unless a test's `PlatformFaults` says so: the `sabotage` module).

use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use ppm_engine::arm64::SystemRegister;
use ppm_engine::platform::{
    CpuidResult, InterruptsMasked, MsrFault, Passive, PerformanceCounter, Platform,
};

use crate::cpu::{is_pmu_msr, msr_announced, sysreg};
use crate::machine::pmu::{AccessContext, MsrAccess};
use crate::machine::{Machine, NS_PER_MS, PERFORMANCE_COUNTER_HZ};
#[cfg(any(test, feature = "sabotage"))]
use crate::sabotage::PlatformFaults;
use crate::scenario::CounterSourceKind;

pub mod ambient;

use ambient::record;
pub use ambient::{
    DriverSetup, NestingGuard, OnProcessor, begin_trace, current_processor, in_driver_setup,
    interrupt_windows_inert, nest, no_interrupt_can_arrive, swap_trace, take_trace, while_resuming,
};

/// How many time-stamp values [`SimPlatform::timestamps_ahead`] gives where interrupt windows
/// take time.
///
/// The windows an image call may pass between two of its requests with its reads answered by
/// the runner (a `FEEDBACK_READ`'s first read is its third).
pub const TIMESTAMPS_AHEAD: usize = 4;

/// One MSR read the engine made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrRead {
    /// The processor the read executed on.
    pub processor: u32,
    /// The MSR.
    pub msr: u32,
    /// The value, or `None` when the read faulted.
    pub value: Option<u64>,
    /// Whether interrupts were masked.
    pub masked: bool,
    /// The masking epoch (see the module documentation).
    pub mask_epoch: u64,
    /// Whether `CPUID`, as answered to the engine, announced the MSR.
    pub announced: bool,
    /// The clock time of the read, ns.
    pub at_ns: u64,
}

/// One MSR write the engine (or the driver's setup) made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrWrite {
    /// The processor the write executed on.
    pub processor: u32,
    /// The MSR.
    pub msr: u32,
    /// The value written.
    pub value: u64,
    /// Whether the write succeeded.
    pub ok: bool,
}

/// One hardware operation the engine performed through the platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlatformOp {
    /// `CPUID`.
    Cpuid {
        /// EAX in.
        leaf: u32,
        /// ECX in.
        subleaf: u32,
    },
    /// `RDMSR`.
    ReadMsr(MsrRead),
    /// `WRMSR`.
    WriteMsr(MsrWrite),
    /// `RDTSC`.
    ReadTimestamp,
    /// The time source was read.
    PerformanceCounter,
    /// A busy wait.
    Stall {
        /// Its length.
        microseconds: u32,
    },
    /// Nested notifications were delivered here (see [`nest`]); their own operations are
    /// traced separately.
    Nested {
        /// Where.
        point: InjectionPoint,
        /// Whether interrupts were masked (only with a test's `PlatformFaults`).
        masked: bool,
    },
    /// An `smi` held the processor in SMM here, between two counter reads.
    Smi {
        /// The processor.
        processor: u32,
        /// How long, ns.
        stall_ns: u64,
    },
}

/// A platform call during which an interrupt can arrive, so that nested notifications are
/// delivered on the same processor (see [`nest`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InjectionPoint {
    /// On entry to `current_processor_index`.
    CurrentProcessor,
    /// On entry to `with_interrupts_masked`, before it masks.
    MaskEntry,
    /// On return from `with_interrupts_masked`, after it restored the previous state.
    MaskExit,
    /// Before an MSR read.
    ReadMsr,
    /// Before a time-stamp read.
    ReadTimestamp,
}

/// Delivers nested notifications at an injection point: `(point, interrupts masked)`. It runs
/// on the interrupted thread, inside the engine's callback, as the same processor.
pub type NestingHook = Rc<dyn Fn(InjectionPoint, bool)>;

/// The engine's platform over a [`Machine`]. Cheap to clone (shared machine).
#[derive(Clone)]
pub struct SimPlatform {
    machine: Arc<Machine>,
    /// What a test breaks.
    #[cfg(any(test, feature = "sabotage"))]
    faults: PlatformFaults,
}

impl fmt::Debug for SimPlatform {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = formatter.debug_struct("SimPlatform");
        #[cfg(any(test, feature = "sabotage"))]
        debug.field("faults", &self.faults);
        debug.finish_non_exhaustive()
    }
}

impl SimPlatform {
    /// A faithful platform over `machine`.
    #[must_use]
    pub const fn new(machine: Arc<Machine>) -> Self {
        Self {
            machine,
            #[cfg(any(test, feature = "sabotage"))]
            faults: PlatformFaults::NONE,
        }
    }

    /// A platform over `machine` with `faults` injected.
    #[cfg(any(test, feature = "sabotage"))]
    #[must_use]
    pub const fn with_faults(machine: Arc<Machine>, faults: PlatformFaults) -> Self {
        Self { machine, faults }
    }

    /// Whether masking interrupts masks them (a test's `PlatformFaults` may ignore it).
    #[cfg_attr(
        not(any(test, feature = "sabotage")),
        expect(clippy::unused_self, reason = "always true without the sabotage feature")
    )]
    const fn masking_masks(&self) -> bool {
        #[cfg(any(test, feature = "sabotage"))]
        let ignored = self.faults.ignore_interrupt_masking;
        #[cfg(not(any(test, feature = "sabotage")))]
        let ignored = false;
        !ignored
    }

    /// The machine.
    #[must_use]
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The end of a register read (an MSR, or an ARM64 system register by its trace number):
    /// it is traced; the instruction takes its time; an SMI due lands right after an
    /// actual-count read, before the nominal one (masking interrupts does not keep SMM out).
    fn complete_read(
        &self,
        processor: u32,
        number: u32,
        result: Result<u64, MsrFault>,
        announced: bool,
    ) -> Result<u64, MsrFault> {
        let machine = &self.machine;
        record(PlatformOp::ReadMsr(MsrRead {
            processor,
            msr: number,
            value: result.ok(),
            masked: ambient::masked(),
            mask_epoch: ambient::mask_epoch(),
            announced,
            at_ns: machine.processor_now_ns(processor),
        }));
        machine.execute(processor, u64::from(machine.cpu().msr_read_ns));
        if crate::cpu::msr::is_actual_count(number)
            && let Some(stall) = machine.take_smi(processor)
        {
            machine.spend(processor, stall);
            record(PlatformOp::Smi { processor, stall_ns: stall });
        }
        result
    }

    /// An instant at which an interrupt can arrive: with nesting modelled (see [`nest`]), the
    /// call's time passes and, unless interrupts are masked (and a test's `PlatformFaults`
    /// does not deliver inside masked sections) and unless a nested delivery is already under
    /// way, the nested notifications are delivered.
    fn interrupt_window(&self, point: InjectionPoint) {
        let masked = ambient::masked();
        #[cfg(any(test, feature = "sabotage"))]
        let held_off = masked && !self.faults.nested_in_masked_sections;
        #[cfg(not(any(test, feature = "sabotage")))]
        let held_off = masked;
        let spend = |processor, call_ns| self.machine.spend(processor, call_ns);
        let Some((hook, _delivery)) = ambient::interrupt_window(held_off, spend) else { return };
        record(PlatformOp::Nested { point, masked });
        hook(point, masked);
    }

    /// Logs a PMU register access or an MSR write in the machine's access log, with the
    /// context it was made in.
    fn log_access(
        &self,
        processor: u32,
        msr: u32,
        written: Option<u64>,
        previous: Option<u64>,
        ok: bool,
    ) {
        let context = if in_driver_setup() {
            AccessContext::DriverSetup
        } else if ambient::resuming() {
            AccessContext::Resume
        } else if !ppm_caller::is_entered() {
            AccessContext::Initialisation
        } else {
            AccessContext::Callback
        };
        self.machine.log_msr_access(MsrAccess {
            processor,
            msr,
            written,
            previous,
            ok,
            reserved: self.machine.pmu_reserved(),
            context,
            at_ns: self.machine.processor_now_ns(processor),
        });
    }

    /// `CLI` executed by the image (interrupts were enabled): as the start of
    /// [`Platform::with_interrupts_masked`], an interrupt window and then masked.
    pub fn mask_interrupts(&self) {
        self.interrupt_window(InjectionPoint::MaskEntry);
        if self.masking_masks() {
            ambient::mask();
        }
    }

    /// `STI` executed by the image: as the end of [`Platform::with_interrupts_masked`],
    /// unmasked and then an interrupt window.
    pub fn unmask_interrupts(&self) {
        ambient::set_masked(false);
        self.interrupt_window(InjectionPoint::MaskExit);
    }

    /// What [`Platform::current_processor_index`] returns on the calling thread, without its
    /// interrupt window.
    #[must_use]
    pub fn processor_index_now(&self) -> u32 {
        let index = current_processor();
        #[cfg(any(test, feature = "sabotage"))]
        let index = self.faults.current_processor.as_ref().map_or(index, |hook| hook(index));
        index
    }

    /// The calling thread's processor's time-stamp counter now, without reading it: nothing
    /// recorded, no interrupt window.
    #[must_use]
    pub fn timestamp_now(&self) -> Option<u64> {
        #[cfg(any(test, feature = "sabotage"))]
        if self.faults.no_timestamp {
            return None;
        }
        Some(self.machine.timestamp(current_processor()))
    }

    /// What [`Platform::read_timestamp`] on the calling thread's processor returns when it is
    /// the k-th interrupt window from now (the read's own window counts), if only interrupt
    /// windows happen on the processor before it: one value where the windows are inert (they
    /// take no time, so every such read returns it), else one for each of the next
    /// [`TIMESTAMPS_AHEAD`] windows, each taking [`ambient::window_ns`]. Nothing recorded, no
    /// window.
    #[must_use]
    pub fn timestamps_ahead(&self) -> Option<Vec<u64>> {
        #[cfg(any(test, feature = "sabotage"))]
        if self.faults.no_timestamp {
            return None;
        }
        let processor = current_processor();
        let now = self.machine.processor_now_ns(processor);
        let step = ambient::window_ns();
        if step == 0 {
            return Some(vec![self.machine.timestamp_at(processor, now)]);
        }
        let windows = (0..TIMESTAMPS_AHEAD).scan(now, |at, _| {
            *at = at.saturating_add(step);
            Some(self.machine.timestamp_at(processor, *at))
        });
        Some(windows.collect())
    }

    /// `CPUID` as the engine sees it on `processor` (a test's faults applied), without
    /// recording it.
    #[must_use]
    pub fn cpuid_as_seen(&self, processor: u32, leaf: u32, subleaf: u32) -> CpuidResult {
        let answer = self.machine.cpu().cpuid(processor, leaf, subleaf);
        #[cfg(any(test, feature = "sabotage"))]
        let answer = self
            .faults
            .cpuid
            .as_ref()
            .map_or(answer, |hook| hook(processor, leaf, subleaf, answer));
        answer
    }
}

impl Platform for SimPlatform {
    fn current_processor_index(&self) -> u32 {
        self.interrupt_window(InjectionPoint::CurrentProcessor);
        self.processor_index_now()
    }

    fn cpuid(&self, leaf: u32, subleaf: u32) -> CpuidResult {
        record(PlatformOp::Cpuid { leaf, subleaf });
        self.cpuid_as_seen(current_processor(), leaf, subleaf)
    }

    fn read_msr(&self, msr: u32) -> Result<u64, MsrFault> {
        self.interrupt_window(InjectionPoint::ReadMsr);
        let processor = current_processor();
        let machine = &self.machine;
        let result = if machine.msr_faulting(processor) {
            Err(MsrFault)
        } else if let Some(result) = machine.read_pmu_msr(processor, msr) {
            result
        } else {
            let counters = machine.counters(processor).unwrap_or_default();
            machine.cpu().read_msr(msr, counters)
        };
        #[cfg(any(test, feature = "sabotage"))]
        let result = self.faults.msr.as_ref().map_or(result, |hook| hook(processor, msr, result));
        // A PMU register counts as announced only while the PMU is reserved.
        let pmu_register = is_pmu_msr(msr);
        let announced = msr_announced(
            &|leaf, subleaf| self.cpuid_as_seen(processor, leaf, subleaf),
            msr,
            machine.cpu().pm_enable(),
        ) && (!pmu_register || machine.pmu_reserved());
        if pmu_register {
            self.log_access(processor, msr, None, None, result.is_ok());
        }
        self.complete_read(processor, msr, result, announced)
    }

    fn read_system_register(&self, register: SystemRegister) -> Result<u64, MsrFault> {
        let machine = &self.machine;
        // An x86 machine has no system registers: the trait's default, no instruction.
        let Some(arm) = machine.cpu().arm else { return Err(MsrFault) };
        self.interrupt_window(InjectionPoint::ReadMsr);
        let processor = current_processor();
        let number = sysreg::id(register);
        let amu = machine.cpu().counter_source == CounterSourceKind::Amu;
        // An AMU register the ID register does not announce is an undefined instruction.
        let announced = !register.is_amu() || amu;
        let counters = || machine.counters(processor).unwrap_or_default();
        let result = if !announced || (register.is_amu() && machine.msr_faulting(processor)) {
            Err(MsrFault)
        } else {
            Ok(match register {
                SystemRegister::IdAa64Pfr0El1 => (u64::from(amu) << 44) | 0x0011,
                SystemRegister::AmcgcrEl0 => 4,
                SystemRegister::Amcntenset0El0 => {
                    if arm.amu_enabled {
                        0b1111
                    } else {
                        0b1100
                    }
                }
                SystemRegister::Amevcntr00El0 => counters().aperf,
                SystemRegister::Amevcntr01El0 => counters().mperf,
                SystemRegister::CntfrqEl0 => u64::from(arm.cntfrq_hz),
            })
        };
        #[cfg(any(test, feature = "sabotage"))]
        let result =
            self.faults.msr.as_ref().map_or(result, |hook| hook(processor, number, result));
        self.complete_read(processor, number, result, announced)
    }

    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        /// Restores the previous masking state, also if `f` unwinds.
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                ambient::set_masked(self.0);
            }
        }
        let previous = ambient::masked();
        self.interrupt_window(InjectionPoint::MaskEntry);
        let result = {
            let _restore = Restore(previous);
            if self.masking_masks() && !previous {
                ambient::mask();
            }
            // SAFETY: the simulated interrupts of this thread are masked until `_restore`
            // drops (unless a test's `PlatformFaults` breaks the platform on purpose, for the
            // checks to catch), and `f` only borrows the token.
            let masked = unsafe { InterruptsMasked::assume() };
            f(&masked)
        };
        self.interrupt_window(InjectionPoint::MaskExit);
        result
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        record(PlatformOp::PerformanceCounter);
        let ticks_per_ms = PERFORMANCE_COUNTER_HZ / 1000;
        PerformanceCounter {
            ticks: self.machine.processor_now_ns(current_processor()) / (NS_PER_MS / ticks_per_ms),
            frequency: PERFORMANCE_COUNTER_HZ,
        }
    }

    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        record(PlatformOp::Stall { microseconds });
        self.machine.stall(current_processor(), microseconds);
    }

    fn write_msr(&self, msr: u32, value: u64) -> Result<(), MsrFault> {
        let processor = current_processor();
        let machine = &self.machine;
        let (result, previous) = if machine.msr_faulting(processor) {
            (Err(MsrFault), None)
        } else {
            machine.write_msr(processor, msr, value)
        };
        record(PlatformOp::WriteMsr(MsrWrite { processor, msr, value, ok: result.is_ok() }));
        self.log_access(processor, msr, Some(value), previous, result.is_ok());
        result
    }

    fn read_timestamp(&self) -> Option<u64> {
        #[cfg(any(test, feature = "sabotage"))]
        if self.faults.no_timestamp {
            return None;
        }
        self.interrupt_window(InjectionPoint::ReadTimestamp);
        record(PlatformOp::ReadTimestamp);
        self.timestamp_now()
    }

    fn fixed_counters_reserved(&self) -> bool {
        #[cfg(any(test, feature = "sabotage"))]
        if self.faults.claim_fixed_counters_reserved {
            return true;
        }
        self.machine.fixed_counters_ready()
    }
}

/// The host of the engine's callbacks in the emulator: the instance an [`OnProcessor`] guard
/// entered on the calling thread.
pub type SimHost = ppm_caller::ThreadHost<SimPlatform>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::msr;
    use crate::sabotage::PlatformFaults;
    use crate::scenario::Scenario;

    fn platform(faults: PlatformFaults) -> SimPlatform {
        let scenario = Scenario::from_toml_str(
            "name = \"t\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\n[pofx]\nduration_ms = 10\n",
        )
        .expect("valid");
        SimPlatform::with_faults(Arc::new(Machine::new(&scenario)), faults)
    }

    #[test]
    fn masking_nests_and_is_traced() {
        let platform = platform(PlatformFaults::default());
        let _on = OnProcessor::enter(None, 1);
        begin_trace();
        let _ = platform.read_msr(msr::IA32_APERF);
        platform.with_interrupts_masked(|_| {
            platform.with_interrupts_masked(|_| {
                let _ = platform.read_msr(msr::IA32_APERF);
            });
            let _ = platform.read_msr(msr::IA32_MPERF);
        });
        let _ = platform.read_msr(0x10);
        let reads: Vec<MsrRead> = take_trace()
            .into_iter()
            .filter_map(|op| if let PlatformOp::ReadMsr(read) = op { Some(read) } else { None })
            .collect();
        assert_eq!(
            reads.iter().map(|read| read.masked).collect::<Vec<_>>(),
            [false, true, true, false]
        );
        assert_eq!(reads[1].mask_epoch, reads[2].mask_epoch);
        assert!(reads.iter().all(|read| read.processor == 1));
        assert!(reads[0].announced && !reads[3].announced && reads[3].value.is_none());
        assert!(!ppm_caller::is_entered());
    }

    #[test]
    fn faults_are_injected() {
        let faults = PlatformFaults {
            ignore_interrupt_masking: true,
            current_processor: Some(Arc::new(|_| 7)),
            msr: Some(Arc::new(|_, _, _| Ok(42))),
            cpuid: Some(Arc::new(|_, _, _, _| CpuidResult { eax: 1, ebx: 2, ecx: 3, edx: 4 })),
            ..PlatformFaults::default()
        };
        let platform = platform(faults);
        let _on = OnProcessor::enter(None, 0);
        assert_eq!(platform.current_processor_index(), 7);
        assert_eq!(platform.cpuid(0, 0).ebx, 2);
        begin_trace();
        let value = platform.with_interrupts_masked(|_| platform.read_msr(0x1234));
        assert_eq!(value, Ok(42));
        let trace = take_trace();
        assert!(matches!(
            trace.as_slice(),
            [PlatformOp::ReadMsr(MsrRead { masked: false, announced: false, .. })]
        ));
    }
}

#[cfg(test)]
mod nesting_tests;
