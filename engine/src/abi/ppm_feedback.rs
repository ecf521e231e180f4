//! Processor (PPM) notifications: the feedback counters (`PEP_PROCESSOR_FEEDBACK_COUNTER`,
//! `PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS`, `PEP_NOTIFY_PPM_FEEDBACK_READ`).

use core::mem::offset_of;

use super::layout::{get_bits32, set_bits32};
use super::types::{ULONG, ULONG64};

/// `PROCESSOR_FEEDBACK_TYPE_INSTANTANEOUS` (0): the counter reads an instantaneous value.
pub const PROCESSOR_FEEDBACK_TYPE_INSTANTANEOUS: ULONG = 0x00;
/// `PROCESSOR_FEEDBACK_TYPE_RELATIVE` (1): the counter reads two incrementing values.
pub const PROCESSOR_FEEDBACK_TYPE_RELATIVE: ULONG = 0x01;
/// `PROCESSOR_FEEDBACK_COUNTER_FREQUENCY` (0): a frequency counter; `NominalRate` in MHz.
pub const PROCESSOR_FEEDBACK_COUNTER_FREQUENCY: ULONG = 0x00;
/// `PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE` (1): a performance counter; `NominalRate` is the
/// nominal performance.
pub const PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE: ULONG = 0x01;

/// `PEP_PROCESSOR_FEEDBACK_COUNTER`: one feedback counter, as the PEP describes it in
/// [`PEP_PPM_QUERY_FEEDBACK_COUNTERS`].
///
/// The first `ULONG` holds the bitfields, LSB first: `Affinitized` bit 0, `Type` bits 1-2,
/// `Counter` bits 3-6, `DiscountIdle` bit 7, `Reserved` bits 8-31.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
// The bindgen-style storage unit is public so that the layout is visible and replaceable.
#[allow(clippy::pub_underscore_fields)]
pub struct PEP_PROCESSOR_FEEDBACK_COUNTER {
    /// The bitfield storage unit (see the accessor methods).
    pub _bitfield_1: u32,
    /// The counter's nominal rate (MHz for frequency counters, the nominal performance for
    /// performance counters).
    pub NominalRate: ULONG,
}
assert_layout!(PEP_PROCESSOR_FEEDBACK_COUNTER, size 8, align 4, _bitfield_1 @ 0, NominalRate @ 4);
zeroed_default!(PEP_PROCESSOR_FEEDBACK_COUNTER { _bitfield_1: 0, NominalRate: 0 });

// The accessors read and write bindgen's storage unit `_bitfield_1` by design.
#[allow(clippy::used_underscore_binding)]
impl PEP_PROCESSOR_FEEDBACK_COUNTER {
    /// A counter description.
    ///
    /// `type_` is a `PROCESSOR_FEEDBACK_TYPE_*` value and `counter` a
    /// `PROCESSOR_FEEDBACK_COUNTER_*` value; both are masked to their field widths.
    /// `discount_idle` (undocumented) marks a counter that stops while the processor idles.
    #[must_use]
    pub const fn new(
        affinitized: bool,
        type_: ULONG,
        counter: ULONG,
        discount_idle: bool,
        nominal_rate: ULONG,
    ) -> Self {
        let affinitized = if affinitized { 1 } else { 0 };
        let discount_idle = if discount_idle { 1 } else { 0 };
        Self {
            _bitfield_1: Self::new_bitfield_1(affinitized, type_, counter, discount_idle, 0),
            NominalRate: nominal_rate,
        }
    }

    /// The bitfield unit for the given field values, each masked to its width.
    #[must_use]
    pub const fn new_bitfield_1(
        Affinitized: ULONG,
        Type: ULONG,
        Counter: ULONG,
        DiscountIdle: ULONG,
        Reserved: ULONG,
    ) -> u32 {
        let unit = set_bits32(0, 0, 1, Affinitized);
        let unit = set_bits32(unit, 1, 2, Type);
        let unit = set_bits32(unit, 3, 4, Counter);
        let unit = set_bits32(unit, 7, 1, DiscountIdle);
        set_bits32(unit, 8, 24, Reserved)
    }

    /// `Affinitized` (bit 0): the counter must be read on the processor it belongs to.
    #[must_use]
    pub const fn Affinitized(&self) -> ULONG {
        get_bits32(self._bitfield_1, 0, 1)
    }
    /// Sets `Affinitized` (bit 0); `val` is masked to 1 bit.
    pub const fn set_Affinitized(&mut self, val: ULONG) {
        self._bitfield_1 = set_bits32(self._bitfield_1, 0, 1, val);
    }

    /// `Type` (bits 1-2): a `PROCESSOR_FEEDBACK_TYPE_*` value.
    #[must_use]
    pub const fn Type(&self) -> ULONG {
        get_bits32(self._bitfield_1, 1, 2)
    }
    /// Sets `Type` (bits 1-2); `val` is masked to 2 bits.
    pub const fn set_Type(&mut self, val: ULONG) {
        self._bitfield_1 = set_bits32(self._bitfield_1, 1, 2, val);
    }

    /// `Counter` (bits 3-6): a `PROCESSOR_FEEDBACK_COUNTER_*` value.
    #[must_use]
    pub const fn Counter(&self) -> ULONG {
        get_bits32(self._bitfield_1, 3, 4)
    }
    /// Sets `Counter` (bits 3-6); `val` is masked to 4 bits.
    pub const fn set_Counter(&mut self, val: ULONG) {
        self._bitfield_1 = set_bits32(self._bitfield_1, 3, 4, val);
    }

    /// `DiscountIdle` (bit 7, undocumented): the counter stops while the processor is idle.
    #[must_use]
    pub const fn DiscountIdle(&self) -> ULONG {
        get_bits32(self._bitfield_1, 7, 1)
    }
    /// Sets `DiscountIdle` (bit 7); `val` is masked to 1 bit.
    pub const fn set_DiscountIdle(&mut self, val: ULONG) {
        self._bitfield_1 = set_bits32(self._bitfield_1, 7, 1, val);
    }

    /// `Reserved` (bits 8-31), 0.
    #[must_use]
    pub const fn Reserved(&self) -> ULONG {
        get_bits32(self._bitfield_1, 8, 24)
    }
    /// Sets `Reserved` (bits 8-31); `val` is masked to 24 bits.
    pub const fn set_Reserved(&mut self, val: ULONG) {
        self._bitfield_1 = set_bits32(self._bitfield_1, 8, 24, val);
    }
}

/// Pointer to a [`PEP_PROCESSOR_FEEDBACK_COUNTER`].
pub type PPEP_PROCESSOR_FEEDBACK_COUNTER = *mut PEP_PROCESSOR_FEEDBACK_COUNTER;

/// `PEP_PPM_QUERY_FEEDBACK_COUNTERS`: payload of [`PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS`].
///
/// `Counters` is an `ANYSIZE_ARRAY`: the buffer holds `Count` elements from offset 4, of which
/// only the first is declared here (see [`PEP_PPM_QUERY_FEEDBACK_COUNTERS::counters_ptr`]).
///
/// [`PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS`]: super::PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_FEEDBACK_COUNTERS {
    /// In: number of elements of `Counters` (the announced `FeedbackCounterCount`).
    pub Count: ULONG,
    /// Out: the counter descriptions (`ANYSIZE_ARRAY`).
    pub Counters: [PEP_PROCESSOR_FEEDBACK_COUNTER; 1],
}
assert_layout!(PEP_PPM_QUERY_FEEDBACK_COUNTERS, size 12, align 4, Count @ 0, Counters @ 4);
zeroed_default!(PEP_PPM_QUERY_FEEDBACK_COUNTERS {
    Count: 0,
    Counters: [PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed()],
});

impl PEP_PPM_QUERY_FEEDBACK_COUNTERS {
    /// The address of the first element of `Counters` in the buffer at `this`, computed
    /// without dereferencing `this` (the caller must still respect `Count` when writing).
    #[must_use]
    pub const fn counters_ptr(this: *mut Self) -> *mut PEP_PROCESSOR_FEEDBACK_COUNTER {
        this.wrapping_byte_add(offset_of!(Self, Counters)).cast()
    }
}

/// Pointer to a [`PEP_PPM_QUERY_FEEDBACK_COUNTERS`].
pub type PPEP_PPM_QUERY_FEEDBACK_COUNTERS = *mut PEP_PPM_QUERY_FEEDBACK_COUNTERS;

/// The relative-counter member of [`PEP_PPM_FEEDBACK_READ__bindgen_ty_1`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
    /// Accumulated nominal (reference) count.
    pub NominalCount: ULONG64,
    /// Accumulated actual count.
    pub ActualCount: ULONG64,
}
assert_layout!(
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1, size 16, align 8,
    NominalCount @ 0, ActualCount @ 8,
);
zeroed_default!(PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
    NominalCount: 0,
    ActualCount: 0,
});

/// The anonymous union of [`PEP_PPM_FEEDBACK_READ`]: an instantaneous value, or a relative
/// counter's pair of counts.
#[repr(C)]
#[derive(Clone, Copy)]
// bindgen's name for the anonymous member; kept so that generated code can replace this.
#[allow(clippy::pub_underscore_fields)]
pub union PEP_PPM_FEEDBACK_READ__bindgen_ty_1 {
    /// Value of a `PROCESSOR_FEEDBACK_TYPE_INSTANTANEOUS` counter.
    pub InstantaneousValue: ULONG64,
    /// Counts of a `PROCESSOR_FEEDBACK_TYPE_RELATIVE` counter.
    pub __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1,
}
assert_layout!(
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1, size 16, align 8,
    InstantaneousValue @ 0, __bindgen_anon_1 @ 0,
    __bindgen_anon_1.NominalCount @ 0, __bindgen_anon_1.ActualCount @ 8,
);

/// `PEP_PPM_FEEDBACK_READ`: payload of [`PEP_NOTIFY_PPM_FEEDBACK_READ`].
///
/// [`PEP_NOTIFY_PPM_FEEDBACK_READ`]: super::PEP_NOTIFY_PPM_FEEDBACK_READ
#[repr(C)]
#[derive(Clone, Copy)]
// bindgen's name for the anonymous member; kept so that generated code can replace this.
#[allow(clippy::pub_underscore_fields)]
pub struct PEP_PPM_FEEDBACK_READ {
    /// In: index of the counter in the PEP's [`PEP_PPM_QUERY_FEEDBACK_COUNTERS`] answer.
    pub CounterIndex: ULONG,
    /// Out: the value(s) read (after 4 bytes of padding).
    pub __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1,
}
assert_layout!(
    PEP_PPM_FEEDBACK_READ, size 24, align 8,
    CounterIndex @ 0, __bindgen_anon_1 @ 8,
    __bindgen_anon_1.InstantaneousValue @ 8,
    __bindgen_anon_1.__bindgen_anon_1 @ 8,
    __bindgen_anon_1.__bindgen_anon_1.NominalCount @ 8,
    __bindgen_anon_1.__bindgen_anon_1.ActualCount @ 16,
);
zeroed_default!(PEP_PPM_FEEDBACK_READ {
    CounterIndex: 0,
    __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1 {
        __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1::zeroed(),
    },
});

/// Pointer to a [`PEP_PPM_FEEDBACK_READ`].
pub type PPEP_PPM_FEEDBACK_READ = *mut PEP_PPM_FEEDBACK_READ;
