//! The atomic types the engine's shared state is made of.
//!
//! Normally `core`'s. Under `--cfg loom` (model checking only, `tests/loom.rs`) they are loom's,
//! so that the real lifecycle, binding and accumulation code runs under the model checker; loom
//! atomics are not const-constructible, which is why [`crate::ProcessorSlot::new`] and
//! [`crate::device_id::DeviceIdLog::new`] are `const` only without loom. `Ordering` is always
//! `core`'s (loom re-exports it).

#[cfg(not(loom))]
pub use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(loom)]
pub use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
