//! The engine of `ppm-pep`, a processor Platform Extension Plug-in (PEP) for the Windows power
//! framework (PoFx).
//!
//! Everything the PEP decides lives here, in `no_std` code with no dependencies, generic over a
//! [`Platform`] that supplies the few kernel and hardware services the engine needs. The Windows
//! driver instantiates it with the kernel platform; the `ppm-sim` emulator instantiates it with
//! simulated processors. Both reach the engine only through the C callbacks that
//! [`pep_information`] returns for their [`PepHost`] (which finds the instance), exactly as the
//! kernel does.
//!
//! IRQL: construction ([`Pep::new`]) runs at `PASSIVE_LEVEL`, which its [`Passive`] token
//! proves; the counter pairs are read inside one masked section, whose [`InterruptsMasked`]
//! token their readers require (see [`platform`]). The callbacks run at the IRQLs
//! PoFx documents for each notification (see [`ppm`] and [`dpm`]); nothing they reach allocates,
//! blocks, logs or panics.
#![no_std]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::as_conversions
)]

pub mod abi;
pub mod arm64;
pub mod callbacks;
pub mod config;
pub mod counters;
pub mod cpu;
pub mod device_id;
pub mod dpm;
pub mod driver;
pub mod host;
pub mod notification;
pub mod payload;
pub mod pep;
pub mod perf;
pub mod platform;
pub mod pmc;
pub mod ppm;
pub mod processor;
mod sync;
pub mod x86;

pub use callbacks::pep_information;
pub use config::Config;
pub use host::PepHost;
pub use pep::Pep;
pub use platform::{CpuidResult, InterruptsMasked, MsrFault, Passive, Platform};
pub use processor::ProcessorSlot;

// PEPHANDLE values are pointer-sized; the handle encoding (see `processor`) needs 64 bits.
const _: () =
    assert!(core::mem::size_of::<usize>() == 8, "ppm-engine supports 64-bit targets only");
#[cfg(test)]
mod tests;
