//! `ppm-sim bench`: the cost of one `PEP_NOTIFY_PPM_FEEDBACK_READ` through the C ABI.
//!
//! The engine runs on [`BenchPlatform`], a trivial platform whose counter MSRs return fixed,
//! incrementing values and whose interrupt masking does nothing, so the measurement is the
//! engine's own path: callback entry, handle validation, processor check, two MSR reads,
//! accumulation. The measured loop contains only the callback call (for `callgrind`).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ppm_engine::abi::{
    FALSE, PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE, PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_PPM_FEEDBACK_READ, PEP_PREPARE_DEVICE, PEP_REGISTER_DEVICE_V2, UNICODE_STRING,
};
use ppm_engine::platform::{CpuidResult, MsrFault, PerformanceCounter, Platform};
use ppm_engine::{Config, Pep, ProcessorSlot, pep_information};

use crate::cpu::msr;

thread_local! {
    static INSTANCE: Cell<*const Pep<BenchPlatform>> = const { Cell::new(std::ptr::null()) };
}

/// A fixed-value platform: GenuineIntel with APERF/MPERF and a 2000 MHz base frequency;
/// APERF and MPERF return 3 000 and 2 000 counts more at every read; everything else faults.
#[derive(Debug, Default)]
pub struct BenchPlatform {
    reads: AtomicU64,
    ticks: AtomicU64,
}

impl Platform for BenchPlatform {
    fn instance() -> Option<&'static Pep<Self>> {
        let pointer = INSTANCE.with(Cell::get);
        // SAFETY: `bench` sets INSTANCE to its boxed, never-moved `Pep` only for the duration
        // of the calls it makes and clears it before dropping the `Pep`; the engine uses the
        // reference only within the callback.
        unsafe { pointer.as_ref() }
    }

    fn current_processor_index(&self) -> u32 {
        0
    }

    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        match leaf {
            0 => CpuidResult { eax: 0x16, ebx: 0x756E_6547, ecx: 0x6C65_746E, edx: 0x4965_6E69 },
            1 => CpuidResult { eax: 0x0008_06C1, ebx: 0, ecx: 0, edx: 1 << 5 },
            6 => CpuidResult { eax: 0, ebx: 0, ecx: 1, edx: 0 },
            0x16 => CpuidResult { eax: 2000, ebx: 4000, ecx: 100, edx: 0 },
            _ => CpuidResult::default(),
        }
    }

    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        let step = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        match number {
            msr::IA32_APERF => Ok(step * 3_000),
            msr::IA32_MPERF => Ok(step * 2_000),
            _ => Err(MsrFault),
        }
    }

    fn with_interrupts_masked<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }

    fn performance_counter(&self) -> PerformanceCounter {
        PerformanceCounter { ticks: self.ticks.load(Ordering::Relaxed), frequency: 10_000_000 }
    }

    fn stall_microseconds(&self, microseconds: u32) {
        self.ticks.fetch_add(u64::from(microseconds) * 10, Ordering::Relaxed);
    }
}

/// A benchmark's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchResult {
    /// Calls made.
    pub iterations: u64,
    /// Wall time of the measured loop.
    pub elapsed: Duration,
    /// Whether every call was served (checked after the loop from the accumulated counts).
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

/// Sets INSTANCE for the guard's life.
struct Entered;

impl Entered {
    fn new(pep: &Pep<BenchPlatform>) -> Self {
        INSTANCE.with(|instance| instance.set(std::ptr::from_ref(pep)));
        Self
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        INSTANCE.with(|instance| instance.set(std::ptr::null()));
    }
}

/// Makes `iterations` `FEEDBACK_READ` calls through the engine's C callback.
///
/// # Errors
/// A message when the engine did not accept the benchmark's processor or refused a read.
pub fn run(iterations: u64) -> Result<BenchResult, String> {
    let slots: &'static [ProcessorSlot] = Box::leak(Box::new([ProcessorSlot::new()]));
    let pep = Box::new(Pep::new(BenchPlatform::default(), &Config::new(), slots));
    let info = pep_information::<BenchPlatform>();
    let (Some(dpm), Some(ppm)) = (info.AcceptDeviceNotification, info.AcceptProcessorNotification)
    else {
        return Err("the engine's PEP_INFORMATION lacks a callback".to_owned());
    };
    let _entered = Entered::new(&pep);
    let mut id: Vec<u16> = "\\_SB.CPU0".encode_utf16().collect();
    let length = u16::try_from(id.len() * 2).unwrap_or(0);
    let mut string =
        UNICODE_STRING { Length: length, MaximumLength: length, Buffer: id.as_mut_ptr() };
    let mut prepare = PEP_PREPARE_DEVICE::zeroed();
    prepare.DeviceId = std::ptr::from_mut(&mut string).cast_const();
    // SAFETY: a PEP_PREPARE_DEVICE whose id string and buffer live across the call.
    let _ =
        unsafe { dpm(PEP_DPM_PREPARE_DEVICE, std::ptr::from_mut(&mut prepare).cast::<c_void>()) };
    let mut register = PEP_REGISTER_DEVICE_V2::zeroed();
    register.DeviceId = prepare.DeviceId;
    register.KernelHandle = std::ptr::without_provenance_mut(0x1000);
    // SAFETY: a PEP_REGISTER_DEVICE_V2 whose id string lives across the call (NULL Register).
    let _ =
        unsafe { dpm(PEP_DPM_REGISTER_DEVICE, std::ptr::from_mut(&mut register).cast::<c_void>()) };
    let handle = register.DeviceHandle;
    if handle.is_null() {
        return Err("the engine did not register the benchmark processor".to_owned());
    }
    let mut read = PEP_PPM_FEEDBACK_READ::zeroed();
    let data = std::ptr::from_mut(&mut read).cast::<c_void>();
    // SAFETY: `data` points to a PEP_PPM_FEEDBACK_READ that outlives the call. (Baseline read.)
    if unsafe { ppm(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, data) } == FALSE {
        return Err("the engine refused the benchmark's first read".to_owned());
    }
    let start = Instant::now();
    for _ in 0..iterations {
        // SAFETY: as above.
        std::hint::black_box(unsafe { ppm(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, data) });
    }
    let elapsed = start.elapsed();
    // SAFETY: the union's members are plain integers: any bit pattern is valid.
    let nominal = unsafe { read.__bindgen_anon_1.__bindgen_anon_1.NominalCount };
    // Every served read adds 2 000 nominal counts per MSR read pair (4 000 per call here: the
    // fixed platform advances on every read).
    let served = iterations == 0 || nominal >= iterations * 2_000;
    Ok(BenchResult { iterations, elapsed, served })
}
