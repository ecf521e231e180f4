//! One typed PoFx caller for `ppm-engine`: calls the PEP's C callbacks the way the kernel does.
//!
//! Dev-only (std, never shipped). It holds what every tool that drives the engine needs, once:
//! - [`ThreadHost`]: the [`PepHost`](ppm_engine::PepHost) of every emulated caller. The engine
//!   instance is held per thread ([`enter`] installs it for the calling thread), so no
//!   `Platform` carries instance boilerplate;
//! - [`names`]: the notifications the PEP handles, as one `(id, name)` table per class;
//! - the sending functions ([`prepare`], [`register`], [`read`], ...): each builds the C
//!   structure PoFx passes, calls the callback through the `PEP_INFORMATION` function pointer,
//!   checks the `BOOLEAN` is 0 or 1 and, where a refusal is possible, that a refused
//!   notification left its sentinel-filled buffer untouched;
//! - [`boot`]: what `DriverEntry` does — a `'static` table and `Pep`, installed on the thread.

// A test caller: its assertions (a BOOLEAN 0 or 1, a refused notification's untouched buffer)
// are its purpose, and a PEPHANDLE is an opaque value the engine validates, never dereferenced.
#![allow(clippy::missing_panics_doc, clippy::not_unsafe_ptr_arg_deref)]

mod caller;
mod host;
pub mod names;
mod send;

pub use caller::{boot, boot_with, table};
pub use host::{Entered, ThreadHost, enter, install, is_entered, leave};
pub use send::{
    UNTOUCHED, add_processor, device_started, dpm, live, ppm, prepare, query_capabilities,
    query_domain_info, query_feedback_counters, query_perf_capabilities, read, register, resume,
    unicode_string, unregister,
};
