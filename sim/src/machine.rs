//! The simulated machine: a virtual clock, per-processor load timelines and the activity
//! counters they drive.
//!
//! Time is kept in integer nanoseconds. A processor's load is piecewise constant (a
//! [`Timeline`] of [`Load`]s); over `dt` ns at `f` MHz and `b` % C0 residency APERF advances by
//! `f × b × dt / 100_000` counts and MPERF by `nominal × b × dt / 100_000`, computed exactly in
//! integers (the fractional remainder is carried), so no rounding error accumulates. Nothing
//! advances outside C0. When either counter overflows, both restart at zero (Intel SDM Vol. 3B
//! §14.2), and the processor records a [`Discontinuity`].
//!
//! Processors advance lazily: a processor's counters are brought up to the clock when they are
//! read or changed, so only the processors that are touched cost time, and each processor's
//! state sits behind its own lock (a threaded runtime gives every processor its own thread).
//! Every processor also has its own clock ([`Machine::processor_now_ns`]): what a processor's
//! counters show depends only on the calls made as that processor, however threads interleave.
//! A system sleep powers processors off (nothing counts) and on again (both counters restart at
//! zero); a `counters-zero` event makes them read zero while they go on counting underneath.
//!
//! Before the runtime starts (the PEP's initialisation, device registration), every processor
//! runs the load its timeline has at runtime time 0; [`Machine::start_runtime`] fixes the clock
//! value that scenario time 0 maps to.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use crate::cpu::CounterPair;
use crate::cpu::CpuModel;
use crate::scenario::Scenario;
pub use crate::scenario::timeline::{Activity, Load, NS_PER_MS, Segment, Spans, Timeline};

pub mod pmu;

/// Nanoseconds per microsecond.
pub const NS_PER_US: u64 = 1_000;
/// The platform's performance counter frequency (`KeQueryPerformanceCounter`): 10 MHz.
pub const PERFORMANCE_COUNTER_HZ: u64 = 10_000_000;
/// Counts × `COUNT_SCALE` = Hz × busy % × ns (Hz: the constant counter of an ARM64 SoC ticks
/// at a rate that is rarely a whole MHz).
const COUNT_SCALE: u128 = 100_000_000_000;
/// 2^64: the counters' modulus.
const COUNTER_MODULUS: u128 = 1 << 64;
/// The least C0 time a processor runs right after its counters restart at zero, ns.
///
/// After a power-on from a system sleep or a `counter-reset`, the resume path, or the code
/// that wrote the counters, runs on that processor itself. Software on a processor reads that processor's
/// counters while it runs in C0, so they never read 0/0 after a restart (only a
/// `counters-zero` event, a hypervisor hiding them, does that).
pub const RESTART_C0_NS: u64 = 10_000;

/// Why a processor's counters jumped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscontinuityKind {
    /// Both were set to zero (a reset, another program, a hypervisor).
    Reset,
    /// One overflowed; both restarted at zero.
    Overflow,
    /// Both were set just below 2^64 (or, with `fixed-pmc`, the fixed counters just below
    /// 2^width: they then wrap, which is no break).
    NearWrap,
    /// Another PMU owner wrote the fixed counters (`pmu-reprogrammed`).
    PmuReprogrammed,
    /// Another PMU owner wrote the fixed counters and kept them disabled until clock time
    /// `until_ns`.
    PmuStopped {
        /// When they count again, ns.
        until_ns: u64,
    },
    /// The processor was powered on again after a system sleep: both restarted at zero.
    PowerOn,
    /// From then on both read as zero and do not advance (a hypervisor stopped exposing them).
    Zeroed,
    /// After [`DiscontinuityKind::Zeroed`]: both read their real values again.
    Exposed,
}

/// A jump of a processor's counters, at clock time `at_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Discontinuity {
    /// Clock time, ns.
    pub at_ns: u64,
    /// What happened.
    pub kind: DiscontinuityKind,
}

/// A System Management Interrupt waiting for the processor's next actual-count read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Smi {
    /// Clock time from which the next actual-count read is interrupted, ns.
    due: u64,
    /// How long SMM holds the processor, ns.
    stall: u64,
    /// An SMI storm: the next one is due this long after the previous was due, ns.
    period: Option<u64>,
}

/// One processor's counter state.
#[derive(Debug)]
struct ProcessorState {
    counters: CounterPair,
    /// Fractional counts (× `COUNT_SCALE`) not yet whole.
    aperf_remainder: u128,
    mperf_remainder: u128,
    /// The clock time the counters are up to date for.
    synced_ns: u64,
    /// Where in the timeline `synced_ns` was last found (a hint: time moves forward).
    segment_hint: usize,
    /// The armed `smi`, if any.
    smi: Option<Smi>,
    discontinuities: Vec<Discontinuity>,
    /// Active MSR-fault windows.
    msr_faults: u32,
    /// Unhalted core and reference cycles since power-on (what the fixed counters count while
    /// enabled); never reset, wrapping after 2^64.
    core_cycles: u64,
    reference_cycles: u64,
    /// The architectural PMU's registers.
    pmu: pmu::ProcessorPmu,
    /// Off in a system sleep state: nothing counts.
    powered_off: bool,
    /// The counters read as zero (a `counters-zero` event).
    zeroed: bool,
}

impl ProcessorState {
    /// The C0 time the processor runs right after its counters restart at zero
    /// ([`RESTART_C0_NS`] at `frequency_mhz`), without moving its clock.
    fn run_restart_code(&mut self, at_ns: u64, frequency_mhz: u32, nominal_hz: u64) {
        let load = Load { frequency_mhz, busy_percent: 100 };
        self.run(at_ns, RESTART_C0_NS, load, nominal_hz);
    }

    /// Runs `dt` ns of `load` from clock time `at_ns`, handling overflow.
    fn run(&mut self, at_ns: u64, dt: u64, load: Load, nominal_hz: u64) {
        let busy = u128::from(load.busy_percent);
        let rate_a = u128::from(load.frequency_mhz) * 1_000_000 * busy;
        let rate_m = u128::from(nominal_hz) * busy;
        // The whole counts this run adds, overflows or not (the remainders carry exactly).
        let added = |remainder: u128, rate: u128| {
            let whole = (remainder + rate * u128::from(dt)) / COUNT_SCALE;
            u64::try_from(whole & u128::from(u64::MAX)).unwrap_or(0)
        };
        self.core_cycles = self.core_cycles.wrapping_add(added(self.aperf_remainder, rate_a));
        self.reference_cycles =
            self.reference_cycles.wrapping_add(added(self.mperf_remainder, rate_m));
        let (mut at, mut remaining) = (at_ns, dt);
        while remaining > 0 {
            let total_a = self.aperf_remainder + rate_a * u128::from(remaining);
            let total_m = self.mperf_remainder + rate_m * u128::from(remaining);
            let room_a = COUNTER_MODULUS - u128::from(self.counters.aperf);
            let room_m = COUNTER_MODULUS - u128::from(self.counters.mperf);
            if total_a / COUNT_SCALE < room_a && total_m / COUNT_SCALE < room_m {
                self.counters.aperf += u64::try_from(total_a / COUNT_SCALE).unwrap_or(0);
                self.counters.mperf += u64::try_from(total_m / COUNT_SCALE).unwrap_or(0);
                self.aperf_remainder = total_a % COUNT_SCALE;
                self.mperf_remainder = total_m % COUNT_SCALE;
                return;
            }
            // The first nanosecond at which a counter reaches 2^64.
            let reach = |room: u128, remainder: u128, rate: u128| {
                if rate == 0 {
                    u128::MAX
                } else {
                    (room * COUNT_SCALE).saturating_sub(remainder).div_ceil(rate).max(1)
                }
            };
            let step = reach(room_a, self.aperf_remainder, rate_a)
                .min(reach(room_m, self.mperf_remainder, rate_m))
                .min(u128::from(remaining));
            let step_ns = u64::try_from(step).unwrap_or(remaining);
            let total_a = self.aperf_remainder + rate_a * step;
            let total_m = self.mperf_remainder + rate_m * step;
            // Both restart at zero; the overflowing one keeps the counts past 2^64.
            let wrap = |value: u64, total: u128| {
                let sum = u128::from(value) + total / COUNT_SCALE;
                if sum >= COUNTER_MODULUS {
                    u64::try_from(sum - COUNTER_MODULUS).unwrap_or(0)
                } else {
                    0
                }
            };
            self.counters = CounterPair {
                aperf: wrap(self.counters.aperf, total_a),
                mperf: wrap(self.counters.mperf, total_m),
            };
            self.aperf_remainder = total_a % COUNT_SCALE;
            self.mperf_remainder = total_m % COUNT_SCALE;
            at += step_ns;
            remaining -= step_ns;
            self.discontinuities
                .push(Discontinuity { at_ns: at, kind: DiscontinuityKind::Overflow });
        }
    }
}

/// The simulated machine.
#[derive(Debug)]
pub struct Machine {
    /// The rate of the nominal counts the PEP should report (MPERF's; on ARM64 the rate it
    /// scales the constant counter to), MHz.
    nominal_mhz: u32,
    /// The nominal counter's rate (MPERF's; on ARM64 the constant counter's, `cntfrq_hz`), Hz.
    nominal_hz: u64,
    cpu: CpuModel,
    /// Per processor; processors that the same phases cover share one.
    timelines: Vec<Arc<Timeline>>,
    processors: Vec<Mutex<ProcessorState>>,
    /// Per processor: how far its own time has advanced (see [`Machine::processor_now_ns`]).
    processor_clocks: Vec<AtomicU64>,
    clock_ns: AtomicU64,
    /// The clock time runtime time 0 maps to (`u64::MAX` before the runtime starts).
    origin_ns: AtomicU64,
    /// The architectural PMU's machine-wide state (`fixed-pmc`).
    pmu: pmu::MachinePmu,
    /// Whether any `smi` was ever armed (reads skip the check otherwise).
    smi_armed: AtomicBool,
}

fn lock(state: &Mutex<ProcessorState>) -> MutexGuard<'_, ProcessorState> {
    // A panic while holding the lock leaves consistent integers behind; keep going.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Machine {
    /// The machine a scenario describes, at clock time 0, with the counters at the values a
    /// machine that has been up for a while has (distinct per processor, far from 0 and 2^64).
    #[must_use]
    pub fn new(scenario: &Scenario) -> Self {
        let timelines = Timeline::for_all_processors(scenario);
        // ARM64: the PEP reports the constant counter scaled to the configured nominal rate,
        // else to the rate it measures at initialisation: processor 0's frequency then.
        let reported_mhz = match scenario.platform.arm {
            Some(_) => scenario.config.nominal_mhz.unwrap_or_else(|| {
                timelines.first().map_or(scenario.platform.nominal_mhz, |timeline| {
                    timeline.load_at(0).0.frequency_mhz
                })
            }),
            None => scenario.platform.nominal_mhz,
        };
        let mut machine =
            Self::with_shared_timelines(reported_mhz, CpuModel::new(scenario), timelines);
        if let Some(arm) = scenario.platform.arm {
            machine.nominal_hz = u64::from(arm.cntfrq_hz);
        }
        machine.set_pmu_busy(scenario.platform.pmu_busy);
        machine
    }

    /// A machine with explicit timelines (one per processor).
    #[must_use]
    pub fn with_timelines(nominal_mhz: u32, cpu: CpuModel, timelines: Vec<Timeline>) -> Self {
        Self::with_shared_timelines(nominal_mhz, cpu, timelines.into_iter().map(Arc::new).collect())
    }

    /// A machine with explicit timelines (one per processor, shared where equal).
    #[must_use]
    pub fn with_shared_timelines(
        nominal_mhz: u32,
        cpu: CpuModel,
        timelines: Vec<Arc<Timeline>>,
    ) -> Self {
        let pmc_width = cpu.pmc_width;
        let processor_clocks = (0..timelines.len()).map(|_| AtomicU64::new(0)).collect();
        let processors = (0..timelines.len())
            .map(|index| {
                let scale = u64::try_from(index).unwrap_or(0) + 1;
                Mutex::new(ProcessorState {
                    counters: CounterPair {
                        aperf: scale * 7_919_000_003,
                        mperf: scale * 6_007_000_001,
                    },
                    aperf_remainder: 0,
                    mperf_remainder: 0,
                    synced_ns: 0,
                    segment_hint: 0,
                    smi: None,
                    discontinuities: Vec::new(),
                    msr_faults: 0,
                    core_cycles: 0,
                    reference_cycles: 0,
                    pmu: pmu::ProcessorPmu::new(index, pmc_width),
                    powered_off: false,
                    zeroed: false,
                })
            })
            .collect();
        Self {
            nominal_mhz,
            nominal_hz: u64::from(nominal_mhz) * 1_000_000,
            cpu,
            timelines,
            processors,
            processor_clocks,
            clock_ns: AtomicU64::new(0),
            origin_ns: AtomicU64::new(u64::MAX),
            pmu: pmu::MachinePmu::new(pmc_width),
            smi_armed: AtomicBool::new(false),
        }
    }

    /// The CPU model (CPUID and MSR contents).
    #[must_use]
    pub const fn cpu(&self) -> &CpuModel {
        &self.cpu
    }

    /// The number of processors.
    #[must_use]
    pub fn processor_count(&self) -> u32 {
        u32::try_from(self.processors.len()).unwrap_or(u32::MAX)
    }

    /// MPERF's rate in C0, MHz.
    #[must_use]
    pub const fn nominal_mhz(&self) -> u32 {
        self.nominal_mhz
    }

    /// Processor `index`'s timeline.
    #[must_use]
    pub fn timeline(&self, index: u32) -> Option<&Timeline> {
        self.timelines.get(usize::try_from(index).ok()?).map(AsRef::as_ref)
    }

    /// The clock, ns since power-on.
    #[must_use]
    pub fn now_ns(&self) -> u64 {
        self.clock_ns.load(Ordering::Acquire)
    }

    /// Moves the clock forward to `at_ns` (never backwards).
    pub fn advance_clock_to(&self, at_ns: u64) {
        self.clock_ns.fetch_max(at_ns, Ordering::AcqRel);
    }

    /// Processor `index`'s time: the later of the machine's clock and the processor's own
    /// clock. A single-threaded runtime moves the machine's clock; a runtime with a thread per
    /// processor leaves it at the runtime's origin and each thread moves its own processors'
    /// clocks, so that a processor's time — and everything computed from it — depends only on
    /// what its own thread did, never on how the threads interleave. Every per-processor
    /// operation (counters, faults, resets, the time source as seen on the processor) uses
    /// this time.
    #[must_use]
    pub fn processor_now_ns(&self, index: u32) -> u64 {
        let own = usize::try_from(index)
            .ok()
            .and_then(|slot| self.processor_clocks.get(slot))
            .map_or(0, |clock| clock.load(Ordering::Acquire));
        own.max(self.now_ns())
    }

    /// Moves processor `index`'s own clock forward to `at_ns` (never backwards).
    pub fn advance_processor_clock_to(&self, index: u32, at_ns: u64) {
        if let Some(clock) =
            usize::try_from(index).ok().and_then(|slot| self.processor_clocks.get(slot))
        {
            clock.fetch_max(at_ns, Ordering::AcqRel);
        }
    }

    /// Arms an `smi` on processor `index`: the first actual-count read from now on is
    /// interrupted for `duration_ns`, and with `period_ns`, one every `period_ns` after it.
    pub fn arm_smi(&self, index: u32, duration_ns: u64, period_ns: Option<u64>) {
        let now = self.processor_now_ns(index);
        let _ = self.with_state(index, |state| {
            state.smi = Some(Smi { due: now, stall: duration_ns, period: period_ns });
        });
        self.smi_armed.store(true, Ordering::Release);
    }

    /// The stall of the SMI due on processor `index` now, if one is (it is then spent: a
    /// periodic one becomes due again one period after it was due, past the stall).
    pub fn take_smi(&self, index: u32) -> Option<u64> {
        if !self.smi_armed.load(Ordering::Acquire) {
            return None;
        }
        let now = self.processor_now_ns(index);
        self.with_state(index, |state| {
            let smi = state.smi.as_mut().filter(|smi| smi.due <= now)?;
            let stall = smi.stall;
            match smi.period {
                Some(period) => {
                    let after = now.saturating_add(stall);
                    while smi.due <= after {
                        smi.due = smi.due.saturating_add(period.max(1));
                    }
                }
                None => state.smi = None,
            }
            Some(stall)
        })
        .flatten()
    }

    /// Lets `ns` pass on processor `index` alone (the time an instruction or an interrupt
    /// takes on it).
    pub fn spend(&self, index: u32, ns: u64) {
        let now = self.processor_now_ns(index);
        self.advance_processor_clock_to(index, now.saturating_add(ns));
    }

    /// Maps runtime time 0 to the current clock.
    pub fn start_runtime(&self) {
        self.origin_ns.store(self.now_ns(), Ordering::Release);
    }

    /// The clock time of runtime time 0 (`None` before the runtime starts).
    #[must_use]
    pub fn origin_ns(&self) -> Option<u64> {
        let origin = self.origin_ns.load(Ordering::Acquire);
        (origin != u64::MAX).then_some(origin)
    }

    /// The runtime time of clock time `at_ns` (0 before the runtime starts).
    #[must_use]
    pub fn runtime_ns(&self, at_ns: u64) -> u64 {
        self.origin_ns().map_or(0, |origin| at_ns.saturating_sub(origin))
    }

    /// The load of processor `index` at clock time `at_ns` and the clock time it next changes.
    fn load_at(&self, index: usize, at_ns: u64) -> (Load, u64) {
        let Some(timeline) = self.timelines.get(index) else {
            return (Load { frequency_mhz: self.nominal_mhz, busy_percent: 0 }, u64::MAX);
        };
        match self.origin_ns() {
            Some(origin) if at_ns >= origin => {
                let (load, change) = timeline.load_at(at_ns - origin);
                (load, change.saturating_add(origin))
            }
            // Before the runtime: the load of runtime time 0, until the runtime starts.
            Some(origin) => (timeline.load_at(0).0, origin),
            None => (timeline.load_at(0).0, u64::MAX),
        }
    }

    /// Brings a processor's counters up to clock time `to_ns` (a processor that is off counts
    /// nothing).
    fn sync(&self, index: usize, state: &mut ProcessorState, to_ns: u64) {
        if state.powered_off {
            state.synced_ns = state.synced_ns.max(to_ns);
            return;
        }
        while state.synced_ns < to_ns {
            let at = state.synced_ns;
            if let (Some(timeline), Some(origin)) = (self.timelines.get(index), self.origin_ns())
                && at >= origin
            {
                // In the runtime: a walk along the timeline from where the last one ended.
                let mut spans =
                    timeline.spans_near(at - origin, to_ns - origin, state.segment_hint);
                for (start, end, load) in &mut spans {
                    state.run(start + origin, end - start, load, self.nominal_hz);
                    state.synced_ns = end + origin;
                }
                state.segment_hint = spans.position();
                state.synced_ns = to_ns;
                continue;
            }
            let (load, change) = self.load_at(index, at);
            let end = change.min(to_ns);
            state.run(at, end - at, load, self.nominal_hz);
            state.synced_ns = end;
        }
    }

    fn with_state<R>(&self, index: u32, f: impl FnOnce(&mut ProcessorState) -> R) -> Option<R> {
        let slot = usize::try_from(index).ok()?;
        let mutex = self.processors.get(slot)?;
        let mut state = lock(mutex);
        self.sync(slot, &mut state, self.processor_now_ns(index));
        Some(f(&mut state))
    }

    /// Processor `index`'s counters now, as software reads them (zero after a
    /// `counters-zero` event).
    #[must_use]
    pub fn counters(&self, index: u32) -> Option<CounterPair> {
        self.with_state(index, |state| {
            let exposed = !state.zeroed;
            if exposed { state.counters } else { CounterPair::default() }
        })
    }

    /// From now on processor `index`'s counters read as zero (a `counters-zero` event).
    pub fn zero_counters(&self, index: u32) {
        let now = self.processor_now_ns(index);
        self.with_state(index, |state| {
            if !state.zeroed {
                state.zeroed = true;
                state
                    .discontinuities
                    .push(Discontinuity { at_ns: now, kind: DiscontinuityKind::Zeroed });
            }
        });
    }

    /// Processor `index`'s counters read their real values again after
    /// [`Self::zero_counters`].
    pub fn expose_counters(&self, index: u32) {
        let now = self.processor_now_ns(index);
        self.with_state(index, |state| {
            if state.zeroed {
                state.zeroed = false;
                state
                    .discontinuities
                    .push(Discontinuity { at_ns: now, kind: DiscontinuityKind::Exposed });
            }
        });
    }

    /// Powers processor `index` off (a system sleep state): its counters stop.
    pub fn power_off(&self, index: u32) {
        self.with_state(index, |state| state.powered_off = true);
    }

    /// Powers processor `index` on again after a system sleep: a processor reset, so both
    /// counters restart at zero and count from now on, and the PMU's controls are at their
    /// reset values (the fixed counters disabled until software enables them again).
    ///
    /// The counters then count [`RESTART_C0_NS`] of C0 at the processor's current frequency:
    /// the resume path that runs on it before the OS sends `RESUME_FROM_SYSTEM_STATE`
    /// (modelled as the sleep's last moments, so no clock moves).
    pub fn power_on(&self, index: u32) {
        let now = self.processor_now_ns(index);
        let width = self.fixed_counter_width();
        let frequency_mhz = self.frequency_at(index, now);
        self.with_state(index, |state| {
            if let Some(width) = width {
                state.reset_pmu(width);
            }
            state.powered_off = false;
            state.counters = CounterPair::default();
            state.aperf_remainder = 0;
            state.mperf_remainder = 0;
            state
                .discontinuities
                .push(Discontinuity { at_ns: now, kind: DiscontinuityKind::PowerOn });
            state.run_restart_code(now, frequency_mhz, self.nominal_hz);
        });
    }

    /// Processor `index`'s C0 frequency at clock time `at_ns` (its timeline's, busy or not).
    fn frequency_at(&self, index: u32, at_ns: u64) -> u32 {
        usize::try_from(index)
            .map_or(self.nominal_mhz, |slot| self.load_at(slot, at_ns).0.frequency_mhz)
    }

    /// Whether processor `index`'s MSR reads fault now (an `msr-fault` window is open).
    #[must_use]
    pub fn msr_faulting(&self, index: u32) -> bool {
        self.with_state(index, |state| state.msr_faults > 0).unwrap_or(true)
    }

    /// Opens (`true`) or closes (`false`) an MSR-fault window on processor `index`.
    pub fn set_msr_fault(&self, index: u32, faulting: bool) {
        self.with_state(index, |state| {
            state.msr_faults =
                if faulting { state.msr_faults + 1 } else { state.msr_faults.saturating_sub(1) };
        });
    }

    /// Sets processor `index`'s counters to zero (a `counter-reset` event); they then count
    /// [`RESTART_C0_NS`] of C0, the code that wrote them on that processor.
    pub fn reset_counters(&self, index: u32) {
        let now = self.processor_now_ns(index);
        let frequency_mhz = self.frequency_at(index, now);
        self.with_state(index, |state| {
            state.counters = CounterPair::default();
            state.aperf_remainder = 0;
            state.mperf_remainder = 0;
            state
                .discontinuities
                .push(Discontinuity { at_ns: now, kind: DiscontinuityKind::Reset });
            state.run_restart_code(now, frequency_mhz, self.nominal_hz);
        });
    }

    /// Sets processor `index`'s counters just below 2^64 so that APERF overflows exactly
    /// `wrap_after_ns` from now (MPERF, set twice as far from 2^64, would take about twice as
    /// long; the APERF overflow restarts both). When the processor does not run in C0 in that
    /// time, both are set 2^32 below 2^64. Returns the values set.
    pub fn set_near_wrap(&self, index: u32, wrap_after_ns: u64) -> Option<CounterPair> {
        let now = self.processor_now_ns(index);
        let slot = usize::try_from(index).ok()?;
        let (mut scaled_a, mut scaled_m) = (0_u128, 0_u128);
        let mut at = now;
        let end = now.saturating_add(wrap_after_ns);
        while at < end {
            let (load, change) = self.load_at(slot, at);
            let until = change.min(end);
            let busy = u128::from(load.busy_percent);
            let dt = u128::from(until - at);
            scaled_a += u128::from(load.frequency_mhz) * 1_000_000 * busy * dt;
            scaled_m += u128::from(self.nominal_hz) * busy * dt;
            at = until;
        }
        self.with_state(index, |state| {
            // Whole counts the next `wrap_after_ns` add, given the fractions carried now.
            let counts_a = (state.aperf_remainder + scaled_a) / COUNT_SCALE;
            let counts_m = (state.mperf_remainder + scaled_m) / COUNT_SCALE;
            let below = |distance: u128| {
                u64::try_from(COUNTER_MODULUS - distance.clamp(1, 1 << 62)).unwrap_or(u64::MAX)
            };
            state.counters = if counts_a == 0 || counts_m == 0 {
                CounterPair { aperf: below(1 << 32), mperf: below(1 << 32) }
            } else {
                CounterPair { aperf: below(counts_a), mperf: below(2 * counts_m + 1) }
            };
            state
                .discontinuities
                .push(Discontinuity { at_ns: now, kind: DiscontinuityKind::NearWrap });
            state.counters
        })
    }

    /// Busy-waits `microseconds` on processor `index`: the processor runs in C0 at its current
    /// frequency while the clock advances (`KeStallExecutionProcessor`).
    pub fn stall(&self, index: u32, microseconds: u32) {
        let dt = u64::from(microseconds) * NS_PER_US;
        let end = self.run_in_c0(index, dt);
        self.advance_clock_to(end);
    }

    /// Runs processor `index` in C0 at its current frequency for `ns` from its own time now;
    /// returns the clock time it reached.
    fn run_in_c0(&self, index: u32, ns: u64) -> u64 {
        let now = self.processor_now_ns(index);
        if let Ok(slot) = usize::try_from(index) {
            let (load, _) = self.load_at(slot, now);
            let _ = self.with_state(index, |state| {
                state.run(
                    now,
                    ns,
                    Load { frequency_mhz: load.frequency_mhz, busy_percent: 100 },
                    self.nominal_hz,
                );
                state.synced_ns = now + ns;
            });
        }
        self.advance_processor_clock_to(index, now + ns);
        now + ns
    }

    /// Lets `ns` pass on processor `index` alone while it executes code: in C0 at its current
    /// frequency before the runtime starts (the driver initialising, like [`Self::stall`]);
    /// during the runtime the timeline's residency already accounts for the OS's own work,
    /// so the time passes at the timeline's load ([`Self::spend`]).
    pub fn execute(&self, index: u32, ns: u64) {
        if ns == 0 {
            return;
        }
        if self.origin_ns().is_some() {
            self.spend(index, ns);
        } else {
            let _ = self.run_in_c0(index, ns);
        }
    }

    /// Processor `index`'s counter discontinuities recorded after the first `known` (the list
    /// only grows): what a reader that took `known` of them before has not seen.
    #[must_use]
    pub fn discontinuities_since(&self, index: u32, known: usize) -> Vec<Discontinuity> {
        self.with_state(index, |state| {
            state.discontinuities.get(known..).unwrap_or_default().to_vec()
        })
        .unwrap_or_default()
    }

    /// Processor `index`'s counter discontinuities so far.
    #[must_use]
    pub fn discontinuities(&self, index: u32) -> Vec<Discontinuity> {
        self.with_state(index, |state| state.discontinuities.clone()).unwrap_or_default()
    }

    /// Processor `index`'s true activity between clock times `from_ns` and `to_ns`, both at or
    /// after the runtime's start.
    #[must_use]
    pub fn activity(&self, index: u32, from_ns: u64, to_ns: u64) -> Activity {
        self.timeline(index).map_or_else(Activity::default, |timeline| {
            timeline.activity(self.runtime_ns(from_ns), self.runtime_ns(to_ns))
        })
    }

    /// The slowest and fastest C0 frequencies of processor `index` between clock times
    /// `from_ns` and `to_ns` (at or after the runtime's start).
    #[must_use]
    pub fn frequency_range(&self, index: u32, from_ns: u64, to_ns: u64) -> Option<(u32, u32)> {
        self.timeline(index)?.frequency_range(self.runtime_ns(from_ns), self.runtime_ns(to_ns))
    }

    /// [`Self::activity`] and [`Self::frequency_range`] in one walk of the timeline, starting
    /// near segment `hint` (updated to where the walk ended: intervals move forward).
    #[must_use]
    pub fn interval_truth(
        &self,
        index: u32,
        from_ns: u64,
        to_ns: u64,
        hint: &mut usize,
    ) -> (Activity, Option<(u32, u32)>) {
        let mut activity = Activity::default();
        let mut range: Option<(u32, u32)> = None;
        let Some(timeline) = self.timeline(index) else { return (activity, range) };
        let mut spans =
            timeline.spans_near(self.runtime_ns(from_ns), self.runtime_ns(to_ns), *hint);
        for (start, end, load) in &mut spans {
            let dt = u128::from(end - start);
            let busy = u128::from(load.busy_percent);
            activity.c0 += busy * dt;
            activity.cycles += u128::from(load.frequency_mhz) * busy * dt;
            if load.busy_percent > 0 {
                let f = load.frequency_mhz;
                range = Some(range.map_or((f, f), |(low, high)| (low.min(f), high.max(f))));
            }
        }
        *hint = spans.position();
        (activity, range)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod clock_tests;
