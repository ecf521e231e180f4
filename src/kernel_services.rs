//! [`Kernel`]: the engine's `KernelServices` over `ntoskrnl`, `hal` and KMDF — the leaf calls of
//! `ppm_engine::driver::driver_entry`. `PASSIVE_LEVEL`, in `DriverEntry`.

use core::fmt;
use core::ptr::{self, NonNull};

use ppm_engine::Pep;
use ppm_engine::abi::{NTSTATUS, PEP_INFORMATION, PHYSICAL_COUNTER_RESOURCE_LIST};
use ppm_engine::driver::services::{PE_HEADER_BYTES, time_date_stamp_of};
use ppm_engine::driver::{KernelServices, LogLevel, PoolBlock};
use wdk_sys::ntddk::{
    ExAllocatePool2, ExFreePool, HalAllocateHardwareCounters, HalFreeHardwareCounters,
    KeQueryActiveProcessorCountEx, KeQueryMaximumProcessorCountEx,
};
use wdk_sys::{
    ALL_PROCESSOR_GROUPS, HANDLE, NT_SUCCESS, POOL_FLAG_NON_PAGED, SIZE_T, USHORT, WDFDRIVER,
};

use crate::platform::{self, KernelPlatform};
use crate::registry::{Parameters, State};
use crate::{affinity, log, pofx, storage, trace};

/// The pool tag of KMDF's allocations for the driver (`WDF_DRIVER_CONFIG.DriverPoolTag`,
/// `PpmP` in pool tools); the driver's own blocks carry [`PoolBlock::tag`].
pub const POOL_TAG: u32 = u32::from_le_bytes(*b"PpmP");

/// The volatile subkey of `Parameters` that `Install-PpmPep.ps1` creates before installing: it
/// exists only in the session of the install.
const INSTALL_PENDING_KEY: &str = "InstallPending";

/// The architecture the driver was built for, as the `Boot` key names it.
const ARCHITECTURE: &str = if cfg!(target_arch = "x86_64") { "x64" } else { "arm64" };

unsafe extern "C" {
    /// The first byte of this image as loaded: its DOS header, then the PE headers. A
    /// pseudo-symbol the linker defines in every PE image it links (lld-link: `__ImageBase`,
    /// an absolute symbol at the image base, `lld/COFF/Driver.cpp`; link.exe the same, as
    /// "Accessing the current module's HINSTANCE from a static library", The Old New Thing,
    /// 2004, describes), relocated with the image; the kernel keeps a loaded driver's headers
    /// mapped (its exception dispatch reads the image's unwind data through them). Chosen over
    /// `DRIVER_OBJECT::DriverStart`, which `wdm.h`'s documentation leaves undescribed, and
    /// `RtlPcToFileHeader`, which the WDK does not document for kernel mode.
    static __ImageBase: u8;
}

/// The kernel services of `DriverEntry`, for the KMDF driver object `driver`.
pub struct Kernel {
    driver: WDFDRIVER,
}

impl Kernel {
    /// The services of `driver` (what `WdfDriverCreate` returned). From here until
    /// `PoFxRegisterPluginEx`, unknown MSRs are probed under SEH (x64).
    #[cfg_attr(
        not(target_arch = "x86_64"),
        expect(clippy::missing_const_for_fn, reason = "x64 starts probing here")
    )]
    pub fn new(driver: WDFDRIVER) -> Self {
        #[cfg(target_arch = "x86_64")]
        crate::msr_guard::set_probing(true);
        Self { driver }
    }
}

/// `ALL_PROCESSOR_GROUPS` as the `USHORT` the processor-count calls take.
const ALL_GROUPS: USHORT = {
    assert!(ALL_PROCESSOR_GROUPS <= USHORT::MAX as u32);
    #[allow(clippy::cast_possible_truncation, reason = "asserted to fit a USHORT")]
    let all = ALL_PROCESSOR_GROUPS as USHORT;
    all
};

impl KernelServices for Kernel {
    type Platform = KernelPlatform;
    type Host = storage::KernelHost;
    type Parameters<'a> = Parameters;
    type State<'a> = State;
    type CounterReservation = HANDLE;

    fn platform(&self) -> KernelPlatform {
        KernelPlatform
    }

    fn architecture(&self) -> &'static str {
        ARCHITECTURE
    }

    fn image_time_date_stamp(&self) -> u32 {
        let base = &raw const __ImageBase;
        // SAFETY: `__ImageBase` is the start of this loaded image, whose headers — at least
        // `PE_HEADER_BYTES`, the smallest FileAlignment — stay mapped and unchanged while the
        // driver is loaded; nothing writes them.
        let header = unsafe { core::slice::from_raw_parts(base, PE_HEADER_BYTES) };
        time_date_stamp_of(header).unwrap_or(0)
    }

    fn open_parameters(&self) -> Result<Parameters, NTSTATUS> {
        Parameters::open(self.driver)
    }

    fn install_pending(&self) -> bool {
        crate::registry::parameters_subkey_exists(self.driver, INSTALL_PENDING_KEY)
    }

    fn create_state_key(&self) -> Result<State, NTSTATUS> {
        State::create(self.driver)
    }

    fn maximum_processor_count(&self) -> u32 {
        // SAFETY: callable at any IRQL; ALL_PROCESSOR_GROUPS asks for the total of every group.
        unsafe { KeQueryMaximumProcessorCountEx(ALL_GROUPS) }
    }

    fn active_processor_count(&self) -> u32 {
        // SAFETY: callable at any IRQL; ALL_PROCESSOR_GROUPS counts every group.
        unsafe { KeQueryActiveProcessorCountEx(ALL_GROUPS) }
    }

    fn run_on_processor<R>(&self, index: u32, f: impl FnOnce() -> R) -> Option<R> {
        affinity::number_of(index).map(|number| affinity::run_on(number, f))
    }

    fn run_on_current_processor<R>(&self, f: impl FnOnce() -> R) -> R {
        affinity::run_on(affinity::current(), f)
    }

    fn allocate_non_paged(&self, block: PoolBlock, bytes: usize) -> Option<NonNull<u8>> {
        let bytes = SIZE_T::try_from(bytes).ok().filter(|&bytes| bytes > 0)?;
        // SAFETY: PASSIVE_LEVEL (<= DISPATCH_LEVEL is required for non-paged pool); the flags
        // name a valid pool type and the size is non-zero. ExAllocatePool2 zero-fills.
        let allocation = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, bytes, block.tag()) };
        NonNull::new(allocation.cast())
    }

    unsafe fn free_non_paged(&self, _block: PoolBlock, allocation: NonNull<u8>) {
        // SAFETY: the caller guarantees `allocation` came from ExAllocatePool2 and is freed once.
        unsafe { ExFreePool(allocation.as_ptr().cast()) };
    }

    fn allocate_hardware_counters(
        &self,
        list: Option<&mut PHYSICAL_COUNTER_RESOURCE_LIST>,
    ) -> Result<HANDLE, NTSTATUS> {
        // The engine's PHYSICAL_COUNTER_RESOURCE_LIST has ntddk.h's layout (asserted at compile
        // time in ppm_engine::abi), so the pointer is cast, not converted.
        let list = list.map_or(ptr::null_mut(), |list| ptr::from_mut(list).cast());
        let mut handle: HANDLE = ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; a NULL GroupAffinity with GroupCount 0 requests every processor
        // of every group; `list` is NULL (exclusive ownership) or a valid list that outlives the
        // call; `handle` is a valid HANDLE to write.
        let status =
            unsafe { HalAllocateHardwareCounters(ptr::null_mut(), 0, list, &raw mut handle) };
        match (NT_SUCCESS(status), handle.is_null()) {
            (true, false) => Ok(handle),
            (true, true) => Err(wdk_sys::STATUS_UNSUCCESSFUL),
            (false, _) => Err(status),
        }
    }

    fn free_hardware_counters(&self, reservation: HANDLE) -> NTSTATUS {
        // SAFETY: PASSIVE_LEVEL; the handle came from a successful HalAllocateHardwareCounters
        // and is freed once (the engine consumes it).
        unsafe { HalFreeHardwareCounters(reservation) }
    }

    fn set_fixed_counters_reserved(&self, reserved: bool) {
        platform::set_fixed_counters_reserved(reserved);
    }

    unsafe fn install(&self, pep: Pep<KernelPlatform>) -> &'static Pep<KernelPlatform> {
        // SAFETY: the caller guarantees once per DriverEntry, before anything is published.
        unsafe { storage::install(pep) }
    }

    fn publish(&self, pep: &'static Pep<KernelPlatform>) {
        storage::set_instance(Some(pep));
    }

    fn withdraw(&self) {
        storage::set_instance(None);
    }

    unsafe fn register_plugin(&self, information: &PEP_INFORMATION) -> NTSTATUS {
        // From the registration on, notifications may arrive at any IRQL: no more probing.
        #[cfg(target_arch = "x86_64")]
        crate::msr_guard::set_probing(false);
        // SAFETY: the caller guarantees once per boot with the PEP published; a registered PEP
        // is never unloaded (its device refuses stop/remove, `evt_driver_unload` bugchecks), so
        // after a success the image stays.
        unsafe { pofx::register(information) }
    }

    // Kept out of line: after an unrelated change (the per-block pool tags), ARM64's
    // `read_configuration` frame grew past 4 KiB, where the compiler calls a `__chkstk` stack
    // probe that a kernel image has no library for, and the ARM64 link failed; out of line, the
    // line buffers of the log and the ETW message stay in this function's own frame.
    #[inline(never)]
    fn log(&self, level: LogLevel, message: fmt::Arguments<'_>) {
        // Both: ETW keeps the line at boot with no debugger attached; DbgPrintEx serves a
        // kernel-debugger session.
        trace::driver_entry_line(level, message);
        log::print(level, message);
    }
}
