//! `PoFxRegisterPluginEx`, declared here because `wdk-sys` does not bind `pepfx.h`.
//!
//! `pepfx.h` declares it as
//!
//! ```c
//! _IRQL_requires_max_(PASSIVE_LEVEL)
//! NTKERNELAPI NTSTATUS PoFxRegisterPluginEx(
//!     _In_ PPEP_INFORMATION PepInformation,
//!     _In_ ULONGLONG Flags,
//!     _Inout_ PPEP_KERNEL_INFORMATION KernelInformation);
//! ```
//!
//! an `ntoskrnl.exe` export (Windows 10 and later) resolved through `ntoskrnl.lib`, which
//! `wdk-sys` already links for every KMDF driver. No calling-convention macro: the x64 and ARM64
//! C ABI. The structures are `ppm_engine::abi`'s, laid out and size-checked like the header's.

use ppm_engine::abi::{
    NTSTATUS, PEP_INFORMATION, PPEP_INFORMATION, PPEP_KERNEL_INFORMATION, ULONGLONG,
};

use crate::storage;

unsafe extern "C" {
    /// Registers a PEP with the power framework. `PASSIVE_LEVEL`, once per boot; a PEP can
    /// never unregister.
    fn PoFxRegisterPluginEx(
        pep_information: PPEP_INFORMATION,
        flags: ULONGLONG,
        kernel_information: PPEP_KERNEL_INFORMATION,
    ) -> NTSTATUS;
}

/// Registers the PEP whose callbacks `information` holds, with no flags, handing `PoFx` the
/// static kernel-information block to fill. Returns the `NTSTATUS`. `PASSIVE_LEVEL`.
///
/// # Safety
/// Once per boot, from `DriverEntry`. The callbacks in `information` must be ready to run
/// from the moment of the call (the PEP is published) and the driver image must never unload
/// after a successful return.
pub unsafe fn register(information: &PEP_INFORMATION) -> NTSTATUS {
    // The prototype is not const-correct; PoFx only reads (and copies) the structure.
    let mut information = *information;
    // SAFETY: PASSIVE_LEVEL (DriverEntry); `information` is a valid PEP_INFORMATION for the
    // call, the kernel-information block is static with Version and Size set, and the caller
    // guarantees the once-per-boot and never-unload rules.
    unsafe { PoFxRegisterPluginEx(&raw mut information, 0, storage::kernel_information()) }
}
