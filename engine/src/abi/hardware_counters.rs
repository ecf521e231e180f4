//! Processor numbering and hardware-counter arbitration (`ntddk.h`, `wdm.h`).

use core::mem::offset_of;

use super::types::{HANDLE, KAFFINITY, PVOID, SIZE_T, UCHAR, ULONG, ULONGLONG, USHORT};

// Items that only the documentation links name.
#[cfg(doc)]
use super::types::STATUS_NOT_SUPPORTED;

/// `GROUP_AFFINITY`: a set of processors within one processor group.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GROUP_AFFINITY {
    /// Processor bit mask within the group.
    pub Mask: KAFFINITY,
    /// Group number.
    pub Group: USHORT,
    /// Reserved, 0.
    pub Reserved: [USHORT; 3],
}
assert_layout!(GROUP_AFFINITY, size 16, align 8, Mask @ 0, Group @ 8, Reserved @ 10);
zeroed_default!(GROUP_AFFINITY { Mask: 0, Group: 0, Reserved: [0; 3] });

/// Pointer to a [`GROUP_AFFINITY`].
pub type PGROUP_AFFINITY = *mut GROUP_AFFINITY;

/// `PROCESSOR_NUMBER`: a processor's group and number within the group.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PROCESSOR_NUMBER {
    /// Group number.
    pub Group: USHORT,
    /// Number within the group.
    pub Number: UCHAR,
    /// Reserved, 0.
    pub Reserved: UCHAR,
}
assert_layout!(PROCESSOR_NUMBER, size 4, align 2, Group @ 0, Number @ 2, Reserved @ 3);
zeroed_default!(PROCESSOR_NUMBER { Group: 0, Number: 0, Reserved: 0 });

/// Pointer to a [`PROCESSOR_NUMBER`].
pub type PPROCESSOR_NUMBER = *mut PROCESSOR_NUMBER;

/// `PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE` (C enum, 4 bytes): what a
/// [`PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR`] requests.
pub type PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = i32;
/// `ResourceTypeSingle` (0): one counter, `u.CounterIndex`.
pub const ResourceTypeSingle: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = 0;
/// `ResourceTypeRange` (1): counters `u.Range.Begin ..= u.Range.End`.
pub const ResourceTypeRange: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = 1;
/// `ResourceTypeExtendedCounterConfiguration` (2): not supported
/// (`HalAllocateHardwareCounters` returns [`STATUS_NOT_SUPPORTED`]).
pub const ResourceTypeExtendedCounterConfiguration: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = 2;
/// `ResourceTypeOverflow` (3): an overflow handler, `u.OverflowHandler`.
pub const ResourceTypeOverflow: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = 3;
/// `ResourceTypeEventBuffer` (4): an event buffer, `u.EventBufferConfiguration`.
pub const ResourceTypeEventBuffer: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = 4;
/// `ResourceTypeIdenitificationTag` (5): an identification tag, `u.IdentificationTag`.
///
/// The misspelling ("Idenitification") is the header's own and is kept so the name matches
/// `ntddk.h` and `wdk-sys`.
pub const ResourceTypeIdenitificationTag: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = 5;
/// `ResourceTypeMax` (6): one past the last type.
pub const ResourceTypeMax: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE = 6;

/// `PHYSICAL_COUNTER_OVERFLOW_HANDLER`: a counter-overflow handler, called at `PROFILE_LEVEL`
/// with the bitmap of overflowed counters and the owning allocation handle.
pub type PHYSICAL_COUNTER_OVERFLOW_HANDLER =
    Option<unsafe extern "C" fn(OverflowBits: ULONGLONG, OwningHandle: HANDLE)>;
/// `PPHYSICAL_COUNTER_OVERFLOW_HANDLER` (same type).
pub type PPHYSICAL_COUNTER_OVERFLOW_HANDLER = PHYSICAL_COUNTER_OVERFLOW_HANDLER;

/// `PHYSICAL_COUNTER_EVENT_BUFFER_OVERFLOW_HANDLER`: an event-buffer threshold handler, called
/// at `PROFILE_LEVEL`.
pub type PHYSICAL_COUNTER_EVENT_BUFFER_OVERFLOW_HANDLER = Option<
    unsafe extern "C" fn(
        EventBuffer: PVOID,
        EntrySize: SIZE_T,
        NumberOfEntries: SIZE_T,
        OwningHandle: HANDLE,
    ),
>;
/// `PPHYSICAL_COUNTER_EVENT_BUFFER_OVERFLOW_HANDLER` (same type).
pub type PPHYSICAL_COUNTER_EVENT_BUFFER_OVERFLOW_HANDLER =
    PHYSICAL_COUNTER_EVENT_BUFFER_OVERFLOW_HANDLER;

/// `PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION`: an event-buffer request (Windows 10 1903
/// and later; older kits lack this union member).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION {
    /// Threshold handler.
    pub OverflowHandler: PPHYSICAL_COUNTER_EVENT_BUFFER_OVERFLOW_HANDLER,
    /// Custom size of one event-buffer entry, bytes.
    pub CustomEventBufferEntrySize: ULONG,
    /// Entries that trigger the handler.
    pub EventThreshold: ULONG,
}
assert_layout!(
    PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION, size 16, align 8,
    OverflowHandler @ 0, CustomEventBufferEntrySize @ 8, EventThreshold @ 12,
);
zeroed_default!(PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION {
    OverflowHandler: None,
    CustomEventBufferEntrySize: 0,
    EventThreshold: 0,
});

/// Pointer to a [`PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION`].
pub type PPHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION =
    *mut PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION;

/// The `Range` member of [`PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1__bindgen_ty_1 {
    /// First counter index.
    pub Begin: ULONG,
    /// Last counter index (inclusive).
    pub End: ULONG,
}
assert_layout!(
    PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1__bindgen_ty_1, size 8, align 4,
    Begin @ 0, End @ 4,
);
zeroed_default!(PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1__bindgen_ty_1 {
    Begin: 0,
    End: 0,
});

/// The union `u` of [`PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR`]; the member in use is selected by
/// `Type`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1 {
    /// [`ResourceTypeSingle`]: the counter index.
    pub CounterIndex: ULONG,
    /// [`ResourceTypeRange`]: the counter range.
    pub Range: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1__bindgen_ty_1,
    /// [`ResourceTypeOverflow`]: the overflow handler.
    pub OverflowHandler: PHYSICAL_COUNTER_OVERFLOW_HANDLER,
    /// [`ResourceTypeEventBuffer`]: the event-buffer configuration.
    pub EventBufferConfiguration: PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION,
    /// [`ResourceTypeIdenitificationTag`]: the tag.
    pub IdentificationTag: ULONG,
}
assert_layout!(
    PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1, size 16, align 8,
    CounterIndex @ 0, Range @ 0, Range.Begin @ 0, Range.End @ 4, OverflowHandler @ 0,
    EventBufferConfiguration @ 0, IdentificationTag @ 0,
);

/// `PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR`: one counter resource requested from
/// `HalAllocateHardwareCounters`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR {
    /// A `ResourceType*` value.
    pub Type: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR_TYPE,
    /// Flags, 0.
    pub Flags: ULONG,
    /// The request, selected by `Type`.
    pub u: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1,
}
assert_layout!(
    PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR, size 24, align 8,
    Type @ 0, Flags @ 4, u @ 8, u.CounterIndex @ 8, u.Range.Begin @ 8, u.Range.End @ 12,
    u.OverflowHandler @ 8, u.EventBufferConfiguration.CustomEventBufferEntrySize @ 16,
    u.EventBufferConfiguration.EventThreshold @ 20, u.IdentificationTag @ 8,
);
zeroed_default!(PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR {
    Type: ResourceTypeSingle,
    Flags: 0,
    u: PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR__bindgen_ty_1 {
        EventBufferConfiguration: PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION::zeroed(),
    },
});

/// Pointer to a [`PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR`].
pub type PPHYSICAL_COUNTER_RESOURCE_DESCRIPTOR = *mut PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR;

/// `PHYSICAL_COUNTER_RESOURCE_LIST`: the resources requested from
/// `HalAllocateHardwareCounters`.
///
/// `Descriptors` is an `ANYSIZE_ARRAY` of `Count` elements from offset 8, of which only the
/// first is declared here (see [`PHYSICAL_COUNTER_RESOURCE_LIST::descriptors_ptr`]).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PHYSICAL_COUNTER_RESOURCE_LIST {
    /// Number of elements of `Descriptors`.
    pub Count: ULONG,
    /// The descriptors (`ANYSIZE_ARRAY`).
    pub Descriptors: [PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR; 1],
}
assert_layout!(PHYSICAL_COUNTER_RESOURCE_LIST, size 32, align 8, Count @ 0, Descriptors @ 8);
zeroed_default!(PHYSICAL_COUNTER_RESOURCE_LIST {
    Count: 0,
    Descriptors: [PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR::zeroed()],
});

impl PHYSICAL_COUNTER_RESOURCE_LIST {
    /// The address of the first element of `Descriptors` in the buffer at `this`, computed
    /// without dereferencing `this`.
    #[must_use]
    pub const fn descriptors_ptr(this: *mut Self) -> *mut PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR {
        this.wrapping_byte_add(offset_of!(Self, Descriptors)).cast()
    }
}

/// Pointer to a [`PHYSICAL_COUNTER_RESOURCE_LIST`].
pub type PPHYSICAL_COUNTER_RESOURCE_LIST = *mut PHYSICAL_COUNTER_RESOURCE_LIST;
