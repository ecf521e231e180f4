//! Which MSRs the driver may touch: the ones proven to exist, under structured exception
//! handling, while `DriverEntry` initialises (x64 only).
//!
//! A hypervisor may announce a feature in CPUID whose MSR it does not emulate; a plain RDMSR of
//! it is a #GP in the kernel, a bugcheck. So every MSR the engine can use has a state here:
//! unknown until first used, then readable or faulting. While `DriverEntry` runs (`PASSIVE_LEVEL`,
//! before `PoFxRegisterPluginEx`) an unknown MSR is read or written through the SEH shim in
//! `msr_probe.c`, and the outcome is recorded; the engine's own initialisation probes (CPUID
//! checks, the counter probe, the PMU setup) thereby prove every MSR the notification paths
//! will use. Afterwards only MSRs proven readable reach RDMSR/WRMSR; any other answers
//! [`MsrFault`], which the engine already treats as "no such counter".
//!
//! Every RDMSR/WRMSR goes through the SEH shim, also after `DriverEntry`: an MSR that worked
//! when probed can fault later or on another processor (a hypervisor that changes its mind, a
//! processor whose PMU another owner reprogrammed), and an unguarded #GP is a bugcheck. The
//! image backend (`ppm-sim --pep image`) found exactly that: the `msr-fault`, `threaded`,
//! `fixed-pmc-32` and `boot-pmu-enable-fails` scenarios bugchecked the image with 0x1E where
//! the engine, whose emulated platform returns a fault as a value, went on. A runtime fault
//! answers [`MsrFault`] and leaves the MSR readable (the engine decides what a fault means).
//! x64 SEH is table-based: the guard costs a call on the read path, nothing more. Whether a
//! #GP is dispatched to `__except` at every IRQL a notification runs at is Windows' to show
//! (not verified here).

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use ppm_engine::MsrFault;
use ppm_engine::x86::msr;

unsafe extern "C" {
    /// Reads `msr` into `*value` under `__try`/`__except`: 1, or 0 if RDMSR faulted.
    fn ppm_msr_probe_read(msr: u32, value: *mut u64) -> u8;
    /// Writes `value` to `msr` under `__try`/`__except`: 1, or 0 if WRMSR faulted.
    fn ppm_msr_probe_write(msr: u32, value: u64) -> u8;
}

/// Every MSR the engine may read or write, the read path's first.
const MSRS: [u32; 17] = [
    msr::IA32_APERF,
    msr::IA32_MPERF,
    msr::AMD_APERF_READ_ONLY,
    msr::AMD_MPERF_READ_ONLY,
    msr::IA32_FIXED_CTR1,
    msr::IA32_FIXED_CTR2,
    msr::IA32_FIXED_CTR_CTRL,
    msr::IA32_PERF_GLOBAL_CTRL,
    msr::IA32_FIXED_CTR0,
    msr::MSR_PLATFORM_INFO,
    msr::MSR_TURBO_RATIO_LIMIT,
    msr::IA32_PM_ENABLE,
    msr::IA32_HWP_CAPABILITIES,
    msr::IA32_HWP_REQUEST,
    msr::AMD_CPPC_CAP1,
    msr::AMD_CPPC_REQ,
    msr::AMD_HWCR,
];

const UNKNOWN: u8 = 0;
const READABLE: u8 = 1;
const FAULTS: u8 = 2;

/// Per entry of [`MSRS`]: unknown, readable or faulting.
static STATES: [AtomicU8; MSRS.len()] = [const { AtomicU8::new(UNKNOWN) }; MSRS.len()];

/// Whether unknown MSRs may be probed (only while `DriverEntry` initialises, at `PASSIVE_LEVEL`).
static PROBING: AtomicBool = AtomicBool::new(false);

/// Allows (`true`, at the start of `DriverEntry`) or ends (`false`, before
/// `PoFxRegisterPluginEx`: notifications may run at any IRQL from then on) probing.
/// `PASSIVE_LEVEL`.
pub fn set_probing(probing: bool) {
    PROBING.store(probing, Ordering::Release);
}

/// The state of `number`, if the engine may use it.
fn state_of(number: u32) -> Option<&'static AtomicU8> {
    MSRS.iter().position(|&known| known == number).and_then(|index| STATES.get(index))
}

/// RDMSR of `number` on the current processor if it is proven readable, or, while probing,
/// under SEH. Any IRQL once proven; `PASSIVE_LEVEL` while probing.
///
/// # Errors
/// [`MsrFault`] for an MSR that faulted, is not one the engine uses, or was not proven before
/// probing ended.
#[inline]
pub fn read(number: u32) -> Result<u64, MsrFault> {
    let state = state_of(number).ok_or(MsrFault)?;
    match state.load(Ordering::Acquire) {
        READABLE => guarded_read(number),
        UNKNOWN if PROBING.load(Ordering::Acquire) => probe_read(number, state),
        _ => Err(MsrFault),
    }
}

/// RDMSR of a proven MSR under SEH: a later fault is [`MsrFault`], not a bugcheck. Any IRQL.
#[inline]
fn guarded_read(number: u32) -> Result<u64, MsrFault> {
    let mut value = 0;
    // SAFETY: ring 0; the shim catches a #GP; `value` is a valid u64 to write.
    let read = unsafe { ppm_msr_probe_read(number, &raw mut value) };
    if read == 0 { Err(MsrFault) } else { Ok(value) }
}

/// The probing path of [`read`]. `PASSIVE_LEVEL`.
#[cold]
#[inline(never)]
fn probe_read(number: u32, state: &AtomicU8) -> Result<u64, MsrFault> {
    let result = guarded_read(number);
    state.store(if result.is_ok() { READABLE } else { FAULTS }, Ordering::Release);
    result
}

/// WRMSR of `number` on the current processor: under SEH while probing, else only if proven
/// readable. The engine writes only the fixed counters' controls, under the PMU reservation.
///
/// # Errors
/// [`MsrFault`] for an MSR that faulted or was not proven, or a write that faulted.
pub fn write(number: u32, value: u64) -> Result<(), MsrFault> {
    let state = state_of(number).ok_or(MsrFault)?;
    if PROBING.load(Ordering::Acquire) {
        // SAFETY: PASSIVE_LEVEL in DriverEntry (probing); the shim catches a #GP.
        let written = unsafe { ppm_msr_probe_write(number, value) };
        return if written == 0 { Err(MsrFault) } else { Ok(()) };
    }
    if state.load(Ordering::Acquire) != READABLE {
        return Err(MsrFault);
    }
    // SAFETY: ring 0; the MSR exists (proven readable) and the engine writes it only with
    // values derived from what it read there, reserved bits unchanged, as it did successfully
    // in DriverEntry (RESUME_FROM_SYSTEM_STATE re-enabling the fixed counters); the shim
    // catches a #GP all the same.
    let written = unsafe { ppm_msr_probe_write(number, value) };
    if written == 0 { Err(MsrFault) } else { Ok(()) }
}
