//! The payloads PoFx passes, as plain values.
//!
//! Which notifications each belongs to ([`Payload`]), the sentinel they are filled with to see
//! whether the PEP wrote them, and the helpers that build the rest (a handle from its value, a
//! device id as a `UNICODE_STRING`).

use ppm_engine::abi::{
    PEP_DEVICE_STARTED, PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, PEP_PPM_ENTER_SYSTEM_STATE,
    PEP_PPM_FEEDBACK_READ, PEP_PPM_FEEDBACK_READ__bindgen_ty_1,
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1, PEP_PPM_PERF_CHECK_COMPLETE,
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_PPM_QUERY_PERF_CAPABILITIES, PEP_PPM_QUERY_PLATFORM_STATES, PEP_PPM_QUERY_VETO_REASONS,
    PEP_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PROCESSOR_FEEDBACK_COUNTER, PEP_UNREGISTER_DEVICE,
    PEPHANDLE, PEPHANDLE__, ULONG, UNICODE_STRING,
};
use ppm_engine::payload::{Dpm, Ppm};

use crate::names::{UNDEFINED_DPM, UNDEFINED_PPM};

/// The byte every sentinel-filled buffer is filled with.
pub const SENTINEL_BYTE: u8 = 0xA5;
/// A 64-bit field that still holds the sentinel.
pub const SENTINEL: u64 = u64::from_ne_bytes([SENTINEL_BYTE; 8]);
/// A 32-bit field that still holds the sentinel.
pub const SENTINEL_32: u32 = u32::from_ne_bytes([SENTINEL_BYTE; 4]);

/// The most feedback counters a caller asks a PEP to describe (a [`CountersBuffer`] holds one
/// more, to see a write beyond `Count`).
pub const MAX_QUERIED_COUNTERS: usize = 64;

/// A payload that holds no pointers, and the notifications whose documented payload it is.
///
/// # Safety
/// The type has the layout of the C structure PoFx documents for every notification listed
/// (or, for [`Sentinel`], is at least as large as any), and every bit pattern is a valid value
/// of it: the PEP may write any bytes into it.
pub unsafe trait Payload {
    /// The DPM notifications whose documented payload this is.
    const DPM: &'static [ULONG];
    /// The PPM notifications whose documented payload this is.
    const PPM: &'static [ULONG];
}

/// The notification of class `$class` whose structure the engine types `$structure` as
/// (from the engine's notification table, through [`ppm_engine::payload::Payload`]).
macro_rules! id {
    ($class:ident $structure:ty) => {
        <$structure as ppm_engine::payload::Payload<$class>>::ID
    };
}

/// [`Payload`] for structures of the engine's table that hold no pointers.
macro_rules! pointer_free {
    (Dpm: $($dpm:ident),+; Ppm: $($ppm:ident),+ $(;)?) => {
        $(
            // SAFETY: the C structure of the notification the engine's table gives it, made of
            // integers and a handle (a pointer-sized value the PEP compares, never follows).
            unsafe impl Payload for $dpm {
                const DPM: &'static [ULONG] = &[id!(Dpm $dpm)];
                const PPM: &'static [ULONG] = &[];
            }
        )+
        $(
            // SAFETY: the C structure of the notification the engine's table gives it, made of
            // integers.
            unsafe impl Payload for $ppm {
                const DPM: &'static [ULONG] = &[];
                const PPM: &'static [ULONG] = &[id!(Ppm $ppm)];
            }
        )+
    };
}

pointer_free!(
    Dpm: PEP_UNREGISTER_DEVICE, PEP_DEVICE_STARTED;
    Ppm: PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_FEEDBACK_READ, PEP_PPM_QUERY_PERF_CAPABILITIES,
        PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_ENTER_SYSTEM_STATE, PEP_PPM_RESUME_FROM_SYSTEM_STATE,
        PEP_PPM_PERF_CHECK_COMPLETE;
);
// SAFETY: the layout of `PEP_PPM_QUERY_FEEDBACK_COUNTERS` with a longer array of integer
// descriptors; `Count` is at most the descriptors it holds (`CountersBuffer::new`).
unsafe impl Payload for CountersBuffer {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[id!(Ppm PEP_PPM_QUERY_FEEDBACK_COUNTERS)];
}
// SAFETY: one `u32`, the layout of both count structures (asserted below); `ENUMERATE_BOOT_VETOES`
// documents no payload, so a larger buffer than none is harmless.
unsafe impl Payload for CountPayload {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[
        id!(Ppm PEP_PPM_QUERY_PLATFORM_STATES),
        id!(Ppm PEP_PPM_QUERY_VETO_REASONS),
        PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES,
    ];
}
// SAFETY: 128 bytes of integers, only with notification ids no header defines (which document
// no payload).
unsafe impl Payload for Sentinel {
    const DPM: &'static [ULONG] = &UNDEFINED_DPM;
    const PPM: &'static [ULONG] = &UNDEFINED_PPM;
}

/// The one-count payloads (`PEP_PPM_QUERY_PLATFORM_STATES`, `PEP_PPM_QUERY_VETO_REASONS`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountPayload {
    /// The count.
    pub count: u32,
}
const _: () = assert!(
    size_of::<CountPayload>() == size_of::<PEP_PPM_QUERY_PLATFORM_STATES>()
        && size_of::<CountPayload>() == size_of::<PEP_PPM_QUERY_VETO_REASONS>()
);

impl CountPayload {
    /// A count that still holds the sentinel.
    pub const FRESH: Self = Self { count: SENTINEL_32 };
}

/// A `PEP_PPM_QUERY_FEEDBACK_COUNTERS` with room for [`MAX_QUERIED_COUNTERS`] + 1 descriptors
/// (the C structure's `Counters[ANYSIZE_ARRAY]`): same layout, larger array, every descriptor
/// sentinel-filled.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CountersBuffer {
    count: ULONG,
    /// The descriptors (`Counters`).
    pub counters: [PEP_PROCESSOR_FEEDBACK_COUNTER; MAX_QUERIED_COUNTERS + 1],
}

impl CountersBuffer {
    /// The descriptors a fresh buffer holds.
    const FRESH_COUNTER: PEP_PROCESSOR_FEEDBACK_COUNTER = {
        let mut sentinel = PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed();
        sentinel._bitfield_1 = SENTINEL_32;
        sentinel.NominalRate = SENTINEL_32;
        sentinel
    };

    /// A sentinel-filled buffer asking for `count` descriptors, or `None` when it has no room
    /// for them (more than [`MAX_QUERIED_COUNTERS`] + 1).
    #[must_use]
    pub const fn new(count: ULONG) -> Option<Self> {
        if count as usize > MAX_QUERIED_COUNTERS + 1 {
            return None;
        }
        Some(Self { count, counters: [Self::FRESH_COUNTER; MAX_QUERIED_COUNTERS + 1] })
    }

    /// `Count` as it is now.
    #[must_use]
    pub const fn count(&self) -> ULONG {
        self.count
    }

    /// Whether the descriptors from `from` on still hold the sentinel.
    #[must_use]
    pub fn untouched_from(&self, from: usize) -> bool {
        self.counters.iter().skip(from).all(|counter| {
            counter._bitfield_1 == Self::FRESH_COUNTER._bitfield_1
                && counter.NominalRate == Self::FRESH_COUNTER.NominalRate
        })
    }

    /// Whether the buffer is as `CountersBuffer::new(count)` made it.
    #[must_use]
    pub fn untouched(&self, count: ULONG) -> bool {
        self.count == count && self.untouched_from(0)
    }
}

/// A buffer of [`SENTINEL_BYTE`]s, passed with undefined notification ids.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sentinel([u64; 16]);

impl Sentinel {
    /// A buffer no one wrote.
    pub const FRESH: Self = Self([SENTINEL; 16]);
}

/// A `PEP_PPM_FEEDBACK_READ` of counter `counter_index`, its counts sentinel-filled.
#[must_use]
pub const fn feedback_read(counter_index: ULONG) -> PEP_PPM_FEEDBACK_READ {
    PEP_PPM_FEEDBACK_READ {
        CounterIndex: counter_index,
        __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1 {
            __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
                NominalCount: SENTINEL,
                ActualCount: SENTINEL,
            },
        },
    }
}

/// `(NominalCount, ActualCount)` of a read.
#[must_use]
pub const fn read_counts(read: &PEP_PPM_FEEDBACK_READ) -> (u64, u64) {
    // SAFETY: both union members are plain integers covering the same bytes, so every bit
    // pattern is a valid `NominalCount`/`ActualCount` pair.
    let counts = unsafe { read.__bindgen_anon_1.__bindgen_anon_1 };
    (counts.NominalCount, counts.ActualCount)
}

/// A sentinel-filled `PEP_PPM_QUERY_CAPABILITIES`.
#[must_use]
pub const fn capabilities_sentinel() -> PEP_PPM_QUERY_CAPABILITIES {
    PEP_PPM_QUERY_CAPABILITIES {
        FeedbackCounterCount: SENTINEL_32,
        IdleStateCount: SENTINEL_32,
        PerformanceStatesSupported: SENTINEL_BYTE,
        ParkingSupported: SENTINEL_BYTE,
        DiscretePerformanceStateCount: SENTINEL_BYTE,
        Reserved: SENTINEL_BYTE,
    }
}

/// Whether every field of `capabilities` still holds the sentinel.
#[must_use]
pub const fn capabilities_untouched(capabilities: &PEP_PPM_QUERY_CAPABILITIES) -> bool {
    let fresh = capabilities_sentinel();
    capabilities.FeedbackCounterCount == fresh.FeedbackCounterCount
        && capabilities.IdleStateCount == fresh.IdleStateCount
        && capabilities.PerformanceStatesSupported == fresh.PerformanceStatesSupported
        && capabilities.ParkingSupported == fresh.ParkingSupported
        && capabilities.DiscretePerformanceStateCount == fresh.DiscretePerformanceStateCount
        && capabilities.Reserved == fresh.Reserved
}

/// A sentinel-filled `PEP_PPM_QUERY_PERF_CAPABILITIES`.
#[must_use]
pub const fn perf_sentinel() -> PEP_PPM_QUERY_PERF_CAPABILITIES {
    PEP_PPM_QUERY_PERF_CAPABILITIES {
        HighestPerformance: SENTINEL_32,
        NominalPerformance: SENTINEL_32,
        LowestNonlinearPerformance: SENTINEL_32,
        LowestPerformance: SENTINEL_32,
        DomainId: SENTINEL_32,
        DomainMembers: SENTINEL_32,
    }
}

/// Whether every field of `perf` still holds the sentinel.
#[must_use]
pub fn perf_untouched(perf: &PEP_PPM_QUERY_PERF_CAPABILITIES) -> bool {
    [
        perf.HighestPerformance,
        perf.NominalPerformance,
        perf.LowestNonlinearPerformance,
        perf.LowestPerformance,
        perf.DomainId,
        perf.DomainMembers,
    ]
    .iter()
    .all(|value| *value == SENTINEL_32)
}

/// A `PEP_PPM_QUERY_DOMAIN_INFO` of domain `domain` (an input), its outputs sentinel-filled.
#[must_use]
pub const fn domain_sentinel(domain: ULONG) -> PEP_PPM_QUERY_DOMAIN_INFO {
    let mut sentinel = PEP_PPM_QUERY_DOMAIN_INFO::zeroed();
    sentinel.DomainId = domain;
    sentinel.CoordinationType = SENTINEL_BYTE;
    sentinel.IdleProcessorsDiscounted = SENTINEL_BYTE;
    sentinel.SchedulerDirectedTransitionsSupported = SENTINEL_BYTE;
    sentinel.AffinitizePerfSet = SENTINEL_BYTE;
    sentinel.WorstCaseTransitionLatency = SENTINEL_32;
    sentinel.WorstCaseTransitionOverhead = SENTINEL_32;
    sentinel
}

/// Whether every output of `domain` still holds the sentinel.
#[must_use]
pub const fn domain_untouched(domain: &PEP_PPM_QUERY_DOMAIN_INFO) -> bool {
    domain.CoordinationType == SENTINEL_BYTE
        && domain.IdleProcessorsDiscounted == SENTINEL_BYTE
        && domain.SchedulerDirectedTransitionsSupported == SENTINEL_BYTE
        && domain.AffinitizePerfSet == SENTINEL_BYTE
        && domain.WorstCaseTransitionLatency == SENTINEL_32
        && domain.WorstCaseTransitionOverhead == SENTINEL_32
}

/// The handle of value `address` (a PEPHANDLE is an opaque value, never dereferenced).
#[must_use]
pub const fn handle(address: usize) -> PEPHANDLE {
    std::ptr::without_provenance_mut::<PEPHANDLE__>(address)
}

/// `text` in UTF-16.
#[must_use]
pub fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

/// A device id as the `UNICODE_STRING` PoFx passes (`units` must outlive its use; an id of more
/// than 32 767 units is cut to a length of 0xFFFE bytes).
#[must_use]
pub fn unicode_string(units: &mut [u16]) -> UNICODE_STRING {
    let bytes = u16::try_from(units.len() * 2).unwrap_or(0xFFFE);
    UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: units.as_mut_ptr() }
}
