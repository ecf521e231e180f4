//! The C ABI of the Windows power framework (`PoFx`) Platform Extension Plug-in (PEP) interface.
//!
//! This module declares, for x86-64 and ARM64 (LLP64), the types, constants and callback
//! signatures that the WDK headers `pepfx.h` (and, where marked, its superset `pep_x.h`) and a
//! few parts of `ntddk.h` define for a PEP: the registration structures passed to
//! `PoFxRegisterPluginEx`, the notification IDs and payloads of the device (DPM) and processor
//! (PPM) notification callbacks, and the hardware-counter arbitration types of
//! `HalAllocateHardwareCounters`.
//!
//! The declarations have the shape bindgen gives them: structures are `#[repr(C)]` and named
//! exactly as the header typedefs, fields keep the header's names, C enumerations are `i32`
//! aliases with one constant per enumerator, callbacks are `Option<unsafe extern "C" fn ...>`,
//! anonymous unions are `__bindgen_anon_N` fields of `..._bindgen_ty_N` types, and bitfields
//! are one storage unit (`_bitfield_1`) with accessor methods. A future `wdk-sys` that binds
//! `pepfx.h` can therefore replace this module mechanically.
//!
//! None of the `pepfx.h` part is bound by `wdk-sys` today. The handful of `ntddk.h` and `wdm.h`
//! types repeated here (`GROUP_AFFINITY`, `PROCESSOR_NUMBER`, the physical-counter types, ...)
//! are declared again so that this `no_std`, dependency-free crate can name them; they are
//! layout-identical to the `wdk-sys` definitions.
//!
//! Every structure and union has compile-time assertions of its size, alignment and field
//! offsets, taken from the headers compiled for x64 (ARM64 has the same layout).
// Names follow the Windows headers (`ULONG`, `PEP_PPM_FEEDBACK_READ.CounterIndex`,
// `Affinitized()`, ...) so that bindgen output can replace this module one for one.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
// Same reason: `ULONG`, `HANDLE`, `GUID` are the header spellings, not Rust acronyms.
#![allow(clippy::upper_case_acronyms)]

#[macro_use]
mod layout;

mod acpi;
mod dpm;
mod hardware_counters;
mod ppm;
mod ppm_feedback;
mod ppm_perf;
mod registration;
#[cfg(test)]
// The tests inspect bindgen's `_bitfield_1` storage units and `__bindgen_anon_1` members.
#[allow(clippy::used_underscore_binding)]
mod tests;
mod types;

pub use acpi::*;
pub use dpm::*;
pub use hardware_counters::*;
pub use ppm::*;
pub use ppm_feedback::*;
pub use ppm_perf::*;
pub use registration::*;
pub use types::*;
