//! One typed PoFx caller for `ppm-engine`: calls the PEP's callbacks the way the kernel does.
//!
//! Dev-only (std, never shipped). It holds what every tool that drives the engine needs, once:
//! - [`ThreadHost`]: the [`PepHost`](ppm_engine::PepHost) of every emulated caller. The engine
//!   instance is held per thread ([`enter`] installs it for the calling thread), so no
//!   `Platform` carries instance boilerplate;
//! - [`names`]: the notifications' names, from the engine's table, and the undefined ids;
//! - [`Callbacks`]: the two callbacks of any `PEP_INFORMATION` (the engine's, or a deliberately
//!   broken PEP's) or of a Rust [`Dispatch`] (a driver image executed elsewhere), and every
//!   notification sent through them as PoFx sends it, with the documented C structure (the
//!   [`payload`]s, sentinel-filled where a refusal must leave them untouched). Its sends judge
//!   nothing: they return what they saw ([`Sent`]: the `BOOLEAN` as returned, whether the
//!   buffer came back untouched, what was written) — what the emulator records. It is the one
//!   place that calls a PEP's callbacks;
//! - the asserting senders ([`prepare`], [`register`], [`read`], ...), thin layers over
//!   [`Callbacks`] for the engine entered for `P`: each checks the `BOOLEAN` is 0 or 1 and,
//!   where a refusal is possible, that a refused notification left its buffer untouched;
//! - [`fixture`]: the platforms the tests share (an Intel VM's CPUID, a platform without
//!   counters);
//! - [`boot`]: what `DriverEntry` does — a `'static` table and `Pep`, installed on the thread.

// A test caller: its assertions (a BOOLEAN 0 or 1, a refused notification's untouched buffer)
// are its purpose, and a PEPHANDLE is an opaque value the engine validates, never dereferenced.
#![allow(clippy::missing_panics_doc, clippy::not_unsafe_ptr_arg_deref)]

mod callbacks;
mod caller;
pub mod fixture;
mod host;
pub mod names;
pub mod payload;
mod send;

pub use callbacks::{Callbacks, Dispatch, DpmCallback, PpmCallback, Registration, Sent};
pub use caller::{boot, boot_with, table};
pub use host::{Entered, ThreadHost, enter, install, is_entered, leave};
pub use send::{
    UNTOUCHED, add_processor, device_started, dpm, live, ppm, prepare, query_capabilities,
    query_domain_info, query_feedback_counters, query_perf_capabilities, read, register, resume,
    unregister,
};
