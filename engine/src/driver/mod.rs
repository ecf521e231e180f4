//! The driver's initialisation, generic over the kernel services: what `DriverEntry` does after
//! `WdfDriverCreate`, and the registry rules it applies.
//!
//! The Windows driver (`src/`) implements [`KernelServices`] over `ntoskrnl`, `hal` and KMDF and
//! keeps only that leaf FFI; the emulator (`ppm-sim`) implements it over its simulated machine
//! and boots the PEP through the very same [`driver_entry`], with registry values, pool
//! exhaustion, HAL refusals and registration failures a scenario file injects. Everything here
//! runs at `PASSIVE_LEVEL`, in `DriverEntry`.
//!
//! - [`entry`]: the sequence and the unwinding of every failure.
//! - [`services`]: the kernel services it needs.
//! - [`registry`]: the pure rules for the `Parameters` values and the `Boot` names.
//! - [`processor_table`]: the non-paged processor table.
//! - [`pmu_reservation`]: the HAL's PMU reservation and the fixed counters' enabling.
//! - [`line`](mod@line): the fixed-size, panic-free text line the driver formats its log and ETW events
//!   into.

pub mod entry;
pub mod line;
pub mod pmu_reservation;
pub mod processor_table;
pub mod registry;
pub mod services;

pub use entry::{Failure, Outcome, SkipReason, Step, driver_entry};
pub use services::{KernelServices, LogLevel, PoolBlock, StateKey};
