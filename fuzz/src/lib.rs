//! The shared harness of the `ppm-engine` fuzz targets.
//!
//! - [`FuzzPlatform`](platform::FuzzPlatform): a `Platform` whose CPUID leaves, MSR values,
//!   faults, counters, time source and current processor come from the input, and which is
//!   also an oracle for the engine's hardware rules (MSRs read only when announced, never
//!   written; the counter pair read with interrupts masked, actual first, nominal right after).
//! - [`Engine`](engine::Engine): one engine instance per input, entered on the fuzzing thread
//!   for the C callbacks (`ppm_caller::ThreadHost`), dropped at the end of the input.
//! - [`Region`](region::Region): exact-size, 8-aligned allocations, so `AddressSanitizer` catches
//!   any access past a structure; [`calls`] builds notification data in them and checks that a
//!   refused notification wrote nothing and a handled one only its output fields.
//!
//! The targets reach the engine only through `ppm_engine::pep_information` (sent by
//! `ppm_caller::dpm`/`ppm`, which check the returned `BOOLEAN`), exactly as the kernel does.

pub mod calls;
pub mod engine;
pub mod input;
pub mod platform;
pub mod region;
pub mod strings;

pub use engine::{Engine, Setup};
pub use platform::FuzzPlatform;
