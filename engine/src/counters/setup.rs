//! The counter setup decided at initialisation: the hardware pair behind the feedback counters,
//! why there are none, where the nominal rate came from, and the [`FeedbackSetup`] that holds it.

use super::scale::ConstantScale;
use crate::abi::PEP_PROCESSOR_FEEDBACK_COUNTER;
use crate::x86::msr;

/// The most counters the engine describes per processor (a FREQUENCY and a PERFORMANCE view of
/// the same pair).
pub const MAX_FEEDBACK_COUNTERS: usize = 2;

/// How long initialisation measures the nominal counter against the platform's time source.
pub const CALIBRATION_MICROSECONDS: u32 = 10_000;

/// The hardware counter pair behind the feedback counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterSource {
    /// No usable pair: `FeedbackCounterCount = 0`.
    None,
    /// `IA32_APERF` / `IA32_MPERF` (0xE8 / 0xE7).
    AperfMperf,
    /// AMD's read-only copies (0xC00000E8 / 0xC00000E7), preferred on AMD: other software is
    /// known to reset the writable pair there.
    AmdAperfMperfReadOnly,
    /// The architectural fixed counters `IA32_FIXED_CTR1` (unhalted core cycles) and
    /// `IA32_FIXED_CTR2` (unhalted reference cycles), `width` bits wide: they wrap modulo
    /// 2^width, which is not a reset. Only where the host reserved the PMU.
    FixedPmc {
        /// The counters' bit width.
        width: u32,
    },
    /// AArch64's Activity Monitors: group-0 counters 0 (processor cycles) and 1
    /// (constant-frequency cycles at `CNTFRQ_EL0`), see [`crate::arm64`]. `NominalCount` is the
    /// constant count scaled to the nominal rate (see [`ConstantScale`]).
    Amu,
}

impl CounterSource {
    /// The (actual, nominal) MSR pair, if any.
    #[must_use]
    pub const fn msrs(self) -> Option<(u32, u32)> {
        match self {
            // The AMU's counters are system registers, not MSRs.
            Self::None | Self::Amu => None,
            Self::AperfMperf => Some((msr::IA32_APERF, msr::IA32_MPERF)),
            Self::AmdAperfMperfReadOnly => {
                Some((msr::AMD_APERF_READ_ONLY, msr::AMD_MPERF_READ_ONLY))
            }
            Self::FixedPmc { .. } => Some((msr::IA32_FIXED_CTR1, msr::IA32_FIXED_CTR2)),
        }
    }

    /// The mask of a raw value: all ones below the counter width.
    #[must_use]
    pub const fn mask(self) -> u64 {
        match self {
            Self::FixedPmc { width } if width < 64 => (1u64 << width).wrapping_sub(1),
            _ => u64::MAX,
        }
    }

    /// A short stable name (`none`, `aperf-mperf`, `amd-aperf-mperf-ro`, `fixed-pmc`, `amu`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::AperfMperf => "aperf-mperf",
            Self::AmdAperfMperfReadOnly => "amd-aperf-mperf-ro",
            Self::FixedPmc { .. } => "fixed-pmc",
            Self::Amu => "amu",
        }
    }
}

/// How a counter pair is read and accumulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairKind {
    /// Two 64-bit MSRs that reset (APERF/MPERF).
    Plain,
    /// Two MSRs that wrap modulo 2^width (the fixed counters), deltas bounded by the TSC.
    Modular,
    /// The Activity Monitors' system registers (AArch64).
    Amu,
}

/// Why no counters are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoCountersReason {
    /// The configuration's policy turned them off.
    DisabledByPolicy,
    /// The configuration asked for no counter source.
    NoSourceConfigured,
    /// CPUID announces no supported counter pair.
    NotAnnounced,
    /// CPUID announces the fixed counters, but the host did not reserve the PMU (the HAL
    /// refused: another owner holds it).
    PmuNotReserved,
    /// The announced counters faulted when read.
    ReadFaulted,
    /// The announced counters did not advance over a busy calibration interval
    /// (a hypervisor exposing zeros).
    NotAdvancing,
    /// No nominal rate could be configured, read or measured.
    NominalRateUnknown,
    /// The Activity Monitors are implemented, but firmware left their cycle counters (group 0,
    /// counters 0 and 1) disabled in `AMCNTENSET0_EL0` (the PEP never enables them).
    CountersDisabled,
}

/// Where the nominal rate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NominalRateSource {
    /// The configuration's override.
    Configuration,
    /// CPUID leaf 16h base frequency.
    CpuidBaseFrequency,
    /// `MSR_PLATFORM_INFO` maximum non-turbo ratio × 100 MHz.
    PlatformInfo,
    /// Measured against the platform's time source during initialisation.
    Calibrated,
    /// Not known.
    Unknown,
}

/// The counter setup decided at initialisation; read-only afterwards.
#[derive(Clone, Copy, Debug)]
pub struct FeedbackSetup {
    /// The selected source.
    pub source: CounterSource,
    /// Why there are no counters, when `count == 0`.
    pub reason: Option<NoCountersReason>,
    /// The actual-count MSR read first.
    pub actual_msr: u32,
    /// The nominal-count MSR read second.
    pub nominal_msr: u32,
    /// The mask of a raw value (all ones for 64-bit counters).
    pub mask: u64,
    /// How the pair is read and accumulated.
    pub kind: PairKind,
    /// [`CounterSource::Amu`]: the constant-frequency counter's rate (`CNTFRQ_EL0`), Hz.
    pub constant_hz: u64,
    /// [`CounterSource::Amu`]: constant ticks to nominal-rate cycles.
    pub constant_scale: ConstantScale,
    /// For modular sources: the most actual cycles a reference cycle can explain.
    pub max_actual_per_reference: u64,
    /// The most time-stamp ticks a counter pair's reads may span before it is read again
    /// ([`PAIR_BOUND_NS`] at the nominal rate).
    ///
    /// [`PAIR_BOUND_NS`]: super::PAIR_BOUND_NS
    pub max_pair_ticks: u64,
    /// Counters described per processor (0..=2).
    pub count: u32,
    /// The descriptors, the first `count` valid.
    pub descriptors: [PEP_PROCESSOR_FEEDBACK_COUNTER; MAX_FEEDBACK_COUNTERS],
    /// The nominal rate in MHz (0 when unknown).
    pub nominal_mhz: u32,
    /// Where the nominal rate came from.
    pub nominal_source: NominalRateSource,
    /// The rate measured during initialisation, in MHz (0 when not measured).
    pub calibrated_mhz: u32,
}
