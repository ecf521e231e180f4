//! A link-time proof that the engine's notification entry points cannot reach a panic.
//!
//! This `no_std` cdylib instantiates the engine for [`ProofPlatform`] (found through
//! [`ProofHost`]) and exports what the kernel gets: [`ppm_proof_pep_information`] (the
//! `PEP_INFORMATION` whose `AcceptDeviceNotification` / `AcceptProcessorNotification` PoFx
//! calls),
//! [`ppm_proof_initialize`] (`Pep::new` on any configuration) and [`ppm_proof_driver_entry`]
//! (the driver's whole `DriverEntry` sequence, `ppm_engine::driver::driver_entry`, over kernel
//! services whose every answer — registry types and bytes, pool, processor counts, HAL and
//! `PoFx` statuses — is opaque too). Its
//! panic handler calls `ppm_engine_panic_is_reachable`, a symbol defined nowhere, and `build.rs`
//! links with `--no-undefined`. After optimisation (the driver's release profile: `panic = "abort"`, LTO) a
//! panic path that survives in any exported function keeps the handler, the handler keeps the
//! undefined reference, and the link fails. A successful link is the proof.
//!
//! Every value the platform returns is loaded from an exported static the optimiser cannot see
//! through, so no panic path is removed by constant folding: the code proven is the code that
//! handles arbitrary CPUID/MSR values, processor indexes, handles and notification data.
#![no_std]

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::fmt::{self, Write as _};
use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use ppm_engine::abi::{NTSTATUS, PEP_INFORMATION, PHYSICAL_COUNTER_RESOURCE_LIST};
use ppm_engine::driver::registry::{Lookup, ValueSource};
use ppm_engine::driver::services::time_date_stamp_of;
use ppm_engine::driver::{KernelServices, LogLevel, PoolBlock, StateKey, driver_entry};
use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::{
    Config, CpuidResult, MsrFault, Pep, PepHost, Platform, ProcessorSlot, pep_information,
};

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

/// The host of the callbacks: the instance in [`PPM_PROOF_INSTANCE`] (one acquire load, as the
/// driver's static storage).
#[derive(Debug)]
pub struct ProofHost;

impl PepHost for ProofHost {
    type Platform = ProofPlatform;

    fn instance() -> Option<&'static Pep<ProofPlatform>> {
        let pointer = PPM_PROOF_INSTANCE.load(Ordering::Acquire);
        // SAFETY: NULL, or set by `ppm_proof_initialize` to an engine its caller keeps alive
        // (and never moves) for as long as the callbacks may run.
        unsafe { pointer.as_ref() }
    }
}

/// A platform whose every answer is opaque to the optimiser.
#[derive(Debug)]
pub struct ProofPlatform;

impl Platform for ProofPlatform {
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

    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        // SAFETY: the proof only links the engine's code, it never runs it: the token stands for
        // the section the driver's platform masks, and `f` only borrows it.
        let masked = unsafe { InterruptsMasked::assume() };
        f(&masked)
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        let ticks = PPM_PROOF_TIME.load(Ordering::Relaxed);
        PerformanceCounter { ticks, frequency: ticks.rotate_left(32) }
    }

    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
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
    pep_information::<ProofHost>()
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
    // SAFETY: the proof only links the engine's code, it never runs it: the token stands for
    // DriverEntry's, and lives only for the construction.
    let passive = unsafe { Passive::assume() };
    let pep = Pep::new(&passive, ProofPlatform, config, slots);
    let out = out.cast::<Pep<ProofPlatform>>();
    // SAFETY: `out` is valid for writes and aligned (caller).
    unsafe { out.write(pep) };
    PPM_PROOF_INSTANCE.store(out, Ordering::Release);
}

/// Selects each kernel service's answer (bit fields mixed with the call's arguments).
#[unsafe(no_mangle)]
pub static PPM_PROOF_KERNEL: AtomicU64 = AtomicU64::new(0);
/// The bytes a registry value holds.
#[unsafe(no_mangle)]
pub static PPM_PROOF_VALUE: ValueBytes = ValueBytes(UnsafeCell::new([0; 4096]));
/// The block `allocate_non_paged` returns (NULL: the pool is exhausted).
#[unsafe(no_mangle)]
pub static PPM_PROOF_POOL: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());
/// The registered engine's storage, as the driver's static cell.
#[unsafe(no_mangle)]
pub static PPM_PROOF_CELL: PepCell = PepCell(UnsafeCell::new(MaybeUninit::uninit()));
/// The log's sink: every formatted byte is counted here.
#[unsafe(no_mangle)]
pub static PPM_PROOF_LOG: AtomicUsize = AtomicUsize::new(0);

/// Registry bytes the optimiser cannot see.
pub struct ValueBytes(UnsafeCell<[u8; 4096]>);

// SAFETY: only read, by the single thread that calls `ppm_proof_driver_entry`.
unsafe impl Sync for ValueBytes {}

/// The engine cell `install` writes, as the driver's `storage`.
pub struct PepCell(UnsafeCell<MaybeUninit<Pep<ProofPlatform>>>);

// SAFETY: written once by `install`, before the engine is published; read-only afterwards.
unsafe impl Sync for PepCell {}

/// The low 32 bits of `bits`, as an `NTSTATUS` (any bit pattern).
const fn status(bits: u64) -> NTSTATUS {
    let [a, b, c, d, ..] = bits.to_le_bytes();
    NTSTATUS::from_le_bytes([a, b, c, d])
}

/// The low 32 bits of `bits`.
const fn low32(bits: u64) -> u32 {
    let [a, b, c, d, ..] = bits.to_le_bytes();
    u32::from_le_bytes([a, b, c, d])
}

/// `value` as a `u64` (saturating; `usize` is 64 bits here).
fn wide(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

/// An opaque choice for `salt`.
fn choice(salt: u64) -> u64 {
    PPM_PROOF_KERNEL.load(Ordering::Relaxed).rotate_left(u32::try_from(salt % 64).unwrap_or(0))
}

/// Kernel services whose every answer is opaque to the optimiser.
#[derive(Debug)]
pub struct ProofKernel;

/// The `Parameters` key: any type and any prefix of [`PPM_PROOF_VALUE`] for any name.
#[derive(Debug)]
pub struct ProofValues;

impl ValueSource for ProofValues {
    fn read(&mut self, name: &'static str) -> Lookup<'_> {
        let answer = choice(wide(name.len()));
        // SAFETY: read-only bytes (see `ValueBytes`).
        let bytes: &[u8; 4096] = unsafe { &*PPM_PROOF_VALUE.0.get() };
        let length = usize::try_from(answer >> 32).unwrap_or(0) % (bytes.len() + 1);
        match answer & 3 {
            0 => Lookup::Absent,
            1 => Lookup::Failed { status: status(answer) },
            2 => Lookup::TooLarge { needed: low32(answer >> 8) },
            _ => Lookup::Found {
                value_type: low32(answer >> 16),
                data: bytes.get(..length).unwrap_or(&[]),
            },
        }
    }
}

/// The `Boot` key: every write answers an opaque status.
#[derive(Debug)]
pub struct ProofState;

impl StateKey for ProofState {
    fn dword(&mut self, name: &str, value: u32) -> NTSTATUS {
        status(choice(wide(name.len()) ^ u64::from(value)))
    }

    fn string(&mut self, name: &str, text: &str) -> NTSTATUS {
        status(choice(wide(name.len() ^ text.len())))
    }
}

/// Counts what the log formats, as the driver's fixed 512-byte line buffer would hold it.
struct LogSink(usize);

impl fmt::Write for LogSink {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.0 = self.0.wrapping_add(text.len());
        Ok(())
    }
}

impl KernelServices for ProofKernel {
    type Platform = ProofPlatform;
    type Host = ProofHost;
    type Parameters<'a> = ProofValues;
    type State<'a> = ProofState;
    type CounterReservation = u64;

    fn platform(&self) -> ProofPlatform {
        ProofPlatform
    }

    fn architecture(&self) -> &'static str {
        "x64"
    }

    fn image_time_date_stamp(&self) -> u32 {
        // As the driver reads its header: the engine's parser over bytes the optimiser cannot
        // see (any prefix of the value buffer).
        // SAFETY: read-only bytes (see `ValueBytes`).
        let bytes: &[u8; 4096] = unsafe { &*PPM_PROOF_VALUE.0.get() };
        let length = usize::try_from(choice(9)).unwrap_or(0) % (bytes.len() + 1);
        time_date_stamp_of(bytes.get(..length).unwrap_or(&[])).unwrap_or(0)
    }

    fn open_parameters(&self) -> Result<ProofValues, NTSTATUS> {
        let answer = choice(1);
        if answer & 1 == 0 { Ok(ProofValues) } else { Err(status(answer)) }
    }

    fn install_pending(&self) -> bool {
        choice(8) & 1 != 0
    }

    fn create_state_key(&self) -> Result<ProofState, NTSTATUS> {
        let answer = choice(2);
        if answer & 1 == 0 { Ok(ProofState) } else { Err(status(answer)) }
    }

    fn maximum_processor_count(&self) -> u32 {
        low32(choice(3))
    }

    fn active_processor_count(&self) -> u32 {
        low32(choice(4))
    }

    fn run_on_processor<R>(&self, index: u32, f: impl FnOnce() -> R) -> Option<R> {
        PPM_PROOF_PROCESSOR.store(index, Ordering::Relaxed);
        (choice(u64::from(index)) & 1 == 0).then(f)
    }

    fn run_on_current_processor<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }

    fn allocate_non_paged(&self, _block: PoolBlock, bytes: usize) -> Option<NonNull<u8>> {
        PPM_PROOF_LOG.fetch_add(bytes, Ordering::Relaxed);
        NonNull::new(PPM_PROOF_POOL.load(Ordering::Relaxed))
    }

    unsafe fn free_non_paged(&self, _block: PoolBlock, allocation: NonNull<u8>) {
        PPM_PROOF_POOL.store(allocation.as_ptr(), Ordering::Relaxed);
    }

    fn allocate_hardware_counters(
        &self,
        list: Option<&mut PHYSICAL_COUNTER_RESOURCE_LIST>,
    ) -> Result<u64, NTSTATUS> {
        let answer = choice(5) ^ u64::from(list.map_or(0, |list| list.Count));
        if answer & 1 == 0 { Ok(answer) } else { Err(status(answer)) }
    }

    fn free_hardware_counters(&self, reservation: u64) -> NTSTATUS {
        status(choice(6) ^ reservation)
    }

    fn set_fixed_counters_reserved(&self, reserved: bool) {
        PPM_PROOF_TIME.fetch_or(u64::from(reserved) << 1, Ordering::Relaxed);
    }

    unsafe fn install(&self, pep: Pep<ProofPlatform>) -> &'static Pep<ProofPlatform> {
        // SAFETY: once per `ppm_proof_driver_entry`, before anything is published (caller).
        let cell = unsafe { &mut *PPM_PROOF_CELL.0.get() };
        cell.write(pep)
    }

    fn publish(&self, pep: &'static Pep<ProofPlatform>) {
        PPM_PROOF_INSTANCE.store(core::ptr::from_ref(pep).cast_mut(), Ordering::Release);
    }

    fn withdraw(&self) {
        PPM_PROOF_INSTANCE.store(core::ptr::null_mut(), Ordering::Release);
    }

    unsafe fn register_plugin(&self, information: &PEP_INFORMATION) -> NTSTATUS {
        status(choice(7) ^ u64::from(information.Size))
    }

    fn log(&self, level: LogLevel, message: fmt::Arguments<'_>) {
        let mut sink = LogSink(usize::from(level == LogLevel::Error));
        let _ = sink.write_fmt(message);
        PPM_PROOF_LOG.fetch_add(sink.0, Ordering::Relaxed);
    }
}

/// The driver's `DriverEntry` sequence after `WdfDriverCreate`
/// (`ppm_engine::driver::driver_entry`) over [`ProofKernel`]; returns its status.
///
/// # Safety
/// Called once; the block in [`PPM_PROOF_POOL`] is large enough and aligned for what is
/// asked of it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ppm_proof_driver_entry() -> NTSTATUS {
    // SAFETY: the proof only links the engine's code, it never runs it: the token stands for
    // DriverEntry's, and lives only for the call.
    let passive = unsafe { Passive::assume() };
    driver_entry(&ProofKernel, &passive).status()
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
