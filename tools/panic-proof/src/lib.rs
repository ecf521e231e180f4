//! A link-time proof that the engine's notification entry points cannot reach a panic.
//!
//! This `no_std` cdylib instantiates the engine for [`ProofPlatform`] and exports what the
//! kernel gets: [`ppm_proof_pep_information`] (the `PEP_INFORMATION` whose
//! `AcceptDeviceNotification` / `AcceptProcessorNotification` PoFx calls) and
//! [`ppm_proof_initialize`] (`Pep::new` on any configuration, what `DriverEntry` runs). Its
//! panic handler calls `ppm_engine_panic_is_reachable`, a symbol defined nowhere, and `build.rs`
//! links with `--no-undefined`. After optimisation (the driver's release profile: `panic = "abort"`, LTO) a
//! panic path that survives in any exported function keeps the handler, the handler keeps the
//! undefined reference, and the link fails. A successful link is the proof.
//!
//! Every value the platform returns is loaded from an exported static the optimiser cannot see
//! through, so no panic path is removed by constant folding: the code proven is the code that
//! handles arbitrary CPUID/MSR values, processor indexes, handles and notification data.
#![no_std]

use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use ppm_engine::abi::PEP_INFORMATION;
use ppm_engine::platform::PerformanceCounter;
use ppm_engine::{Config, CpuidResult, MsrFault, Pep, Platform, ProcessorSlot, pep_information};

/// The engine instance the callbacks find (set by [`ppm_proof_initialize`]).
#[unsafe(no_mangle)]
pub static PPM_PROOF_INSTANCE: AtomicPtr<Pep<ProofPlatform>> =
    AtomicPtr::new(core::ptr::null_mut());
/// The current processor index.
#[unsafe(no_mangle)]
pub static PPM_PROOF_PROCESSOR: AtomicU32 = AtomicU32::new(0);
/// Mixed into every CPUID register.
#[unsafe(no_mangle)]
pub static PPM_PROOF_CPUID: AtomicU32 = AtomicU32::new(0);
/// Mixed into every MSR value.
#[unsafe(no_mangle)]
pub static PPM_PROOF_MSR: AtomicU64 = AtomicU64::new(0);
/// Whether MSR reads fault.
#[unsafe(no_mangle)]
pub static PPM_PROOF_MSR_FAULT: AtomicBool = AtomicBool::new(false);
/// The time source, the time stamp and the fixed-counter reservation.
#[unsafe(no_mangle)]
pub static PPM_PROOF_TIME: AtomicU64 = AtomicU64::new(0);

/// A platform whose every answer is opaque to the optimiser.
#[derive(Debug)]
pub struct ProofPlatform;

impl Platform for ProofPlatform {
    fn instance() -> Option<&'static Pep<Self>> {
        let pointer = PPM_PROOF_INSTANCE.load(Ordering::Acquire);
        // SAFETY: NULL, or set by `ppm_proof_initialize` to an engine its caller keeps alive
        // (and never moves) for as long as the callbacks may run.
        unsafe { pointer.as_ref() }
    }

    fn current_processor_index(&self) -> u32 {
        PPM_PROOF_PROCESSOR.load(Ordering::Relaxed)
    }

    fn cpuid(&self, leaf: u32, subleaf: u32) -> CpuidResult {
        let value = PPM_PROOF_CPUID.load(Ordering::Relaxed) ^ leaf;
        CpuidResult {
            eax: value,
            ebx: value.rotate_left(8) ^ subleaf,
            ecx: value.rotate_left(16),
            edx: value.rotate_left(24),
        }
    }

    fn read_msr(&self, msr: u32) -> Result<u64, MsrFault> {
        if PPM_PROOF_MSR_FAULT.load(Ordering::Relaxed) {
            return Err(MsrFault);
        }
        Ok(PPM_PROOF_MSR.load(Ordering::Relaxed) ^ u64::from(msr))
    }

    fn with_interrupts_masked<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }

    fn performance_counter(&self) -> PerformanceCounter {
        let ticks = PPM_PROOF_TIME.load(Ordering::Relaxed);
        PerformanceCounter { ticks, frequency: ticks.rotate_left(32) }
    }

    fn stall_microseconds(&self, microseconds: u32) {
        PPM_PROOF_TIME.fetch_add(u64::from(microseconds), Ordering::Relaxed);
    }

    fn read_timestamp(&self) -> Option<u64> {
        let time = PPM_PROOF_TIME.load(Ordering::Relaxed);
        (time & 1 == 0).then_some(time)
    }

    fn fixed_counters_reserved(&self) -> bool {
        PPM_PROOF_TIME.load(Ordering::Relaxed) & 2 != 0
    }
}

/// The `PEP_INFORMATION` the driver passes to `PoFxRegisterPluginEx`, for [`ProofPlatform`]:
/// its two function pointers are the engine's callbacks, kept (with everything they reach) by
/// this export.
#[unsafe(no_mangle)]
pub extern "C" fn ppm_proof_pep_information() -> PEP_INFORMATION {
    pep_information::<ProofPlatform>()
}

/// `Pep::new` on the configuration at `config` and `count` slots at `slots`, into `out`.
///
/// The engine is published to the callbacks. The configuration comes from the caller, so the
/// proof covers every configuration the driver can build from the registry, not only the
/// defaults.
///
/// # Safety
/// `config` points to a valid `Config`; `out` is valid for writing a `Pep<ProofPlatform>`,
/// suitably aligned, and stays valid and in place for as long as the callbacks may run; `slots`
/// points to `count` initialised `ProcessorSlot`s that stay valid for as long.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ppm_proof_initialize(
    out: *mut c_void,
    config: *const c_void,
    slots: *const c_void,
    count: usize,
) {
    // SAFETY: `config` points to a valid `Config` (caller).
    let config = unsafe { &*config.cast::<Config>() };
    // SAFETY: `count` initialised slots live at `slots` for as long as the engine (caller).
    let slots: &'static [ProcessorSlot] =
        unsafe { core::slice::from_raw_parts(slots.cast::<ProcessorSlot>(), count) };
    let pep = Pep::new(ProofPlatform, config, slots);
    let out = out.cast::<Pep<ProofPlatform>>();
    // SAFETY: `out` is valid for writes and aligned (caller).
    unsafe { out.write(pep) };
    PPM_PROOF_INSTANCE.store(out, Ordering::Release);
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    unsafe extern "C" {
        /// Defined nowhere, on purpose: a reference to it that survives optimisation is a
        /// reachable panic, and the link (`--no-undefined`) fails naming it.
        safe fn ppm_engine_panic_is_reachable() -> !;
    }
    ppm_engine_panic_is_reachable()
}
