//! # ppm-pep
//!
//! A processor Platform Extension Plug-in (PEP) for the Windows power framework (`PoFx`),
//! written on Microsoft's windows-drivers-rs crates. This crate is the KMDF driver, leaf FFI
//! only: it creates the driver object and runs `ppm_engine::driver::driver_entry` — the
//! sequence from the `Parameters` key to `PoFxRegisterPluginEx`, and its unwinding — over the
//! kernel's services and the kernel [`Platform`] implementation. Every decision lives in
//! `ppm-engine`, where the emulator (`ppm-sim`) runs the same sequence on every scenario.
//!
//! On every target other than Windows this crate compiles to nothing (an empty library): the
//! windows-drivers-rs crates only build with the WDK. `scripts/check-windows-build.sh`
//! type-checks it for both Windows targets on Linux against bindings generated from kernel
//! headers; everything it calls into is tested on any host through `ppm-sim`.
//! On Windows the driver is compiled only with `panic = "abort"` (the `dev` and `release`
//! profiles): a test build forces the unwind strategy on every dependency of the test, and a
//! `no_std` kernel image cannot unwind, so there too the crate is empty.
//!
//! Modules (Windows only):
//! - `driver`: `DriverEntry` and the KMDF device-add callback (`PASSIVE_LEVEL`).
//! - `kernel_services`: the engine's `KernelServices` over `ntoskrnl`, `hal` and KMDF.
//! - `platform`: the kernel implementation of the engine's platform trait (any IRQL).
//! - `storage`: static storage for the PEP instance and the `PoFx` kernel-information block.
//! - `registry`: the `Parameters` and `Boot` keys through KMDF (`PASSIVE_LEVEL`).
//! - `affinity`: running code on a chosen processor (`PASSIVE_LEVEL`).
//! - `pofx`: the declaration of `PoFxRegisterPluginEx` (`pepfx.h` is not bound by `wdk-sys`).
//! - `log`: `DbgPrintEx` lines (`DriverEntry` only, never on a notification path).
//! - `trace`: ETW events through `TraceLogging`, provider `PpmPep` (`DriverEntry`, device add and
//!   unload, all `PASSIVE_LEVEL`; never on a notification path).
//! - `msr_guard` (x64): which MSRs may be touched, proven under SEH (`msr_probe.c`) while
//!   `DriverEntry` initialises.
//! - `amu_guard` (ARM64): every Activity Monitors `MRS` under SEH, a fault answered as a value.
//!
//! [`Platform`]: ppm_engine::Platform
#![cfg_attr(all(windows, panic = "abort"), no_std)]

#[cfg(all(windows, panic = "abort"))]
extern crate wdk_panic;

/// The kernel allocator (`ExAllocatePool2`, non-paged). The driver itself never allocates
/// through it: the PEP's memory is static or allocated explicitly in `DriverEntry`.
#[cfg(all(windows, panic = "abort"))]
#[global_allocator]
static GLOBAL_ALLOCATOR: wdk_alloc::WdkAllocator = wdk_alloc::WdkAllocator;

#[cfg(all(windows, panic = "abort"))]
mod affinity;
#[cfg(all(windows, panic = "abort", target_arch = "aarch64"))]
mod amu_guard;
#[cfg(all(windows, panic = "abort"))]
mod driver;
#[cfg(all(windows, panic = "abort"))]
mod kernel_services;
#[cfg(all(windows, panic = "abort"))]
mod log;
#[cfg(all(windows, panic = "abort", target_arch = "x86_64"))]
mod msr_guard;
#[cfg(all(windows, panic = "abort"))]
mod platform;
#[cfg(all(windows, panic = "abort"))]
mod pofx;
#[cfg(all(windows, panic = "abort"))]
mod registry;
#[cfg(all(windows, panic = "abort"))]
mod storage;
#[cfg(all(windows, panic = "abort"))]
mod trace;

#[cfg(all(windows, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
compile_error!("the ppm-pep driver supports x86_64 and aarch64 Windows only");
