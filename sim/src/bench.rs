//! `ppm-sim bench`: the cost of one PPM notification through the C ABI.
//!
//! The engine runs on [`BenchPlatform`], a trivial platform: CPUID of a GenuineIntel part with
//! APERF/MPERF and a 2000 MHz base frequency, counter MSRs that return growing values (a plain
//! load and store, no atomic read-modify-write), interrupt masking that does nothing (the
//! kernel's `pushfq`/`cli`/`sti` add a few instructions) and a current processor the harness
//! sets (one thread-local load, like the kernel's per-processor register). So what is measured
//! is the engine's own path: callback entry, instance lookup, handle validation, the
//! notification's work.
//!
//! `P` processors (1..=[`MAX_PROCESSORS`]) are offered, registered and bound (a first
//! `FEEDBACK_READ` on each) before the measured loop, so the processor table is as full as on
//! a `P`-processor machine. The loop makes `N` calls round robin over the processors; per call
//! it only sets the current processor (one thread-local store), calls the callback through a
//! function pointer with that processor's handle and its own data buffer, and counts the calls
//! served (one add). A cost that grows with `P` would be the engine's.
//!
//! [`Notification::PlatformCounterRead`] is the baseline: a callback with the same C signature
//! that does only what any PEP must do for a read — the platform's two counter reads with
//! interrupts masked, written to the buffer — through the same loop. `feedback-read` minus
//! `platform-counter-read` is what the engine adds beyond the platform's counter read
//! (`scripts/measure-read-path.sh` measures it in instructions with callgrind).

use std::cell::Cell;
use std::ffi::c_void;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ppm_caller::{Callbacks, ThreadHost};
use ppm_engine::abi::{
    BOOLEAN, FALSE, PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1, PEP_PPM_QUERY_CAPABILITIES,
    PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_FEEDBACK_COUNTERS, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEPHANDLE, TRUE, ULONG,
};
use ppm_engine::arm64::SystemRegister;
use ppm_engine::platform::{
    CpuidResult, InterruptsMasked, MsrFault, Passive, PerformanceCounter, Platform,
};
use ppm_engine::{Config, Pep, PepHost, ProcessorSlot, pep_information};

use crate::cpu::msr;

/// The most processors `bench` registers (as Windows' maximum).
pub const MAX_PROCESSORS: u32 = 2048;

thread_local! {
    /// The processor the calling thread runs as: the benchmark's stand-in for
    /// [`crate::platform::ambient`]'s, set by the harness.
    static CURRENT: Cell<u32> = const { Cell::new(0) };
}

/// A fixed-value platform for the benchmark.
///
/// GenuineIntel with APERF/MPERF and a 2000 MHz base frequency; APERF and MPERF return 3 000
/// and 2 000 counts more at every read; everything else faults. The current processor is what
/// the harness set.
#[derive(Debug, Default)]
pub struct BenchPlatform {
    reads: AtomicU64,
    ticks: AtomicU64,
    timestamp: AtomicU64,
    /// ARM64: no CPUID, no MSRs; the Activity Monitors at a 24 MHz constant rate, counter 0
    /// 3 000 and counter 1 30 counts more at every read (2 400 MHz).
    arm: bool,
}

/// The architecture a benchmark's platform models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Architecture {
    /// GenuineIntel with APERF/MPERF.
    X64,
    /// ARM64 with the Activity Monitors.
    Arm64,
}

impl Architecture {
    /// The name `ppm-sim bench --arch` takes and prints, with the counters it reads.
    #[must_use]
    pub const fn description(self) -> &'static str {
        match self {
            Self::X64 => "x64 (APERF/MPERF)",
            Self::Arm64 => "arm64 (the Activity Monitors)",
        }
    }
}

impl Platform for BenchPlatform {
    #[inline]
    fn current_processor_index(&self) -> u32 {
        CURRENT.with(Cell::get)
    }

    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        if self.arm {
            return CpuidResult::default();
        }
        match leaf {
            0 => CpuidResult { eax: 0x16, ebx: 0x756E_6547, ecx: 0x6C65_746E, edx: 0x4965_6E69 },
            1 => CpuidResult { eax: 0x0008_06C1, ebx: 0, ecx: 0, edx: 1 << 5 },
            6 => CpuidResult { eax: 0, ebx: 0, ecx: 1, edx: 0 },
            0x16 => CpuidResult { eax: 2000, ebx: 4000, ecx: 100, edx: 0 },
            _ => CpuidResult::default(),
        }
    }

    #[inline]
    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        // One thread runs the benchmark: a plain load and store, no atomic read-modify-write.
        let step = self.reads.load(Ordering::Relaxed).wrapping_add(1);
        self.reads.store(step, Ordering::Relaxed);
        match number {
            msr::IA32_APERF => Ok(step.wrapping_mul(3_000)),
            msr::IA32_MPERF => Ok(step.wrapping_mul(2_000)),
            _ => Err(MsrFault),
        }
    }

    #[inline]
    fn read_system_register(&self, register: SystemRegister) -> Result<u64, MsrFault> {
        if !self.arm {
            return Err(MsrFault);
        }
        let step = self.reads.load(Ordering::Relaxed).wrapping_add(1);
        self.reads.store(step, Ordering::Relaxed);
        match register {
            SystemRegister::IdAa64Pfr0El1 => Ok(1 << 44),
            SystemRegister::AmcgcrEl0 => Ok(4),
            SystemRegister::Amcntenset0El0 => Ok(0b1111),
            SystemRegister::CntfrqEl0 => Ok(24_000_000),
            SystemRegister::Amevcntr00El0 => Ok(step.wrapping_mul(3_000)),
            SystemRegister::Amevcntr01El0 => Ok(step.wrapping_mul(30)),
        }
    }

    #[inline]
    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        // SAFETY: one thread runs the benchmark and no interrupt reaches it: the section is
        // as masked as the engine needs, and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        f(&masked)
    }

    #[inline]
    fn read_timestamp(&self) -> Option<u64> {
        // A clock that advances a little per read: pairs never look stalled.
        let now = self.timestamp.load(Ordering::Relaxed).wrapping_add(40);
        self.timestamp.store(now, Ordering::Relaxed);
        Some(now)
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter { ticks: self.ticks.load(Ordering::Relaxed), frequency: 10_000_000 }
    }

    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        self.ticks.fetch_add(u64::from(microseconds) * 10, Ordering::Relaxed);
    }
}

/// The notification a benchmark calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notification {
    /// `PEP_NOTIFY_PPM_FEEDBACK_READ` of counter 0.
    FeedbackRead,
    /// `PEP_NOTIFY_PPM_QUERY_CAPABILITIES`.
    QueryCapabilities,
    /// `PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS` with `Count` 1.
    QueryFeedbackCounters,
    /// `PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`.
    QueryPerfCapabilities,
    /// `PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO` of the processor's own domain.
    QueryDomainInfo,
    /// The baseline: not the engine, but a callback that only performs the platform's two
    /// counter reads (interrupts masked) and writes them to the `PEP_PPM_FEEDBACK_READ`.
    PlatformCounterRead,
}

impl Notification {
    /// Every notification, with its command-line name.
    pub const CHOICES: [(&'static str, Self); 6] = [
        ("feedback-read", Self::FeedbackRead),
        ("query-capabilities", Self::QueryCapabilities),
        ("query-feedback-counters", Self::QueryFeedbackCounters),
        ("query-perf-capabilities", Self::QueryPerfCapabilities),
        ("query-domain-info", Self::QueryDomainInfo),
        ("platform-counter-read", Self::PlatformCounterRead),
    ];

    /// The notification named `name` on the command line.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::CHOICES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, notification)| *notification)
    }

    /// The command-line name.
    #[must_use]
    pub fn name(self) -> &'static str {
        Self::CHOICES.iter().find(|(_, known)| *known == self).map_or("?", |(name, _)| name)
    }

    /// The notification's Windows name: `PEP_NOTIFY_PPM_` and [`ppm_caller::names::ppm`]'s.
    #[must_use]
    pub fn windows_name(self) -> String {
        if self == Self::PlatformCounterRead {
            return "baseline platform counter read".to_owned();
        }
        format!("PEP_NOTIFY_PPM_{}", ppm_caller::names::ppm(self.id()).unwrap_or("?"))
    }

    const fn id(self) -> ULONG {
        match self {
            Self::FeedbackRead | Self::PlatformCounterRead => PEP_NOTIFY_PPM_FEEDBACK_READ,
            Self::QueryCapabilities => PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
            Self::QueryFeedbackCounters => PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
            Self::QueryPerfCapabilities => PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
            Self::QueryDomainInfo => PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
        }
    }
}

/// A benchmark's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchResult {
    /// The notification called.
    pub notification: Notification,
    /// Processors registered (and called round robin).
    pub processors: u32,
    /// Calls made.
    pub iterations: u64,
    /// Wall time of the measured loop.
    pub elapsed: Duration,
    /// Whether every call was served (TRUE).
    pub served: bool,
}

impl BenchResult {
    /// Nanoseconds per call.
    #[must_use]
    #[allow(clippy::cast_precision_loss)] // A timing.
    pub fn nanoseconds_per_call(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.iterations.max(1) as f64
    }
}

/// The counter MSRs the baseline reads, from memory as the engine reads its counter setup, so
/// that the platform's read compiles as in the engine rather than for constant MSR numbers
/// (`run` stores them through [`black_box`]).
static BASELINE_MSRS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

/// The baseline callback: the platform's counter read and nothing else.
///
/// # Safety
/// `data` points to a live `PEP_PPM_FEEDBACK_READ`; `bench` has entered its engine.
unsafe extern "C" fn platform_counter_read(
    _handle: PEPHANDLE,
    _notification: ULONG,
    data: *mut c_void,
) -> BOOLEAN {
    let Some(pep) = ThreadHost::<BenchPlatform>::instance() else { return FALSE };
    let platform = pep.platform();
    let counts = platform.with_interrupts_masked(|_| {
        // The platform's part of a read: the pair, bracketed by time stamps (what bounds how
        // far apart its two reads were).
        let [actual_msr, nominal_msr] = &BASELINE_MSRS;
        let start = platform.read_timestamp();
        let (actual, nominal) = if platform.arm {
            (
                platform.read_system_register(SystemRegister::Amevcntr00El0).unwrap_or(0),
                platform.read_system_register(SystemRegister::Amevcntr01El0).unwrap_or(0),
            )
        } else {
            (
                platform.read_msr(actual_msr.load(Ordering::Relaxed)).unwrap_or(0),
                platform.read_msr(nominal_msr.load(Ordering::Relaxed)).unwrap_or(0),
            )
        };
        let end = platform.read_timestamp();
        black_box((start, end));
        PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
            NominalCount: nominal,
            ActualCount: actual,
        }
    });
    let read = data.cast::<PEP_PPM_FEEDBACK_READ>();
    // SAFETY: `data` is a live PEP_PPM_FEEDBACK_READ (caller); the relative view is the union's
    // member at offset 0; taking a field's address reads nothing.
    let union = unsafe { &raw mut (*read).__bindgen_anon_1 };
    // SAFETY: as above: the union is aligned for its member and writable.
    unsafe { union.cast::<PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1>().write(counts) };
    TRUE
}

/// One processor's call: its handle, its index and its own data buffer.
struct Call {
    handle: PEPHANDLE,
    processor: u32,
    data: *mut c_void,
}

/// The data buffers, one per processor, for the notification benchmarked.
enum Buffers {
    Read(Vec<PEP_PPM_FEEDBACK_READ>),
    Capabilities(Vec<PEP_PPM_QUERY_CAPABILITIES>),
    Counters(Vec<PEP_PPM_QUERY_FEEDBACK_COUNTERS>),
    Perf(Vec<PEP_PPM_QUERY_PERF_CAPABILITIES>),
    Domain(Vec<PEP_PPM_QUERY_DOMAIN_INFO>),
}

impl Buffers {
    fn new(notification: Notification, domains: &[u32]) -> Self {
        let count = domains.len();
        match notification {
            Notification::FeedbackRead | Notification::PlatformCounterRead => {
                Self::Read(vec![PEP_PPM_FEEDBACK_READ::zeroed(); count])
            }
            Notification::QueryCapabilities => {
                Self::Capabilities(vec![PEP_PPM_QUERY_CAPABILITIES::zeroed(); count])
            }
            Notification::QueryFeedbackCounters => {
                let mut query = PEP_PPM_QUERY_FEEDBACK_COUNTERS::zeroed();
                query.Count = 1;
                Self::Counters(vec![query; count])
            }
            Notification::QueryPerfCapabilities => {
                Self::Perf(vec![PEP_PPM_QUERY_PERF_CAPABILITIES::zeroed(); count])
            }
            Notification::QueryDomainInfo => Self::Domain(
                domains
                    .iter()
                    .map(|domain| {
                        let mut query = PEP_PPM_QUERY_DOMAIN_INFO::zeroed();
                        query.DomainId = *domain;
                        query
                    })
                    .collect(),
            ),
        }
    }

    fn pointer(&mut self, index: usize) -> *mut c_void {
        fn at<T>(items: &mut [T], index: usize) -> *mut c_void {
            items
                .get_mut(index)
                .map_or(std::ptr::null_mut(), |item| std::ptr::from_mut(item).cast())
        }
        match self {
            Self::Read(items) => at(items, index),
            Self::Capabilities(items) => at(items, index),
            Self::Counters(items) => at(items, index),
            Self::Perf(items) => at(items, index),
            Self::Domain(items) => at(items, index),
        }
    }
}

/// Offers, registers and binds `processors` processors; returns their handles.
fn register(processors: u32) -> Result<Vec<PEPHANDLE>, String> {
    let mut handles = Vec::with_capacity(processors as usize);
    for index in 0..processors {
        // `\_SB.C000`..`\_SB.C7FF`: a default pattern names up to 4096 processors so.
        let id = format!("\\_SB.C{index:03X}");
        let _ = ppm_caller::prepare::<BenchPlatform>(&id);
        let handle = ppm_caller::register::<BenchPlatform>(&id);
        if handle.is_null() {
            return Err(format!("the engine did not register benchmark processor {index}"));
        }
        // Bind the handle to its processor with a first (baseline) read, on that processor.
        CURRENT.with(|current| current.set(index));
        if ppm_caller::read::<BenchPlatform>(handle, 0).is_none() {
            return Err(format!("the engine refused benchmark processor {index}'s first read"));
        }
        handles.push(handle);
    }
    Ok(handles)
}

/// Each processor's perf domain, as `QUERY_PERF_CAPABILITIES` names it.
fn domains(handles: &[PEPHANDLE]) -> Vec<u32> {
    handles
        .iter()
        .zip(0..)
        .map(|(handle, index)| {
            CURRENT.with(|current| current.set(index));
            ppm_caller::query_perf_capabilities::<BenchPlatform>(*handle)
                .map_or(0, |perf| perf.DomainId)
        })
        .collect()
}

/// Makes `iterations` calls of `notification` through the C callback, round robin over
/// `processors` registered processors.
///
/// # Errors
/// A message when `processors` is out of range, or the engine did not accept a benchmark
/// processor or refused its first read.
pub fn run(
    iterations: u64,
    processors: u32,
    notification: Notification,
    architecture: Architecture,
) -> Result<BenchResult, String> {
    if !(1..=MAX_PROCESSORS).contains(&processors) {
        return Err(format!("expected 1..={MAX_PROCESSORS} processors, found {processors}"));
    }
    let slots: &'static [ProcessorSlot] = Box::leak(
        (0..processors).map(|_| ProcessorSlot::new()).collect::<Vec<_>>().into_boxed_slice(),
    );
    let platform = BenchPlatform {
        arm: black_box(architecture == Architecture::Arm64),
        ..BenchPlatform::default()
    };
    // SAFETY: the benchmark's thread is a host thread, at no raised IRQL, and the token lives
    // only for this call.
    let passive = unsafe { Passive::assume() };
    let pep = Box::new(Pep::new(&passive, platform, &Config::new(), slots));
    let information = pep_information::<ThreadHost<BenchPlatform>>();
    let (Some(dpm), Some(ppm)) =
        (information.AcceptDeviceNotification, information.AcceptProcessorNotification)
    else {
        return Err("the engine's PEP_INFORMATION lacks a callback".to_owned());
    };
    let _entered = ppm_caller::enter(&pep);
    let handles = register(processors)?;
    let domains = domains(&handles);
    let mut buffers = Buffers::new(notification, &domains);
    let calls: Vec<Call> = handles
        .iter()
        .zip(0..)
        .map(|(handle, processor)| Call {
            handle: *handle,
            processor,
            data: buffers.pointer(processor as usize),
        })
        .collect();
    BASELINE_MSRS[0].store(black_box(msr::IA32_APERF), Ordering::Relaxed);
    BASELINE_MSRS[1].store(black_box(msr::IA32_MPERF), Ordering::Relaxed);
    let ppm =
        if notification == Notification::PlatformCounterRead { platform_counter_read } else { ppm };
    let callbacks = Callbacks::new(dpm, ppm);
    // Opaque to the optimiser, as for the kernel: an indirect call with a run-time ID.
    let callbacks = black_box(callbacks);
    let id = black_box(notification.id());
    let one = |call: &Call| {
        CURRENT.with(|current| current.set(call.processor));
        // SAFETY: `call.data` points to this processor's buffer of the type `id` documents,
        // alive until `buffers` drops after the loop; the handle is the engine's own.
        u64::from(unsafe { callbacks.ppm_raw(call.handle, id, call.data) })
    };
    let per_round = calls.len() as u64;
    let start = Instant::now();
    let mut served: u64 = 0;
    let mut remaining = iterations;
    while remaining >= per_round {
        for call in &calls {
            served += one(call);
        }
        remaining -= per_round;
    }
    for call in calls.iter().take(usize::try_from(remaining).unwrap_or(usize::MAX)) {
        served += one(call);
    }
    let elapsed = start.elapsed();
    drop(buffers);
    Ok(BenchResult {
        notification,
        processors,
        iterations,
        elapsed,
        served: black_box(served) == iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_notification_is_served_on_every_processor() {
        for architecture in [Architecture::X64, Architecture::Arm64] {
            for (name, notification) in Notification::CHOICES {
                assert_eq!(Notification::from_name(name), Some(notification));
                assert_eq!(notification.name(), name);
                let result = run(1_000, 7, notification, architecture).expect("a benchmark");
                assert!(result.served, "{name} on {architecture:?}");
                assert_eq!((result.iterations, result.processors), (1_000, 7));
            }
        }
        assert!(run(10, 0, Notification::FeedbackRead, Architecture::X64).is_err());
        assert!(
            run(10, MAX_PROCESSORS + 1, Notification::FeedbackRead, Architecture::X64).is_err()
        );
    }
}
