//! # ppm-pep
//!
//! A processor Platform Extension Plug-in (PEP) for the Windows power framework (`PoFx`),
//! written on Microsoft's windows-drivers-rs crates. This crate is the KMDF driver: thin glue
//! that creates the driver object, reads the configuration from the service's `Parameters`
//! registry key, builds the `ppm-engine` PEP over the kernel [`Platform`] implementation and
//! registers it with `PoFxRegisterPluginEx`. Every decision lives in `ppm-engine`.
//!
//! On every target other than Windows this crate compiles to nothing (an empty library): the
//! windows-drivers-rs crates only build with the WDK, so the Windows code is checked by reading
//! and by the Windows CI job, while everything it calls into is tested on any host through
//! `ppm-sim`. The registry rules live in a pure module that a host test compiles on its own.
//! On Windows the driver is compiled only with `panic = "abort"` (the `dev` and `release`
//! profiles): a test build forces the unwind strategy on every dependency of the test, and a
//! `no_std` kernel image cannot unwind, so there too the crate is empty.
//!
//! Modules (Windows only):
//! - `driver`: `DriverEntry` (`PASSIVE_LEVEL`) and the KMDF device-add callback.
//! - `platform`: the kernel implementation of the engine's platform trait (any IRQL).
//! - `storage`: static storage for the PEP instance and the `PoFx` kernel-information block,
//!   and the non-paged processor table.
//! - `registry`: configuration reading and the `State` key (`PASSIVE_LEVEL`).
//! - `pmu`: the PMU reservation (`HalAllocateHardwareCounters`) and fixed-counter enabling for
//!   the fixed-counter source (`PASSIVE_LEVEL`).
//! - `affinity`: running code on a chosen processor (`PASSIVE_LEVEL`).
//! - `pofx`: the declaration of `PoFxRegisterPluginEx` (`pepfx.h` is not bound by `wdk-sys`).
//! - `log`: `DbgPrintEx` lines (`DriverEntry` only, never on a notification path).
//! - `config_values`: the pure registry rules (also compiled by `tests/registry_values.rs`).
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
#[cfg(all(windows, panic = "abort"))]
#[allow(dead_code, reason = "shared with the host test, which uses every item")]
mod config_values;
#[cfg(all(windows, panic = "abort"))]
mod driver;
#[cfg(all(windows, panic = "abort"))]
mod log;
#[cfg(all(windows, panic = "abort"))]
mod platform;
#[cfg(all(windows, panic = "abort"))]
mod pmu;
#[cfg(all(windows, panic = "abort"))]
mod pofx;
#[cfg(all(windows, panic = "abort"))]
mod registry;
#[cfg(all(windows, panic = "abort"))]
mod storage;

#[cfg(all(windows, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
compile_error!("the ppm-pep driver supports x86_64 and aarch64 Windows only");
