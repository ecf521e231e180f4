//! Feedback counters: the hardware pair behind them, their descriptors and their reads.
//!
//! Which pair backs them, how they are described to PoFx
//! (`PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS`) and how a read (`PEP_NOTIFY_PPM_FEEDBACK_READ`)
//! turns raw hardware values into the accumulated, monotonic counts Windows expects.
//!
//! Semantics of a read, per handle: the first read is a baseline and reports 0/0; each later
//! read adds the hardware deltas since the previous read. A reading of zero for both counters
//! (a hypervisor that stopped exposing them) is no reading: totals stay, and the next real
//! reading is a new baseline. When either raw value is below the
//! previous one — the counters were reset (S3/S4 resume, a hypervisor, other software) or
//! overflowed (the SDM: when either overflows both restart at zero) — that interval adds
//! nothing and the new raw values become the baseline: a reset can lose one interval, never
//! produce a huge delta. The totals wrap only after 2^64 counts (centuries at GHz rates).
//!
//! The submodules, in one-way layers: `scale` and `setup` (the types) at the bottom;
//! `calibration` and the read path `read` use `setup`; `detect` (initialisation) uses them all.

mod calibration;
mod detect;
mod read;
mod scale;
mod setup;

pub use read::PAIR_BOUND_NS;
#[cfg(test)]
pub(crate) use read::max_actual_per_reference;
pub(crate) use read::read_and_accumulate;
pub use scale::{ConstantScale, scale_constant_count};
pub use setup::{
    CALIBRATION_MICROSECONDS, CounterSource, FeedbackSetup, MAX_FEEDBACK_COUNTERS,
    NoCountersReason, NominalRateSource, PairKind,
};
