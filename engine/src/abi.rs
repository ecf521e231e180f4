//! The C ABI of the Windows power framework (`PoFx`) Platform Extension Plug-in (PEP) interface.
//!
//! This module declares, for x86-64 and ARM64 (LLP64), the types, constants and callback
//! signatures that the WDK headers `pepfx.h` (and, where marked, its superset `pep_x.h`) and a
//! few parts of `ntddk.h` define for a PEP: the registration structures passed to
//! `PoFxRegisterPluginEx`, the notification IDs and payloads of the device (DPM) and processor
//! (PPM) notification callbacks, and the hardware-counter arbitration types of
//! `HalAllocateHardwareCounters`.
//!
//! The declarations have the shape bindgen gives them: structures are `#[repr(C)]` and named
//! exactly as the header typedefs, fields keep the header's names, C enumerations are `i32`
//! aliases with one constant per enumerator, callbacks are `Option<unsafe extern "C" fn ...>`,
//! anonymous unions are `__bindgen_anon_N` fields of `..._bindgen_ty_N` types, and bitfields
//! are one storage unit (`_bitfield_1`) with accessor methods. A future `wdk-sys` that binds
//! `pepfx.h` can therefore replace this module mechanically.
//!
//! None of the `pepfx.h` part is bound by `wdk-sys` today. The handful of `ntddk.h` and `wdm.h`
//! types repeated here (`GROUP_AFFINITY`, `PROCESSOR_NUMBER`, the physical-counter types, ...)
//! are declared again so that this `no_std`, dependency-free crate can name them; they are
//! layout-identical to the `wdk-sys` definitions.
//!
//! Every structure and union has compile-time assertions of its size, alignment and field
//! offsets, taken from the headers compiled for x64 (ARM64 has the same layout).
// Names follow the Windows headers (`ULONG`, `PEP_PPM_FEEDBACK_READ.CounterIndex`,
// `Affinitized()`, ...) so that bindgen output can replace this module one for one.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
// Same reason: `ULONG`, `HANDLE`, `GUID` are the header spellings, not Rust acronyms.
#![allow(clippy::upper_case_acronyms)]

use core::ffi::c_void;
use core::mem::{align_of, offset_of, size_of};

/// Asserts, at compile time, the size and alignment of a type and the offsets of its fields
/// (nested fields are written `a.b.c`).
macro_rules! assert_layout {
    ($t:ty, size $size:literal, align $align:literal $(, $($field:ident).+ @ $off:literal)* $(,)?) => {
        const _: () = {
            assert!(size_of::<$t>() == $size);
            assert!(align_of::<$t>() == $align);
            $(assert!(offset_of!($t, $($field).+) == $off);)*
        };
    };
}

/// Implements a `const fn zeroed()` (every field zero, NULL or `None`) and `Default` through it.
macro_rules! zeroed_default {
    ($t:ident { $($body:tt)* }) => {
        impl $t {
            /// A value with every field zero, NULL or `None`.
            #[must_use]
            pub const fn zeroed() -> Self {
                Self { $($body)* }
            }
        }

        impl Default for $t {
            fn default() -> Self {
                Self::zeroed()
            }
        }
    };
}

/// A mask of the `width` low bits (`1 <= width <= 32`).
const fn mask32(width: u32) -> u32 {
    u32::MAX.wrapping_shr(32_u32.wrapping_sub(width))
}

/// Reads the `width`-bit field at bit `offset` (LSB first) of a 32-bit bitfield unit.
const fn get_bits32(unit: u32, offset: u32, width: u32) -> u32 {
    unit.wrapping_shr(offset) & mask32(width)
}

/// Writes `val` (masked to `width` bits) into the field at bit `offset` of a 32-bit unit.
const fn set_bits32(unit: u32, offset: u32, width: u32, val: u32) -> u32 {
    let field = mask32(width).wrapping_shl(offset);
    (unit & !field) | (val.wrapping_shl(offset) & field)
}

/// A mask of the `width` low bits (`1 <= width <= 16`).
const fn mask16(width: u32) -> u16 {
    u16::MAX.wrapping_shr(16_u32.wrapping_sub(width))
}

/// Reads the `width`-bit field at bit `offset` (LSB first) of a 16-bit bitfield unit.
const fn get_bits16(unit: u16, offset: u32, width: u32) -> u16 {
    unit.wrapping_shr(offset) & mask16(width)
}

/// Writes `val` (masked to `width` bits) into the field at bit `offset` of a 16-bit unit.
const fn set_bits16(unit: u16, offset: u32, width: u32, val: u16) -> u16 {
    let field = mask16(width).wrapping_shl(offset);
    (unit & !field) | (val.wrapping_shl(offset) & field)
}

/// `size_of` a registration structure as the `USHORT` its `Size` member holds.
///
/// Used in constant items only, where a size that does not fit fails the build.
const fn size_as_ushort(size: usize) -> USHORT {
    assert!(size <= 0xFFFF, "structure size does not fit a USHORT");
    let [lo, hi, ..] = size.to_le_bytes();
    u16::from_le_bytes([lo, hi])
}

// ---------------------------------------------------------------------------------------------
// Scalar types (`ntdef.h`, `basetsd.h`)
// ---------------------------------------------------------------------------------------------

/// `ULONG`: 32-bit unsigned (LLP64 `unsigned long`).
pub type ULONG = u32;
/// `USHORT`: 16-bit unsigned.
pub type USHORT = u16;
/// `UCHAR`: 8-bit unsigned.
pub type UCHAR = u8;
/// `BOOLEAN`: one byte, [`TRUE`] or [`FALSE`].
pub type BOOLEAN = u8;
/// `ULONG64`: 64-bit unsigned.
pub type ULONG64 = u64;
/// `ULONGLONG`: 64-bit unsigned.
pub type ULONGLONG = u64;
/// `LONG`: 32-bit signed (LLP64 `long`).
pub type LONG = i32;
/// `NTSTATUS`: a 32-bit signed status code; negative values are errors.
pub type NTSTATUS = i32;
/// `PVOID`: an untyped pointer.
pub type PVOID = *mut c_void;
/// `HANDLE`: an opaque pointer-sized handle.
pub type HANDLE = *mut c_void;
/// `PHANDLE`: a pointer to a [`HANDLE`].
pub type PHANDLE = *mut HANDLE;
/// `KAFFINITY`: a pointer-sized processor bit mask within one processor group.
pub type KAFFINITY = usize;
/// `SIZE_T`: a pointer-sized unsigned byte count.
pub type SIZE_T = usize;

/// `BOOLEAN` true.
pub const TRUE: BOOLEAN = 1;
/// `BOOLEAN` false.
pub const FALSE: BOOLEAN = 0;

// ---------------------------------------------------------------------------------------------
// NTSTATUS values (`ntstatus.h`)
// ---------------------------------------------------------------------------------------------

/// `STATUS_SUCCESS` (`0x00000000`).
pub const STATUS_SUCCESS: NTSTATUS = 0;
/// `STATUS_UNSUCCESSFUL` (`0xC0000001`).
pub const STATUS_UNSUCCESSFUL: NTSTATUS = 0xC000_0001_u32.cast_signed();
/// `STATUS_INVALID_PARAMETER` (`0xC000000D`). `PoFxRegisterPluginEx` returns it for a bad
/// kernel-information `Version` or `Size`, or a NULL notification callback.
pub const STATUS_INVALID_PARAMETER: NTSTATUS = 0xC000_000D_u32.cast_signed();
/// `STATUS_INSUFFICIENT_RESOURCES` (`0xC000009A`). Also what `HalAllocateHardwareCounters`
/// returns while another owner holds the counters.
pub const STATUS_INSUFFICIENT_RESOURCES: NTSTATUS = 0xC000_009A_u32.cast_signed();
/// `STATUS_NOT_SUPPORTED` (`0xC00000BB`).
pub const STATUS_NOT_SUPPORTED: NTSTATUS = 0xC000_00BB_u32.cast_signed();
/// `STATUS_INVALID_KERNEL_INFO_VERSION` (`0xC000A004`), the neighbour of
/// [`STATUS_INVALID_PEP_INFO_VERSION`] in `ntstatus.h`.
pub const STATUS_INVALID_KERNEL_INFO_VERSION: NTSTATUS = 0xC000_A004_u32.cast_signed();
/// `STATUS_INVALID_PEP_INFO_VERSION` (`0xC000A005`): `PoFxRegisterPluginEx` rejected
/// [`PEP_INFORMATION::Version`].
///
/// The value is not in the PEP documentation; it is the `ntstatus.h` value as reproduced by
/// public transcriptions of that header (Go and C# `NTSTATUS` tables list
/// `STATUS_INVALID_PEP_INFO_VERSION = 0xC000A005`).
pub const STATUS_INVALID_PEP_INFO_VERSION: NTSTATUS = 0xC000_A005_u32.cast_signed();

// ---------------------------------------------------------------------------------------------
// Handles and common structures
// ---------------------------------------------------------------------------------------------

/// The pointee of a [`PEPHANDLE`] (`DECLARE_HANDLE(PEPHANDLE)`); never dereferenced.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEPHANDLE__ {
    /// Placeholder member of the handle structure.
    pub unused: i32,
}
assert_layout!(PEPHANDLE__, size 4, align 4, unused @ 0);

/// `PEPHANDLE`: the PEP's own opaque, pointer-sized handle for a device it accepted.
pub type PEPHANDLE = *mut PEPHANDLE__;

/// The pointee of a [`POHANDLE`] (`DECLARE_HANDLE(POHANDLE)`); never dereferenced.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct POHANDLE__ {
    /// Placeholder member of the handle structure.
    pub unused: i32,
}
assert_layout!(POHANDLE__, size 4, align 4, unused @ 0);

/// `POHANDLE`: `PoFx`'s opaque, pointer-sized handle (for the plug-in or for a device).
pub type POHANDLE = *mut POHANDLE__;

/// `UNICODE_STRING`: a counted UTF-16 string, not necessarily NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UNICODE_STRING {
    /// Length of the string in bytes, excluding any terminator.
    pub Length: USHORT,
    /// Size of `Buffer` in bytes.
    pub MaximumLength: USHORT,
    /// The UTF-16 code units.
    pub Buffer: *mut u16,
}
assert_layout!(UNICODE_STRING, size 16, align 8, Length @ 0, MaximumLength @ 2, Buffer @ 8);
zeroed_default!(UNICODE_STRING { Length: 0, MaximumLength: 0, Buffer: core::ptr::null_mut() });

/// Pointer to a [`UNICODE_STRING`].
pub type PUNICODE_STRING = *mut UNICODE_STRING;
/// Pointer to a read-only [`UNICODE_STRING`].
pub type PCUNICODE_STRING = *const UNICODE_STRING;

/// `GUID`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GUID {
    /// First 32 bits.
    pub Data1: ULONG,
    /// Next 16 bits.
    pub Data2: USHORT,
    /// Next 16 bits.
    pub Data3: USHORT,
    /// Last 64 bits, as bytes.
    pub Data4: [UCHAR; 8],
}
assert_layout!(GUID, size 16, align 4, Data1 @ 0, Data2 @ 4, Data3 @ 6, Data4 @ 8);
zeroed_default!(GUID { Data1: 0, Data2: 0, Data3: 0, Data4: [0; 8] });

/// `SYSTEM_POWER_STATE` (C enum, 4 bytes): a system sleep state.
pub type SYSTEM_POWER_STATE = i32;
/// Pointer to a [`SYSTEM_POWER_STATE`].
pub type PSYSTEM_POWER_STATE = *mut SYSTEM_POWER_STATE;
/// `PowerSystemUnspecified` (0).
pub const PowerSystemUnspecified: SYSTEM_POWER_STATE = 0;
/// `PowerSystemWorking` (1): S0.
pub const PowerSystemWorking: SYSTEM_POWER_STATE = 1;
/// `PowerSystemSleeping1` (2): S1.
pub const PowerSystemSleeping1: SYSTEM_POWER_STATE = 2;
/// `PowerSystemSleeping2` (3): S2.
pub const PowerSystemSleeping2: SYSTEM_POWER_STATE = 3;
/// `PowerSystemSleeping3` (4): S3.
pub const PowerSystemSleeping3: SYSTEM_POWER_STATE = 4;
/// `PowerSystemHibernate` (5): S4.
pub const PowerSystemHibernate: SYSTEM_POWER_STATE = 5;
/// `PowerSystemShutdown` (6): S5.
pub const PowerSystemShutdown: SYSTEM_POWER_STATE = 6;
/// `PowerSystemMaximum` (7): one past the last state (the enumerator that follows
/// `PowerSystemShutdown` in `wdm.h`).
pub const PowerSystemMaximum: SYSTEM_POWER_STATE = 7;

/// `KINTERRUPT_MODE` (C enum, 4 bytes, `wdm.h`): `LevelSensitive` (0) or `Latched` (1).
pub type KINTERRUPT_MODE = i32;
/// `KINTERRUPT_POLARITY` (C enum, 4 bytes, `wdm.h`): `InterruptPolarityUnknown` (0),
/// `InterruptActiveHigh` (1), `InterruptActiveLow` (2), `InterruptActiveBoth` (3), ...
pub type KINTERRUPT_POLARITY = i32;

// ---------------------------------------------------------------------------------------------
// Registration: PEP_INFORMATION, PEP_KERNEL_INFORMATION_STRUCT_V3, PoFxRegisterPluginEx
// ---------------------------------------------------------------------------------------------

/// `PEPCALLBACKNOTIFYDPM`: the PEP's device-notification callback
/// ([`PEP_INFORMATION::AcceptDeviceNotification`]).
///
/// Called at IRQL <= `DISPATCH_LEVEL` with a `PEP_DPM_*` ID and its payload; returns [`TRUE`]
/// if the notification was handled and must return [`FALSE`] for every ID it does not
/// recognise.
pub type PEPCALLBACKNOTIFYDPM =
    Option<unsafe extern "C" fn(Notification: ULONG, Data: PVOID) -> BOOLEAN>;
/// `PPEPCALLBACKNOTIFYDPM` (same type: bindgen maps both to the nullable function pointer).
pub type PPEPCALLBACKNOTIFYDPM = PEPCALLBACKNOTIFYDPM;

/// `PEPCALLBACKNOTIFYPPM`: the PEP's processor-notification callback
/// ([`PEP_INFORMATION::AcceptProcessorNotification`]).
///
/// Called from `PASSIVE_LEVEL` up to `HIGH_LEVEL` (possibly with interrupts disabled) with the
/// processor's [`PEPHANDLE`] (NULL when not processor-specific), a `PEP_NOTIFY_PPM_*` ID and
/// its payload; returns [`TRUE`] if handled.
pub type PEPCALLBACKNOTIFYPPM =
    Option<unsafe extern "C" fn(Handle: PEPHANDLE, Notification: ULONG, Data: PVOID) -> BOOLEAN>;
/// `PPEPCALLBACKNOTIFYPPM` (same type as [`PEPCALLBACKNOTIFYPPM`]).
pub type PPEPCALLBACKNOTIFYPPM = PEPCALLBACKNOTIFYPPM;

/// `PEPCALLBACKNOTIFYACPI`: the PEP's ACPI-notification callback
/// ([`PEP_INFORMATION::AcceptAcpiNotification`]); IRQL <= `HIGH_LEVEL`.
pub type PEPCALLBACKNOTIFYACPI =
    Option<unsafe extern "C" fn(Notification: ULONG, Data: PVOID) -> BOOLEAN>;
/// `PPEPCALLBACKNOTIFYACPI` (same type as [`PEPCALLBACKNOTIFYACPI`]).
pub type PPEPCALLBACKNOTIFYACPI = PEPCALLBACKNOTIFYACPI;

/// `PEP_INFORMATION_V3`: the [`PEP_INFORMATION::Version`] for Windows 10 and later.
pub const PEP_INFORMATION_V3: USHORT = 3;
/// `PEP_KERNEL_INFORMATION_V3`: the [`PEP_KERNEL_INFORMATION_STRUCT_V3::Version`].
pub const PEP_KERNEL_INFORMATION_V3: USHORT = 3;
/// `PEP_FLAG_WORKER_CONCURRENCY`: `PoFxRegisterPluginEx` flag (meaning undocumented).
pub const PEP_FLAG_WORKER_CONCURRENCY: ULONGLONG = 0x1;

/// `PEP_INFORMATION`: the PEP's notification callbacks, passed to `PoFxRegisterPluginEx`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_INFORMATION {
    /// [`PEP_INFORMATION_V3`].
    pub Version: USHORT,
    /// `sizeof(PEP_INFORMATION)` ([`PEP_INFORMATION::SIZE`]).
    pub Size: USHORT,
    /// Device (DPM) notification callback.
    pub AcceptDeviceNotification: PEPCALLBACKNOTIFYDPM,
    /// Processor (PPM) notification callback.
    pub AcceptProcessorNotification: PEPCALLBACKNOTIFYPPM,
    /// ACPI notification callback.
    pub AcceptAcpiNotification: PEPCALLBACKNOTIFYACPI,
}
assert_layout!(
    PEP_INFORMATION, size 32, align 8,
    Version @ 0, Size @ 2,
    AcceptDeviceNotification @ 8, AcceptProcessorNotification @ 16, AcceptAcpiNotification @ 24,
);
zeroed_default!(PEP_INFORMATION {
    Version: 0,
    Size: 0,
    AcceptDeviceNotification: None,
    AcceptProcessorNotification: None,
    AcceptAcpiNotification: None,
});

impl PEP_INFORMATION {
    /// `sizeof(PEP_INFORMATION)` (32), the value of [`PEP_INFORMATION::Size`].
    pub const SIZE: USHORT = size_as_ushort(size_of::<Self>());
}

/// Pointer to a [`PEP_INFORMATION`].
pub type PPEP_INFORMATION = *mut PEP_INFORMATION;

/// `POFXCALLBACKREQUESTWORKER`: asks `PoFx` for a worker thread, delivered later as
/// [`PEP_DPM_WORK`].
pub type POFXCALLBACKREQUESTWORKER = Option<unsafe extern "C" fn(PluginHandle: POHANDLE)>;
/// `PPOFXCALLBACKREQUESTWORKER` (same type).
pub type PPOFXCALLBACKREQUESTWORKER = POFXCALLBACKREQUESTWORKER;

/// `POFXCALLBACKCRITICALRESOURCE`: reports an active/inactive transition of a critical
/// system resource component.
pub type POFXCALLBACKCRITICALRESOURCE =
    Option<unsafe extern "C" fn(DeviceHandle: POHANDLE, Component: ULONG, Active: BOOLEAN)>;
/// `PPOFXCALLBACKCRITICALRESOURCE` (same type).
pub type PPOFXCALLBACKCRITICALRESOURCE = POFXCALLBACKCRITICALRESOURCE;

/// `PROCESSOR_HALT_ROUTINE` (`wdm.h`): the PEP's routine that actually halts the processor,
/// passed to `ProcessorHalt`.
pub type PROCESSOR_HALT_ROUTINE = Option<unsafe extern "C" fn(Context: PVOID) -> NTSTATUS>;
/// `PPROCESSOR_HALT_ROUTINE` (same type).
pub type PPROCESSOR_HALT_ROUTINE = PROCESSOR_HALT_ROUTINE;

/// `POFXCALLBACKPROCESSORHALT`: prepares the processor for a halt and calls `Halt`.
pub type POFXCALLBACKPROCESSORHALT = Option<
    unsafe extern "C" fn(Flags: ULONG, Context: PVOID, Halt: PPROCESSOR_HALT_ROUTINE) -> NTSTATUS,
>;
/// `PPOFXCALLBACKPROCESSORHALT` (same type).
pub type PPOFXCALLBACKPROCESSORHALT = POFXCALLBACKPROCESSORHALT;

/// `PROCESSOR_HALT_CACHE_FLUSH_OVERRIDE`: `ProcessorHalt` flag.
pub const PROCESSOR_HALT_CACHE_FLUSH_OVERRIDE: ULONG = 1 << 0;
/// `PROCESSOR_HALT_CACHE_COHERENT`: `ProcessorHalt` flag.
pub const PROCESSOR_HALT_CACHE_COHERENT: ULONG = 1 << 1;
/// `PROCESSOR_HALT_CONTEXT_RETAINED`: `ProcessorHalt` flag.
pub const PROCESSOR_HALT_CONTEXT_RETAINED: ULONG = 1 << 2;
/// `PROCESSOR_HALT_RETURN_NOT_SAFE`: `ProcessorHalt` flag.
pub const PROCESSOR_HALT_RETURN_NOT_SAFE: ULONG = 1 << 3;
/// `PROCESSOR_HALT_VIA_PSCI_CPU_SUSPEND`: `ProcessorHalt` flag (ARM64).
pub const PROCESSOR_HALT_VIA_PSCI_CPU_SUSPEND: ULONG = 1 << 4;

/// `POFXCALLBACKREQUESTINTERRUPT`: asks `PoFx` to replay an edge-triggered interrupt (by GSIV)
/// that was lost while the platform was idle.
pub type POFXCALLBACKREQUESTINTERRUPT = Option<unsafe extern "C" fn(Gsiv: ULONG) -> NTSTATUS>;
/// `PPOFXCALLBACKREQUESTINTERRUPT` (same type).
pub type PPOFXCALLBACKREQUESTINTERRUPT = POFXCALLBACKREQUESTINTERRUPT;

/// `PEP_UNMASKED_INTERRUPT_INFORMATION_V1`: [`PEP_UNMASKED_INTERRUPT_INFORMATION::Version`].
pub const PEP_UNMASKED_INTERRUPT_INFORMATION_V1: USHORT = 1;
/// `PEP_ENUMERATE_UNMASKED_INTERRUPT_FLAGS_NONE`: `EnumerateFlags` value.
pub const PEP_ENUMERATE_UNMASKED_INTERRUPT_FLAGS_NONE: ULONG = 0;

/// The anonymous bitfield structure of [`PEP_UNMASKED_INTERRUPT_FLAGS`]: `SecondaryInterrupt`
/// bit 0, `Reserved` bits 1-15 of one `USHORT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
// The bindgen-style storage unit is public so that the layout is visible and replaceable.
#[allow(clippy::pub_underscore_fields)]
pub struct PEP_UNMASKED_INTERRUPT_FLAGS__bindgen_ty_1 {
    /// The bitfield storage unit.
    pub _bitfield_1: u16,
}
assert_layout!(PEP_UNMASKED_INTERRUPT_FLAGS__bindgen_ty_1, size 2, align 2, _bitfield_1 @ 0);

// The accessors read and write bindgen's storage unit `_bitfield_1` by design.
#[allow(clippy::used_underscore_binding)]
impl PEP_UNMASKED_INTERRUPT_FLAGS__bindgen_ty_1 {
    /// `SecondaryInterrupt` (bit 0): the interrupt comes from a secondary controller.
    #[must_use]
    pub const fn SecondaryInterrupt(&self) -> USHORT {
        get_bits16(self._bitfield_1, 0, 1)
    }
    /// Sets `SecondaryInterrupt` (bit 0); `val` is masked to 1 bit.
    pub const fn set_SecondaryInterrupt(&mut self, val: USHORT) {
        self._bitfield_1 = set_bits16(self._bitfield_1, 0, 1, val);
    }
    /// `Reserved` (bits 1-15).
    #[must_use]
    pub const fn Reserved(&self) -> USHORT {
        get_bits16(self._bitfield_1, 1, 15)
    }
    /// Sets `Reserved` (bits 1-15); `val` is masked to 15 bits.
    pub const fn set_Reserved(&mut self, val: USHORT) {
        self._bitfield_1 = set_bits16(self._bitfield_1, 1, 15, val);
    }
}

/// `PEP_UNMASKED_INTERRUPT_FLAGS` (union, 2 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
// bindgen's name for the anonymous member; kept so that generated code can replace this.
#[allow(clippy::pub_underscore_fields)]
pub union PEP_UNMASKED_INTERRUPT_FLAGS {
    /// The bitfield view.
    pub __bindgen_anon_1: PEP_UNMASKED_INTERRUPT_FLAGS__bindgen_ty_1,
    /// The whole `USHORT`.
    pub AsUSHORT: USHORT,
}
assert_layout!(PEP_UNMASKED_INTERRUPT_FLAGS, size 2, align 2, __bindgen_anon_1 @ 0, AsUSHORT @ 0);

/// Pointer to a [`PEP_UNMASKED_INTERRUPT_FLAGS`].
pub type PPEP_UNMASKED_INTERRUPT_FLAGS = *mut PEP_UNMASKED_INTERRUPT_FLAGS;

/// `PEP_UNMASKED_INTERRUPT_INFORMATION`: one unmasked interrupt reported by
/// `EnumerateUnmaskedInterrupts`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PEP_UNMASKED_INTERRUPT_INFORMATION {
    /// [`PEP_UNMASKED_INTERRUPT_INFORMATION_V1`].
    pub Version: USHORT,
    /// `sizeof(PEP_UNMASKED_INTERRUPT_INFORMATION)`.
    pub Size: USHORT,
    /// Flags.
    pub Flags: PEP_UNMASKED_INTERRUPT_FLAGS,
    /// Level-sensitive or latched.
    pub Mode: KINTERRUPT_MODE,
    /// Polarity.
    pub Polarity: KINTERRUPT_POLARITY,
    /// Global system interrupt vector.
    pub Gsiv: ULONG,
    /// Pin number (for a secondary interrupt).
    pub PinNumber: USHORT,
    /// Device handle (for a secondary interrupt).
    pub DeviceHandle: PEPHANDLE,
}
assert_layout!(
    PEP_UNMASKED_INTERRUPT_INFORMATION, size 32, align 8,
    Version @ 0, Size @ 2, Flags @ 4, Mode @ 8, Polarity @ 12, Gsiv @ 16, PinNumber @ 20,
    DeviceHandle @ 24,
);
zeroed_default!(PEP_UNMASKED_INTERRUPT_INFORMATION {
    Version: 0,
    Size: 0,
    Flags: PEP_UNMASKED_INTERRUPT_FLAGS { AsUSHORT: 0 },
    Mode: 0,
    Polarity: 0,
    Gsiv: 0,
    PinNumber: 0,
    DeviceHandle: core::ptr::null_mut(),
});

/// Pointer to a [`PEP_UNMASKED_INTERRUPT_INFORMATION`].
pub type PPEP_UNMASKED_INTERRUPT_INFORMATION = *mut PEP_UNMASKED_INTERRUPT_INFORMATION;

/// `PPO_ENUMERATE_INTERRUPT_SOURCE_CALLBACK`: called once per unmasked interrupt by
/// `EnumerateUnmaskedInterrupts`; return [`TRUE`] to continue the enumeration.
pub type PPO_ENUMERATE_INTERRUPT_SOURCE_CALLBACK = Option<
    unsafe extern "C" fn(
        CallbackContext: PVOID,
        InterruptInformation: PPEP_UNMASKED_INTERRUPT_INFORMATION,
    ) -> BOOLEAN,
>;

/// `POFXCALLBACKENUMERATEUNMASKEDINTERRUPTS`: enumerates the interrupts that are unmasked.
pub type POFXCALLBACKENUMERATEUNMASKEDINTERRUPTS = Option<
    unsafe extern "C" fn(
        PluginHandle: POHANDLE,
        EnumerateFlags: ULONG,
        Callback: PPO_ENUMERATE_INTERRUPT_SOURCE_CALLBACK,
        CallbackContext: PVOID,
        InterruptInformation: PPEP_UNMASKED_INTERRUPT_INFORMATION,
    ) -> NTSTATUS,
>;
/// `PPOFXCALLBACKENUMERATEUNMASKEDINTERRUPTS` (same type).
pub type PPOFXCALLBACKENUMERATEUNMASKEDINTERRUPTS = POFXCALLBACKENUMERATEUNMASKEDINTERRUPTS;

/// `POFXCALLBACKPROCESSORIDLEVETO`: adds or removes a veto on a processor idle state.
pub type POFXCALLBACKPROCESSORIDLEVETO = Option<
    unsafe extern "C" fn(
        ProcessorHandle: POHANDLE,
        ProcessorState: ULONG,
        VetoReason: ULONG,
        Increment: BOOLEAN,
    ) -> NTSTATUS,
>;
/// `PPOFXCALLBACKPROCESSORIDLEVETO` (same type).
pub type PPOFXCALLBACKPROCESSORIDLEVETO = POFXCALLBACKPROCESSORIDLEVETO;

/// `POFXCALLBACKPLATFORMIDLEVETO`: adds or removes a veto on a platform idle state.
pub type POFXCALLBACKPLATFORMIDLEVETO = Option<
    unsafe extern "C" fn(
        ProcessorHandle: POHANDLE,
        PlatformState: ULONG,
        VetoReason: ULONG,
        Increment: BOOLEAN,
    ) -> NTSTATUS,
>;
/// `PPOFXCALLBACKPLATFORMIDLEVETO` (same type).
pub type PPOFXCALLBACKPLATFORMIDLEVETO = POFXCALLBACKPLATFORMIDLEVETO;

/// `PEP_PROCESSOR_IDLE_STATE_UPDATE_VERSION_1`.
pub const PEP_PROCESSOR_IDLE_STATE_UPDATE_VERSION_1: ULONG = 1;

/// `PEP_PROCESSOR_IDLE_STATE_UPDATE`: new properties of a processor idle state.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PROCESSOR_IDLE_STATE_UPDATE {
    /// [`PEP_PROCESSOR_IDLE_STATE_UPDATE_VERSION_1`].
    pub Version: ULONG,
    /// New exit latency of the state.
    pub Latency: ULONG,
    /// New break-even residency of the state.
    pub BreakEvenDuration: ULONG,
}
assert_layout!(
    PEP_PROCESSOR_IDLE_STATE_UPDATE, size 12, align 4,
    Version @ 0, Latency @ 4, BreakEvenDuration @ 8,
);
zeroed_default!(PEP_PROCESSOR_IDLE_STATE_UPDATE { Version: 0, Latency: 0, BreakEvenDuration: 0 });

/// Pointer to a [`PEP_PROCESSOR_IDLE_STATE_UPDATE`].
pub type PPEP_PROCESSOR_IDLE_STATE_UPDATE = *mut PEP_PROCESSOR_IDLE_STATE_UPDATE;

/// `POFXCALLBACKUPDATEPROCESSORIDLESTATE`: updates a processor idle state's properties.
pub type POFXCALLBACKUPDATEPROCESSORIDLESTATE = Option<
    unsafe extern "C" fn(
        ProcessorHandle: POHANDLE,
        ProcessorState: ULONG,
        Update: PPEP_PROCESSOR_IDLE_STATE_UPDATE,
    ) -> NTSTATUS,
>;
/// `PPOFXCALLBACKUPDATEPROCESSORIDLESTATE` (same type).
pub type PPOFXCALLBACKUPDATEPROCESSORIDLESTATE = POFXCALLBACKUPDATEPROCESSORIDLESTATE;

/// `PEP_PLATFORM_IDLE_STATE_UPDATE_VERSION_1`.
pub const PEP_PLATFORM_IDLE_STATE_UPDATE_VERSION_1: ULONG = 1;

/// `PEP_PLATFORM_IDLE_STATE_UPDATE`: new properties of a platform idle state.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PLATFORM_IDLE_STATE_UPDATE {
    /// [`PEP_PLATFORM_IDLE_STATE_UPDATE_VERSION_1`].
    pub Version: ULONG,
    /// New exit latency of the state.
    pub Latency: ULONG,
    /// New break-even residency of the state.
    pub BreakEvenDuration: ULONG,
}
assert_layout!(
    PEP_PLATFORM_IDLE_STATE_UPDATE, size 12, align 4,
    Version @ 0, Latency @ 4, BreakEvenDuration @ 8,
);
zeroed_default!(PEP_PLATFORM_IDLE_STATE_UPDATE { Version: 0, Latency: 0, BreakEvenDuration: 0 });

/// Pointer to a [`PEP_PLATFORM_IDLE_STATE_UPDATE`].
pub type PPEP_PLATFORM_IDLE_STATE_UPDATE = *mut PEP_PLATFORM_IDLE_STATE_UPDATE;

/// `POFXCALLBACKUPDATEPLATFORMIDLESTATE`: updates a platform idle state's properties.
pub type POFXCALLBACKUPDATEPLATFORMIDLESTATE = Option<
    unsafe extern "C" fn(
        ProcessorHandle: POHANDLE,
        PlatformState: ULONG,
        Update: PPEP_PLATFORM_IDLE_STATE_UPDATE,
    ) -> NTSTATUS,
>;
/// `PPOFXCALLBACKUPDATEPLATFORMIDLESTATE` (same type).
pub type PPOFXCALLBACKUPDATEPLATFORMIDLESTATE = POFXCALLBACKUPDATEPLATFORMIDLESTATE;

/// `POFXCALLBACKREQUESTCOMMON`: generic `PoFx` request (PEP v3), e.g. the ACPI resource
/// conversion request; IRQL <= `HIGH_LEVEL`.
pub type POFXCALLBACKREQUESTCOMMON =
    Option<unsafe extern "C" fn(RequestId: ULONG, Data: PVOID) -> NTSTATUS>;
/// `PPOFXCALLBACKREQUESTCOMMON` (same type).
pub type PPOFXCALLBACKREQUESTCOMMON = POFXCALLBACKREQUESTCOMMON;

/// `PEP_KERNEL_INFORMATION_STRUCT_V3`: the services `PoFx` offers the PEP.
///
/// The PEP sets `Version` and `Size` before calling `PoFxRegisterPluginEx`; `PoFx` fills the
/// rest. Keep it in static, non-paged storage.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_KERNEL_INFORMATION_STRUCT_V3 {
    /// [`PEP_KERNEL_INFORMATION_V3`].
    pub Version: USHORT,
    /// `sizeof(PEP_KERNEL_INFORMATION_STRUCT_V3)` ([`PEP_KERNEL_INFORMATION_STRUCT_V3::SIZE`]).
    pub Size: USHORT,
    /// `PoFx`'s handle for the plug-in.
    pub Plugin: POHANDLE,
    /// Requests a worker ([`PEP_DPM_WORK`]).
    pub RequestWorker: PPOFXCALLBACKREQUESTWORKER,
    /// Enumerates unmasked interrupts.
    pub EnumerateUnmaskedInterrupts: PPOFXCALLBACKENUMERATEUNMASKEDINTERRUPTS,
    /// Prepares and performs a processor halt.
    pub ProcessorHalt: PPOFXCALLBACKPROCESSORHALT,
    /// Replays a lost interrupt.
    pub RequestInterrupt: PPOFXCALLBACKREQUESTINTERRUPT,
    /// Reports a critical-resource transition.
    pub TransitionCriticalResource: PPOFXCALLBACKCRITICALRESOURCE,
    /// Processor idle-state veto.
    pub ProcessorIdleVeto: PPOFXCALLBACKPROCESSORIDLEVETO,
    /// Platform idle-state veto.
    pub PlatformIdleVeto: PPOFXCALLBACKPLATFORMIDLEVETO,
    /// Updates a processor idle state.
    pub UpdateProcessorIdleState: PPOFXCALLBACKUPDATEPROCESSORIDLESTATE,
    /// Updates a platform idle state.
    pub UpdatePlatformIdleState: PPOFXCALLBACKUPDATEPLATFORMIDLESTATE,
    /// Generic request.
    pub RequestCommon: PPOFXCALLBACKREQUESTCOMMON,
}
assert_layout!(
    PEP_KERNEL_INFORMATION_STRUCT_V3, size 96, align 8,
    Version @ 0, Size @ 2, Plugin @ 8, RequestWorker @ 16, EnumerateUnmaskedInterrupts @ 24,
    ProcessorHalt @ 32, RequestInterrupt @ 40, TransitionCriticalResource @ 48,
    ProcessorIdleVeto @ 56, PlatformIdleVeto @ 64, UpdateProcessorIdleState @ 72,
    UpdatePlatformIdleState @ 80, RequestCommon @ 88,
);
zeroed_default!(PEP_KERNEL_INFORMATION_STRUCT_V3 {
    Version: 0,
    Size: 0,
    Plugin: core::ptr::null_mut(),
    RequestWorker: None,
    EnumerateUnmaskedInterrupts: None,
    ProcessorHalt: None,
    RequestInterrupt: None,
    TransitionCriticalResource: None,
    ProcessorIdleVeto: None,
    PlatformIdleVeto: None,
    UpdateProcessorIdleState: None,
    UpdatePlatformIdleState: None,
    RequestCommon: None,
});

impl PEP_KERNEL_INFORMATION_STRUCT_V3 {
    /// `sizeof(PEP_KERNEL_INFORMATION_STRUCT_V3)` (96), the value of
    /// [`PEP_KERNEL_INFORMATION_STRUCT_V3::Size`].
    pub const SIZE: USHORT = size_as_ushort(size_of::<Self>());
}

/// Pointer to a [`PEP_KERNEL_INFORMATION_STRUCT_V3`].
pub type PPEP_KERNEL_INFORMATION_STRUCT_V3 = *mut PEP_KERNEL_INFORMATION_STRUCT_V3;
/// `PEP_KERNEL_INFORMATION`: the header's alias for the V3 structure when
/// `PEP_KERNEL_INFORMATION_VERSION` is `PEP_KERNEL_INFORMATION_V3`.
pub type PEP_KERNEL_INFORMATION = PEP_KERNEL_INFORMATION_STRUCT_V3;
/// `PPEP_KERNEL_INFORMATION`: the third parameter of `PoFxRegisterPluginEx`.
pub type PPEP_KERNEL_INFORMATION = *mut PEP_KERNEL_INFORMATION;

// ---------------------------------------------------------------------------------------------
// Device (DPM) notifications
// ---------------------------------------------------------------------------------------------

/// `PEP_DPM_PREPARE_DEVICE` (0x01): [`PEP_PREPARE_DEVICE`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_PREPARE_DEVICE: ULONG = 0x01;
/// `PEP_DPM_ABANDON_DEVICE` (0x02): [`PEP_ABANDON_DEVICE`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_ABANDON_DEVICE: ULONG = 0x02;
/// `PEP_DPM_REGISTER_DEVICE` (0x03): [`PEP_REGISTER_DEVICE_V2`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_REGISTER_DEVICE: ULONG = 0x03;
/// `PEP_DPM_UNREGISTER_DEVICE` (0x04): [`PEP_UNREGISTER_DEVICE`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_UNREGISTER_DEVICE: ULONG = 0x04;
/// `PEP_DPM_DEVICE_POWER_STATE` (0x05): `PEP_DEVICE_POWER_STATE`.
pub const PEP_DPM_DEVICE_POWER_STATE: ULONG = 0x05;
/// `PEP_DPM_WORK` (0x0D): [`PEP_WORK`]; sent after `RequestWorker`.
pub const PEP_DPM_WORK: ULONG = 0x0D;
/// `PEP_DPM_POWER_CONTROL_REQUEST` (0x0E): `PEP_POWER_CONTROL_REQUEST`.
pub const PEP_DPM_POWER_CONTROL_REQUEST: ULONG = 0x0E;
/// `PEP_DPM_POWER_CONTROL_COMPLETE` (0x0F): `PEP_POWER_CONTROL_COMPLETE`.
pub const PEP_DPM_POWER_CONTROL_COMPLETE: ULONG = 0x0F;
/// `PEP_DPM_SYSTEM_LATENCY_UPDATE` (0x10): `PEP_SYSTEM_LATENCY`.
pub const PEP_DPM_SYSTEM_LATENCY_UPDATE: ULONG = 0x10;
/// `PEP_DPM_DEVICE_STARTED` (0x12): [`PEP_DEVICE_STARTED`]; IRQL <= `DISPATCH_LEVEL`.
pub const PEP_DPM_DEVICE_STARTED: ULONG = 0x12;
/// `PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE` (0x13): `PEP_NOTIFY_COMPONENT_IDLE_STATE`.
pub const PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE: ULONG = 0x13;
/// `PEP_DPM_REGISTER_DEBUGGER` (0x15): `PEP_REGISTER_DEBUGGER`.
pub const PEP_DPM_REGISTER_DEBUGGER: ULONG = 0x15;
/// `PEP_DPM_REGISTER_CRASHDUMP_DEVICE` (0x19): [`PEP_REGISTER_CRASHDUMP_DEVICE`].
pub const PEP_DPM_REGISTER_CRASHDUMP_DEVICE: ULONG = 0x19;
/// `PEP_DPM_DEVICE_IDLE_CONSTRAINTS` (0x1A): `PEP_DEVICE_PLATFORM_CONSTRAINTS`.
pub const PEP_DPM_DEVICE_IDLE_CONSTRAINTS: ULONG = 0x1A;
/// `PEP_DPM_COMPONENT_IDLE_CONSTRAINTS` (0x1B): `PEP_COMPONENT_PLATFORM_CONSTRAINTS`.
pub const PEP_DPM_COMPONENT_IDLE_CONSTRAINTS: ULONG = 0x1B;
/// `PEP_DPM_QUERY_COMPONENT_PERF_CAPABILTIES` (0x1C, sic: the header's spelling):
/// `PEP_QUERY_COMPONENT_PERF_CAPABILITIES`.
pub const PEP_DPM_QUERY_COMPONENT_PERF_CAPABILTIES: ULONG = 0x1C;
/// `PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES` (0x1C): the documentation's spelling of
/// [`PEP_DPM_QUERY_COMPONENT_PERF_CAPABILTIES`].
pub const PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES: ULONG =
    PEP_DPM_QUERY_COMPONENT_PERF_CAPABILTIES;
/// `PEP_DPM_QUERY_COMPONENT_PERF_SET` (0x1D): `PEP_QUERY_COMPONENT_PERF_SET`.
pub const PEP_DPM_QUERY_COMPONENT_PERF_SET: ULONG = 0x1D;
/// `PEP_DPM_QUERY_COMPONENT_PERF_SET_NAME` (0x1E): `PEP_QUERY_COMPONENT_PERF_SET_NAME`.
pub const PEP_DPM_QUERY_COMPONENT_PERF_SET_NAME: ULONG = 0x1E;
/// `PEP_DPM_QUERY_COMPONENT_PERF_STATES` (0x1F): `PEP_QUERY_COMPONENT_PERF_STATES`.
pub const PEP_DPM_QUERY_COMPONENT_PERF_STATES: ULONG = 0x1F;
/// `PEP_DPM_REGISTER_COMPONENT_PERF_STATES` (0x20): `PEP_REGISTER_COMPONENT_PERF_STATES`.
pub const PEP_DPM_REGISTER_COMPONENT_PERF_STATES: ULONG = 0x20;
/// `PEP_DPM_REQUEST_COMPONENT_PERF_STATE` (0x21): `PEP_REQUEST_COMPONENT_PERF_STATE`.
pub const PEP_DPM_REQUEST_COMPONENT_PERF_STATE: ULONG = 0x21;
/// `PEP_DPM_QUERY_CURRENT_COMPONENT_PERF_STATE` (0x22):
/// `PEP_QUERY_CURRENT_COMPONENT_PERF_STATE`.
pub const PEP_DPM_QUERY_CURRENT_COMPONENT_PERF_STATE: ULONG = 0x22;
/// `PEP_DPM_QUERY_DEBUGGER_TRANSITION_REQUIREMENTS` (0x23):
/// `PEP_DEBUGGER_TRANSITION_REQUIREMENTS`.
pub const PEP_DPM_QUERY_DEBUGGER_TRANSITION_REQUIREMENTS: ULONG = 0x23;
/// `PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT` (0x24): `PEP_QUERY_SOC_SUBSYSTEM_COUNT`.
pub const PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT: ULONG = 0x24;
/// `PEP_DPM_QUERY_SOC_SUBSYSTEM` (0x25): `PEP_QUERY_SOC_SUBSYSTEM`.
pub const PEP_DPM_QUERY_SOC_SUBSYSTEM: ULONG = 0x25;
/// `PEP_DPM_RESET_SOC_SUBSYSTEM_ACCOUNTING` (0x26): `PEP_RESET_SOC_SUBSYSTEM_ACCOUNTING`.
pub const PEP_DPM_RESET_SOC_SUBSYSTEM_ACCOUNTING: ULONG = 0x26;
/// `PEP_DPM_QUERY_SOC_SUBSYSTEM_BLOCKING_TIME` (0x27): `PEP_QUERY_SOC_SUBSYSTEM_BLOCKING_TIME`.
pub const PEP_DPM_QUERY_SOC_SUBSYSTEM_BLOCKING_TIME: ULONG = 0x27;
/// `PEP_DPM_QUERY_SOC_SUBSYSTEM_METADATA` (0x28): `PEP_QUERY_SOC_SUBSYSTEM_METADATA`.
pub const PEP_DPM_QUERY_SOC_SUBSYSTEM_METADATA: ULONG = 0x28;

/// `PEP_DEVICE_ACCEPTANCE_TYPE` (C enum, 4 bytes): the PEP's answer in
/// [`PEP_REGISTER_DEVICE_V2::DeviceAccepted`].
pub type PEP_DEVICE_ACCEPTANCE_TYPE = i32;
/// Pointer to a [`PEP_DEVICE_ACCEPTANCE_TYPE`].
pub type PPEP_DEVICE_ACCEPTANCE_TYPE = *mut PEP_DEVICE_ACCEPTANCE_TYPE;
/// `PepDeviceNotAccepted` (0): the PEP does not own the device.
pub const PepDeviceNotAccepted: PEP_DEVICE_ACCEPTANCE_TYPE = 0;
/// `PepDeviceAcceptedReserved` (1): deprecated, `pep_x.h` only; never return it.
pub const PepDeviceAcceptedReserved: PEP_DEVICE_ACCEPTANCE_TYPE = 1;
/// `PepDeviceAccepted` (2): the PEP owns the device.
///
/// The value is 2, not 1: in the header source the enumerator is written
/// `PepDeviceAccepted = 2`, after the `pep_x.h`-only `PepDeviceAcceptedReserved` (1) that the
/// `pepfx.h` extraction leaves out (the older `pep_x` reference page lists all four
/// enumerators). The current `pepfx` reference page shows the enum without values, which
/// reads as 1 but is not what the header says.
pub const PepDeviceAccepted: PEP_DEVICE_ACCEPTANCE_TYPE = 2;
/// `PepDeviceAceptedMax` (3, sic: the header's spelling): reserved.
pub const PepDeviceAceptedMax: PEP_DEVICE_ACCEPTANCE_TYPE = 3;

/// `PEP_PREPARE_DEVICE`: payload of [`PEP_DPM_PREPARE_DEVICE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PREPARE_DEVICE {
    /// In: the device ID.
    pub DeviceId: PCUNICODE_STRING,
    /// Out: [`TRUE`] if the PEP owns the device.
    pub DeviceAccepted: BOOLEAN,
}
assert_layout!(PEP_PREPARE_DEVICE, size 16, align 8, DeviceId @ 0, DeviceAccepted @ 8);
zeroed_default!(PEP_PREPARE_DEVICE { DeviceId: core::ptr::null(), DeviceAccepted: FALSE });

/// Pointer to a [`PEP_PREPARE_DEVICE`].
pub type PPEP_PREPARE_DEVICE = *mut PEP_PREPARE_DEVICE;

/// `PEP_ABANDON_DEVICE`: payload of [`PEP_DPM_ABANDON_DEVICE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_ABANDON_DEVICE {
    /// In: the device ID.
    pub DeviceId: PCUNICODE_STRING,
    /// Out: [`TRUE`] if the PEP releases a device it owned.
    pub DeviceAccepted: BOOLEAN,
}
assert_layout!(PEP_ABANDON_DEVICE, size 16, align 8, DeviceId @ 0, DeviceAccepted @ 8);
zeroed_default!(PEP_ABANDON_DEVICE { DeviceId: core::ptr::null(), DeviceAccepted: FALSE });

/// Pointer to a [`PEP_ABANDON_DEVICE`].
pub type PPEP_ABANDON_DEVICE = *mut PEP_ABANDON_DEVICE;

/// `PO_FX_COMPONENT_IDLE_STATE` (`wdm.h`): one F-state of a device component.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PO_FX_COMPONENT_IDLE_STATE {
    /// Transition latency, 100 ns units.
    pub TransitionLatency: ULONGLONG,
    /// Minimum residency, 100 ns units.
    pub ResidencyRequirement: ULONGLONG,
    /// Nominal power, microwatts.
    pub NominalPower: ULONG,
}
assert_layout!(
    PO_FX_COMPONENT_IDLE_STATE, size 24, align 8,
    TransitionLatency @ 0, ResidencyRequirement @ 8, NominalPower @ 16,
);
zeroed_default!(PO_FX_COMPONENT_IDLE_STATE {
    TransitionLatency: 0,
    ResidencyRequirement: 0,
    NominalPower: 0,
});

/// Pointer to a [`PO_FX_COMPONENT_IDLE_STATE`].
pub type PPO_FX_COMPONENT_IDLE_STATE = *mut PO_FX_COMPONENT_IDLE_STATE;

/// `PEP_COMPONENT_V2`: one component of a registering device.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_COMPONENT_V2 {
    /// Component GUID.
    pub Id: GUID,
    /// Flags.
    pub Flags: ULONGLONG,
    /// Deepest F-state from which the component can wake.
    pub DeepestWakeableIdleState: ULONG,
    /// Number of elements of `IdleStates`.
    pub IdleStateCount: ULONG,
    /// The component's F-states.
    pub IdleStates: PPO_FX_COMPONENT_IDLE_STATE,
}
assert_layout!(
    PEP_COMPONENT_V2, size 40, align 8,
    Id @ 0, Flags @ 16, DeepestWakeableIdleState @ 24, IdleStateCount @ 28, IdleStates @ 32,
);
zeroed_default!(PEP_COMPONENT_V2 {
    Id: GUID::zeroed(),
    Flags: 0,
    DeepestWakeableIdleState: 0,
    IdleStateCount: 0,
    IdleStates: core::ptr::null_mut(),
});

/// Pointer to a [`PEP_COMPONENT_V2`].
pub type PPEP_COMPONENT_V2 = *mut PEP_COMPONENT_V2;
/// `PEP_COMPONENT`: the header's alias for [`PEP_COMPONENT_V2`].
pub type PEP_COMPONENT = PEP_COMPONENT_V2;
/// `PPEP_COMPONENT`.
pub type PPEP_COMPONENT = *mut PEP_COMPONENT;

/// `PEP_DEVICE_FLAG_POWER_REQUIRED`: [`PEP_DEVICE_REGISTER_V2::Flags`] bit.
pub const PEP_DEVICE_FLAG_POWER_REQUIRED: ULONGLONG = 0x1;

/// `PEP_DEVICE_REGISTER_V2`: the components of a registering device.
///
/// `Components` is declared `PPEP_COMPONENT_V2 Components[ANYSIZE_ARRAY]`: an array of
/// `ComponentCount` pointers, of which only the first is declared here.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_DEVICE_REGISTER_V2 {
    /// Flags ([`PEP_DEVICE_FLAG_POWER_REQUIRED`]).
    pub Flags: ULONGLONG,
    /// Number of elements of `Components`.
    pub ComponentCount: ULONG,
    /// Pointers to the components (`ANYSIZE_ARRAY`).
    pub Components: [PPEP_COMPONENT_V2; 1],
}
assert_layout!(
    PEP_DEVICE_REGISTER_V2, size 24, align 8,
    Flags @ 0, ComponentCount @ 8, Components @ 16,
);
zeroed_default!(PEP_DEVICE_REGISTER_V2 {
    Flags: 0,
    ComponentCount: 0,
    Components: [core::ptr::null_mut()],
});

/// Pointer to a [`PEP_DEVICE_REGISTER_V2`].
pub type PPEP_DEVICE_REGISTER_V2 = *mut PEP_DEVICE_REGISTER_V2;
/// `PEP_DEVICE_REGISTER`: the header's alias for [`PEP_DEVICE_REGISTER_V2`].
pub type PEP_DEVICE_REGISTER = PEP_DEVICE_REGISTER_V2;
/// `PPEP_DEVICE_REGISTER`.
pub type PPEP_DEVICE_REGISTER = *mut PEP_DEVICE_REGISTER;

/// `PEP_REGISTER_DEVICE_V2`: payload of [`PEP_DPM_REGISTER_DEVICE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_REGISTER_DEVICE_V2 {
    /// In: the device ID.
    pub DeviceId: PCUNICODE_STRING,
    /// In: `PoFx`'s handle for the device.
    pub KernelHandle: POHANDLE,
    /// In: the device's components (valid only during the notification).
    pub Register: PPEP_DEVICE_REGISTER_V2,
    /// Out: the PEP's own non-NULL handle for the device.
    pub DeviceHandle: PEPHANDLE,
    /// Out: [`PepDeviceAccepted`] or [`PepDeviceNotAccepted`].
    pub DeviceAccepted: PEP_DEVICE_ACCEPTANCE_TYPE,
}
assert_layout!(
    PEP_REGISTER_DEVICE_V2, size 40, align 8,
    DeviceId @ 0, KernelHandle @ 8, Register @ 16, DeviceHandle @ 24, DeviceAccepted @ 32,
);
zeroed_default!(PEP_REGISTER_DEVICE_V2 {
    DeviceId: core::ptr::null(),
    KernelHandle: core::ptr::null_mut(),
    Register: core::ptr::null_mut(),
    DeviceHandle: core::ptr::null_mut(),
    DeviceAccepted: PepDeviceNotAccepted,
});

/// Pointer to a [`PEP_REGISTER_DEVICE_V2`].
pub type PPEP_REGISTER_DEVICE_V2 = *mut PEP_REGISTER_DEVICE_V2;
/// `PEP_REGISTER_DEVICE`: the header's alias for [`PEP_REGISTER_DEVICE_V2`].
pub type PEP_REGISTER_DEVICE = PEP_REGISTER_DEVICE_V2;
/// `PPEP_REGISTER_DEVICE`.
pub type PPEP_REGISTER_DEVICE = *mut PEP_REGISTER_DEVICE;

/// `PEP_UNREGISTER_DEVICE`: payload of [`PEP_DPM_UNREGISTER_DEVICE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_UNREGISTER_DEVICE {
    /// In: the PEP's handle for the device.
    pub DeviceHandle: PEPHANDLE,
}
assert_layout!(PEP_UNREGISTER_DEVICE, size 8, align 8, DeviceHandle @ 0);
zeroed_default!(PEP_UNREGISTER_DEVICE { DeviceHandle: core::ptr::null_mut() });

/// Pointer to a [`PEP_UNREGISTER_DEVICE`].
pub type PPEP_UNREGISTER_DEVICE = *mut PEP_UNREGISTER_DEVICE;

/// `PEP_DEVICE_STARTED`: payload of [`PEP_DPM_DEVICE_STARTED`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_DEVICE_STARTED {
    /// In: the PEP's handle for the device.
    pub DeviceHandle: PEPHANDLE,
}
assert_layout!(PEP_DEVICE_STARTED, size 8, align 8, DeviceHandle @ 0);
zeroed_default!(PEP_DEVICE_STARTED { DeviceHandle: core::ptr::null_mut() });

/// Pointer to a [`PEP_DEVICE_STARTED`].
pub type PPEP_DEVICE_STARTED = *mut PEP_DEVICE_STARTED;

/// `PPEP_WORK_INFORMATION`: pointer to the PEP-filled `PEP_WORK_INFORMATION` (a work type and
/// a union of work payloads), declared here as an untyped pointer because this PEP never
/// fills one.
pub type PPEP_WORK_INFORMATION = PVOID;

/// `PEP_WORK`: payload of [`PEP_DPM_WORK`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_WORK {
    /// In: the work-information buffer the PEP fills when it has work.
    pub WorkInformation: PPEP_WORK_INFORMATION,
    /// Out: [`TRUE`] if the PEP filled `WorkInformation`.
    pub NeedWork: BOOLEAN,
}
assert_layout!(PEP_WORK, size 16, align 8, WorkInformation @ 0, NeedWork @ 8);
zeroed_default!(PEP_WORK { WorkInformation: core::ptr::null_mut(), NeedWork: FALSE });

/// Pointer to a [`PEP_WORK`].
pub type PPEP_WORK = *mut PEP_WORK;

/// `PEP_CRASHDUMP_INFORMATION`: argument of [`PEPCALLBACKPOWERONCRASHDUMPDEVICE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_CRASHDUMP_INFORMATION {
    /// The PEP's handle for the crash-dump device.
    pub DeviceHandle: PEPHANDLE,
    /// Device context.
    pub DeviceContext: PVOID,
}
assert_layout!(PEP_CRASHDUMP_INFORMATION, size 16, align 8, DeviceHandle @ 0, DeviceContext @ 8);
zeroed_default!(PEP_CRASHDUMP_INFORMATION {
    DeviceHandle: core::ptr::null_mut(),
    DeviceContext: core::ptr::null_mut(),
});

/// Pointer to a [`PEP_CRASHDUMP_INFORMATION`].
pub type PPEP_CRASHDUMP_INFORMATION = *mut PEP_CRASHDUMP_INFORMATION;

/// `PEPCALLBACKPOWERONCRASHDUMPDEVICE`: the PEP's routine that powers the crash-dump device on
/// (IRQL <= `HIGH_LEVEL`); returns [`TRUE`] on success.
pub type PEPCALLBACKPOWERONCRASHDUMPDEVICE =
    Option<unsafe extern "C" fn(CrashdumpInformation: PPEP_CRASHDUMP_INFORMATION) -> BOOLEAN>;
/// `PPEPCALLBACKPOWERONCRASHDUMPDEVICE` (same type).
pub type PPEPCALLBACKPOWERONCRASHDUMPDEVICE = PEPCALLBACKPOWERONCRASHDUMPDEVICE;

/// `PEP_REGISTER_CRASHDUMP_DEVICE`: payload of [`PEP_DPM_REGISTER_CRASHDUMP_DEVICE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_REGISTER_CRASHDUMP_DEVICE {
    /// Out: the PEP's power-on routine for the crash-dump device.
    pub PowerOnDumpDeviceCallback: PPEPCALLBACKPOWERONCRASHDUMPDEVICE,
    /// In: the PEP's handle for the device.
    pub DeviceHandle: PEPHANDLE,
}
assert_layout!(
    PEP_REGISTER_CRASHDUMP_DEVICE, size 16, align 8,
    PowerOnDumpDeviceCallback @ 0, DeviceHandle @ 8,
);
zeroed_default!(PEP_REGISTER_CRASHDUMP_DEVICE {
    PowerOnDumpDeviceCallback: None,
    DeviceHandle: core::ptr::null_mut(),
});

/// Pointer to a [`PEP_REGISTER_CRASHDUMP_DEVICE`].
pub type PPEP_REGISTER_CRASHDUMP_DEVICE = *mut PEP_REGISTER_CRASHDUMP_DEVICE;

// ---------------------------------------------------------------------------------------------
// Processor (PPM) notifications
// ---------------------------------------------------------------------------------------------

/// `PEP_NOTIFY_PPM_QUERY_CAPABILITIES` (0x01): [`PEP_PPM_QUERY_CAPABILITIES`]; `PASSIVE_LEVEL`,
/// once per processor.
pub const PEP_NOTIFY_PPM_QUERY_CAPABILITIES: ULONG = 0x01;
/// `PEP_NOTIFY_PPM_QUERY_IDLE_STATES` (0x02): deprecated, `pep_x.h` only.
pub const PEP_NOTIFY_PPM_QUERY_IDLE_STATES: ULONG = 0x02;
/// `PEP_NOTIFY_PPM_IDLE_SELECT` (0x03): deprecated, `pep_x.h` only.
pub const PEP_NOTIFY_PPM_IDLE_SELECT: ULONG = 0x03;
/// `PEP_NOTIFY_PPM_IDLE_CANCEL` (0x04): deprecated, `pep_x.h` only.
pub const PEP_NOTIFY_PPM_IDLE_CANCEL: ULONG = 0x04;
/// `PEP_NOTIFY_PPM_IDLE_EXECUTE` (0x05): `PEP_PPM_IDLE_EXECUTE(_V2)`; interrupts disabled, on
/// the target processor.
pub const PEP_NOTIFY_PPM_IDLE_EXECUTE: ULONG = 0x05;
/// `PEP_NOTIFY_PPM_IDLE_COMPLETE` (0x06): `PEP_PPM_IDLE_COMPLETE(_V2)`; interrupts disabled,
/// on the target processor.
pub const PEP_NOTIFY_PPM_IDLE_COMPLETE: ULONG = 0x06;
/// `PEP_NOTIFY_PPM_IS_PROCESSOR_HALTED` (0x07): `PEP_PPM_IS_PROCESSOR_HALTED`.
pub const PEP_NOTIFY_PPM_IS_PROCESSOR_HALTED: ULONG = 0x07;
/// `PEP_NOTIFY_PPM_INITIATE_WAKE` (0x08): `PEP_PPM_INITIATE_WAKE`.
pub const PEP_NOTIFY_PPM_INITIATE_WAKE: ULONG = 0x08;
/// `PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS` (0x09): [`PEP_PPM_QUERY_FEEDBACK_COUNTERS`];
/// `PASSIVE_LEVEL`, processor initialisation.
pub const PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS: ULONG = 0x09;
/// `PEP_NOTIFY_PPM_FEEDBACK_READ` (0x0A): [`PEP_PPM_FEEDBACK_READ`]; IRQL <= `DISPATCH_LEVEL`,
/// possibly with interrupts disabled.
pub const PEP_NOTIFY_PPM_FEEDBACK_READ: ULONG = 0x0A;
/// `PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES` (0x0B): [`PEP_PPM_QUERY_PERF_CAPABILITIES`];
/// `PASSIVE_LEVEL`.
pub const PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES: ULONG = 0x0B;
/// `PEP_NOTIFY_PPM_PERF_CONSTRAINTS` (0x0C): [`PEP_PPM_PERF_CONSTRAINTS`]; `PASSIVE_LEVEL`.
pub const PEP_NOTIFY_PPM_PERF_CONSTRAINTS: ULONG = 0x0C;
/// `PEP_NOTIFY_PPM_PERF_SET` (0x0D): [`PEP_PPM_PERF_SET`]; `DISPATCH_LEVEL`.
pub const PEP_NOTIFY_PPM_PERF_SET: ULONG = 0x0D;
/// `PEP_NOTIFY_PPM_PARK_SELECTION` (0x0E): `PEP_PPM_PARK_SELECTION`.
pub const PEP_NOTIFY_PPM_PARK_SELECTION: ULONG = 0x0E;
/// `PEP_NOTIFY_PPM_CST_STATES` (0x0F): `PEP_PPM_CST_STATES`.
pub const PEP_NOTIFY_PPM_CST_STATES: ULONG = 0x0F;
/// `PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES` (0x10): `PEP_PPM_QUERY_PLATFORM_STATES`.
pub const PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES: ULONG = 0x10;
/// `PEP_NOTIFY_PPM_QUERY_LP_SETTINGS` (0x11): deprecated, `pep_x.h` only.
pub const PEP_NOTIFY_PPM_QUERY_LP_SETTINGS: ULONG = 0x11;
/// `PEP_NOTIFY_PPM_QUERY_IDLE_STATES_V2` (0x12): `PEP_PPM_QUERY_IDLE_STATES_V2`.
pub const PEP_NOTIFY_PPM_QUERY_IDLE_STATES_V2: ULONG = 0x12;
/// `PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE` (0x13): `PEP_PPM_QUERY_PLATFORM_STATE`.
pub const PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE: ULONG = 0x13;
/// `PEP_NOTIFY_PPM_TEST_IDLE_STATE` (0x14): `PEP_PPM_TEST_IDLE_STATE`.
pub const PEP_NOTIFY_PPM_TEST_IDLE_STATE: ULONG = 0x14;
/// `PEP_NOTIFY_PPM_IDLE_PRE_EXECUTE` (0x15): `PEP_PPM_IDLE_EXECUTE(_V2)`.
pub const PEP_NOTIFY_PPM_IDLE_PRE_EXECUTE: ULONG = 0x15;
/// `PEP_NOTIFY_PPM_UPDATE_PLATFORM_STATE` (0x16): `PEP_PPM_QUERY_PLATFORM_STATE`.
pub const PEP_NOTIFY_PPM_UPDATE_PLATFORM_STATE: ULONG = 0x16;
/// `PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE_RESIDENCIES` (0x17):
/// `PEP_PPM_PLATFORM_STATE_RESIDENCIES`.
pub const PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE_RESIDENCIES: ULONG = 0x17;
/// `PEP_NOTIFY_PPM_QUERY_VETO_REASONS` (0x18): `PEP_PPM_QUERY_VETO_REASONS`.
pub const PEP_NOTIFY_PPM_QUERY_VETO_REASONS: ULONG = 0x18;
/// `PEP_NOTIFY_PPM_QUERY_VETO_REASON` (0x19): `PEP_PPM_QUERY_VETO_REASON`.
pub const PEP_NOTIFY_PPM_QUERY_VETO_REASON: ULONG = 0x19;
/// `PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES` (0x1A): no payload.
pub const PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES: ULONG = 0x1A;
/// `PEP_NOTIFY_PPM_QUERY_COORDINATED_STATE_NAME` (0x1B): `PEP_PPM_QUERY_STATE_NAME`.
pub const PEP_NOTIFY_PPM_QUERY_COORDINATED_STATE_NAME: ULONG = 0x1B;
/// `PEP_NOTIFY_PPM_QUERY_PROCESSOR_STATE_NAME` (0x1C): `PEP_PPM_QUERY_STATE_NAME`.
pub const PEP_NOTIFY_PPM_QUERY_PROCESSOR_STATE_NAME: ULONG = 0x1C;
/// `PEP_NOTIFY_PPM_QUERY_COORDINATED_STATES` (0x1D): `PEP_PPM_QUERY_COORDINATED_STATES`.
pub const PEP_NOTIFY_PPM_QUERY_COORDINATED_STATES: ULONG = 0x1D;
/// `PEP_NOTIFY_PPM_QUERY_COORDINATED_DEPENDENCY` (0x1E):
/// `PEP_PPM_QUERY_COORDINATED_DEPENDENCY`.
pub const PEP_NOTIFY_PPM_QUERY_COORDINATED_DEPENDENCY: ULONG = 0x1E;
/// `PEP_NOTIFY_PPM_PARK_SELECTION_V2` (0x1F): `PEP_PPM_PARK_SELECTION_V2`.
pub const PEP_NOTIFY_PPM_PARK_SELECTION_V2: ULONG = 0x1F;
/// `PEP_NOTIFY_PPM_PARK_MASK` (0x20): `PEP_PPM_PARK_MASK`.
pub const PEP_NOTIFY_PPM_PARK_MASK: ULONG = 0x20;
/// `PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE` (0x21): [`PEP_PPM_PERF_CHECK_COMPLETE`];
/// `DISPATCH_LEVEL`, any processor.
pub const PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE: ULONG = 0x21;
/// `PEP_NOTIFY_PPM_LPI_SUPPORTED` (0x22): `PEP_PPM_LPI_SUPPORTED` (undocumented).
pub const PEP_NOTIFY_PPM_LPI_SUPPORTED: ULONG = 0x22;
/// `PEP_NOTIFY_PPM_LPI_PROCESSOR_STATES` (0x23): `PEP_PPM_LPI_PROCESSOR_STATES`
/// (undocumented).
pub const PEP_NOTIFY_PPM_LPI_PROCESSOR_STATES: ULONG = 0x23;
/// `PEP_NOTIFY_PPM_LPI_COORDINATED_STATES` (0x24): `PEP_PPM_LPI_COORDINATED_STATES`
/// (undocumented).
pub const PEP_NOTIFY_PPM_LPI_COORDINATED_STATES: ULONG = 0x24;
/// `PEP_NOTIFY_PPM_LPI_PRE_EXECUTE` (0x25): `PEP_PPM_LPI_PRE_EXECUTE` (undocumented).
pub const PEP_NOTIFY_PPM_LPI_PRE_EXECUTE: ULONG = 0x25;
/// `PEP_NOTIFY_PPM_LPI_COMPLETE` (0x26): `PEP_PPM_LPI_COMPLETE` (undocumented).
pub const PEP_NOTIFY_PPM_LPI_COMPLETE: ULONG = 0x26;
/// `PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE` (0x27): [`PEP_PPM_ENTER_SYSTEM_STATE`];
/// `DISPATCH_LEVEL`, on every processor at once; must not queue work.
pub const PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE: ULONG = 0x27;
/// `PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE` (0x28): [`PEP_PPM_RESUME_FROM_SYSTEM_STATE`];
/// `DISPATCH_LEVEL`, on every processor at once.
pub const PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE: ULONG = 0x28;
/// `PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES` (0x29): [`PEP_PPM_QUERY_DISCRETE_PERF_STATES`];
/// `PASSIVE_LEVEL`.
pub const PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES: ULONG = 0x29;
/// `PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO` (0x2A): [`PEP_PPM_QUERY_DOMAIN_INFO`]; `PASSIVE_LEVEL`,
/// optional.
pub const PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO: ULONG = 0x2A;
/// `PEP_NOTIFY_PPM_PERF_SET_STATE` (0x2B): [`PEP_PPM_PERF_SET_STATE`]; `DISPATCH_LEVEL`.
pub const PEP_NOTIFY_PPM_PERF_SET_STATE: ULONG = 0x2B;

/// `PEP_PPM_QUERY_CAPABILITIES`: payload of [`PEP_NOTIFY_PPM_QUERY_CAPABILITIES`] (all out).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_CAPABILITIES {
    /// Number of feedback counters of this processor (documented as "must be zero" on x86 and
    /// x64).
    pub FeedbackCounterCount: ULONG,
    /// Number of processor idle states; 0 means no idle notifications.
    pub IdleStateCount: ULONG,
    /// [`TRUE`] if the PEP controls performance states.
    pub PerformanceStatesSupported: BOOLEAN,
    /// [`TRUE`] if the PEP takes part in core parking.
    pub ParkingSupported: BOOLEAN,
    /// Number of discrete performance states.
    pub DiscretePerformanceStateCount: UCHAR,
    /// Reserved, 0 (explicit in newer kits, padding in older ones).
    pub Reserved: UCHAR,
}
assert_layout!(
    PEP_PPM_QUERY_CAPABILITIES, size 12, align 4,
    FeedbackCounterCount @ 0, IdleStateCount @ 4, PerformanceStatesSupported @ 8,
    ParkingSupported @ 9, DiscretePerformanceStateCount @ 10, Reserved @ 11,
);
zeroed_default!(PEP_PPM_QUERY_CAPABILITIES {
    FeedbackCounterCount: 0,
    IdleStateCount: 0,
    PerformanceStatesSupported: FALSE,
    ParkingSupported: FALSE,
    DiscretePerformanceStateCount: 0,
    Reserved: 0,
});

/// Pointer to a [`PEP_PPM_QUERY_CAPABILITIES`].
pub type PPEP_PPM_QUERY_CAPABILITIES = *mut PEP_PPM_QUERY_CAPABILITIES;

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

/// `PEP_PPM_QUERY_PERF_CAPABILITIES`: payload of [`PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`].
///
/// All levels are on one PEP-chosen scale shared by all processors, with
/// `LowestPerformance <= LowestNonlinearPerformance <= NominalPerformance <=
/// HighestPerformance`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_PERF_CAPABILITIES {
    /// Out: highest (boost) performance.
    pub HighestPerformance: ULONG,
    /// Out: nominal (guaranteed, sustained) performance.
    pub NominalPerformance: ULONG,
    /// Out: lowest performance with non-linear power savings.
    pub LowestNonlinearPerformance: ULONG,
    /// Out: lowest performance.
    pub LowestPerformance: ULONG,
    /// Out: the processor's performance domain.
    pub DomainId: ULONG,
    /// Out: number of processors in the domain.
    pub DomainMembers: ULONG,
}
assert_layout!(
    PEP_PPM_QUERY_PERF_CAPABILITIES, size 24, align 4,
    HighestPerformance @ 0, NominalPerformance @ 4, LowestNonlinearPerformance @ 8,
    LowestPerformance @ 12, DomainId @ 16, DomainMembers @ 20,
);
zeroed_default!(PEP_PPM_QUERY_PERF_CAPABILITIES {
    HighestPerformance: 0,
    NominalPerformance: 0,
    LowestNonlinearPerformance: 0,
    LowestPerformance: 0,
    DomainId: 0,
    DomainMembers: 0,
});

/// Pointer to a [`PEP_PPM_QUERY_PERF_CAPABILITIES`].
pub type PPEP_PPM_QUERY_PERF_CAPABILITIES = *mut PEP_PPM_QUERY_PERF_CAPABILITIES;

/// `PERFORMANCE_LIMIT_THERMAL`: [`PEP_PPM_PERF_CONSTRAINTS::LimitReasons`] bit.
pub const PERFORMANCE_LIMIT_THERMAL: ULONG = 1 << 0;
/// `PERFORMANCE_LIMIT_POWER`: [`PEP_PPM_PERF_CONSTRAINTS::LimitReasons`] bit.
pub const PERFORMANCE_LIMIT_POWER: ULONG = 1 << 1;
/// `PERFORMANCE_LIMIT_DOMAIN_DEPENDENCY`: [`PEP_PPM_PERF_CONSTRAINTS::LimitReasons`] bit.
pub const PERFORMANCE_LIMIT_DOMAIN_DEPENDENCY: ULONG = 1 << 2;

/// `PEP_PPM_PERF_CONSTRAINTS` (structure tag `_PEP_PPM_QUERY_PERF_CONSTRAINTS`): payload of
/// [`PEP_NOTIFY_PPM_PERF_CONSTRAINTS`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_CONSTRAINTS {
    /// Out: the performance level currently guaranteed.
    pub GuaranteedPerformanceLimit: ULONG,
    /// Out: `PERFORMANCE_LIMIT_*` bits explaining a limit below nominal.
    pub LimitReasons: ULONG,
}
assert_layout!(
    PEP_PPM_PERF_CONSTRAINTS, size 8, align 4,
    GuaranteedPerformanceLimit @ 0, LimitReasons @ 4,
);
zeroed_default!(PEP_PPM_PERF_CONSTRAINTS { GuaranteedPerformanceLimit: 0, LimitReasons: 0 });

/// Pointer to a [`PEP_PPM_PERF_CONSTRAINTS`].
pub type PPEP_PPM_PERF_CONSTRAINTS = *mut PEP_PPM_PERF_CONSTRAINTS;

/// `PEP_PPM_PERF_SET`: payload of [`PEP_NOTIFY_PPM_PERF_SET`] (all in).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_SET {
    /// Minimum performance level.
    pub MinimumPerformance: ULONG,
    /// Maximum performance level.
    pub MaximumPerformance: ULONG,
    /// Desired performance level.
    pub DesiredPerformance: ULONG,
    /// Time window, milliseconds.
    pub TimeWindow: ULONG,
    /// Performance tolerance.
    pub PerformanceTolerance: ULONG,
}
assert_layout!(
    PEP_PPM_PERF_SET, size 20, align 4,
    MinimumPerformance @ 0, MaximumPerformance @ 4, DesiredPerformance @ 8, TimeWindow @ 12,
    PerformanceTolerance @ 16,
);
zeroed_default!(PEP_PPM_PERF_SET {
    MinimumPerformance: 0,
    MaximumPerformance: 0,
    DesiredPerformance: 0,
    TimeWindow: 0,
    PerformanceTolerance: 0,
});

/// Pointer to a [`PEP_PPM_PERF_SET`].
pub type PPEP_PPM_PERF_SET = *mut PEP_PPM_PERF_SET;

/// `PEP_PPM_PERF_SET_STATE`: payload of [`PEP_NOTIFY_PPM_PERF_SET_STATE`] (all in).
///
/// Older kits end after `DesiredPerformanceState` (3 bytes); newer kits add
/// `EnergyPerformancePreference` (4 bytes). Only read the last member if the caller's buffer
/// has it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_SET_STATE {
    /// Minimum discrete performance state.
    pub MinimumPerformanceState: UCHAR,
    /// Maximum discrete performance state.
    pub MaximumPerformanceState: UCHAR,
    /// Desired discrete performance state.
    pub DesiredPerformanceState: UCHAR,
    /// Energy/performance preference.
    pub EnergyPerformancePreference: UCHAR,
}
assert_layout!(
    PEP_PPM_PERF_SET_STATE, size 4, align 1,
    MinimumPerformanceState @ 0, MaximumPerformanceState @ 1, DesiredPerformanceState @ 2,
    EnergyPerformancePreference @ 3,
);
zeroed_default!(PEP_PPM_PERF_SET_STATE {
    MinimumPerformanceState: 0,
    MaximumPerformanceState: 0,
    DesiredPerformanceState: 0,
    EnergyPerformancePreference: 0,
});

/// Pointer to a [`PEP_PPM_PERF_SET_STATE`].
pub type PPEP_PPM_PERF_SET_STATE = *mut PEP_PPM_PERF_SET_STATE;

/// `PROCESSOR_DOMAIN_COORDIANTION_SW_ALL` (0, sic: the header's spelling): software
/// coordinates, all processors of the domain are set together.
pub const PROCESSOR_DOMAIN_COORDIANTION_SW_ALL: UCHAR = 0x00;
/// `PROCESSOR_DOMAIN_COORDIANTION_SW_ANY` (1, sic): software coordinates, any processor of the
/// domain may set the domain.
pub const PROCESSOR_DOMAIN_COORDIANTION_SW_ANY: UCHAR = 0x01;
/// `PROCESSOR_DOMAIN_COORDIANTION_HW_ALL` (2, sic): hardware coordinates per-processor
/// requests.
pub const PROCESSOR_DOMAIN_COORDIANTION_HW_ALL: UCHAR = 0x02;
/// Correctly spelled alias of [`PROCESSOR_DOMAIN_COORDIANTION_SW_ALL`] (newer kits).
pub const PROCESSOR_DOMAIN_COORDINATION_SW_ALL: UCHAR = PROCESSOR_DOMAIN_COORDIANTION_SW_ALL;
/// Correctly spelled alias of [`PROCESSOR_DOMAIN_COORDIANTION_SW_ANY`] (newer kits).
pub const PROCESSOR_DOMAIN_COORDINATION_SW_ANY: UCHAR = PROCESSOR_DOMAIN_COORDIANTION_SW_ANY;
/// Correctly spelled alias of [`PROCESSOR_DOMAIN_COORDIANTION_HW_ALL`] (newer kits).
pub const PROCESSOR_DOMAIN_COORDINATION_HW_ALL: UCHAR = PROCESSOR_DOMAIN_COORDIANTION_HW_ALL;

/// `PEP_PPM_QUERY_PLATFORM_STATES`: payload of [`PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_PLATFORM_STATES {
    /// Out: how many platform idle states the PEP supports (0: none; it then never selects
    /// one).
    pub PlatformStateCount: ULONG,
}
assert_layout!(PEP_PPM_QUERY_PLATFORM_STATES, size 4, align 4, PlatformStateCount @ 0);
zeroed_default!(PEP_PPM_QUERY_PLATFORM_STATES { PlatformStateCount: 0 });
/// Pointer to a [`PEP_PPM_QUERY_PLATFORM_STATES`].
pub type PPEP_PPM_QUERY_PLATFORM_STATES = *mut PEP_PPM_QUERY_PLATFORM_STATES;

/// `PEP_PPM_QUERY_VETO_REASONS`: payload of [`PEP_NOTIFY_PPM_QUERY_VETO_REASONS`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_VETO_REASONS {
    /// Out: the veto reasons `1..=VetoReasonCount` the PEP may use (0: it vetoes nothing).
    pub VetoReasonCount: ULONG,
}
assert_layout!(PEP_PPM_QUERY_VETO_REASONS, size 4, align 4, VetoReasonCount @ 0);
zeroed_default!(PEP_PPM_QUERY_VETO_REASONS { VetoReasonCount: 0 });
/// Pointer to a [`PEP_PPM_QUERY_VETO_REASONS`].
pub type PPEP_PPM_QUERY_VETO_REASONS = *mut PEP_PPM_QUERY_VETO_REASONS;

/// `PEP_PPM_QUERY_DOMAIN_INFO`: payload of [`PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_DOMAIN_INFO {
    /// In: the domain.
    pub DomainId: ULONG,
    /// Out: a `PROCESSOR_DOMAIN_COORDIANTION_*` value.
    pub CoordinationType: UCHAR,
    /// Out (`HW_ALL` only): the platform ignores requests of idle processors.
    pub IdleProcessorsDiscounted: BOOLEAN,
    /// Out: the PEP supports scheduler-directed transitions for this domain.
    pub SchedulerDirectedTransitionsSupported: BOOLEAN,
    /// Out: performance changes must run on the processor that changes (newer kits; padding
    /// in older ones).
    pub AffinitizePerfSet: BOOLEAN,
    /// Out: worst-case transition latency, 100 ns units.
    pub WorstCaseTransitionLatency: ULONG,
    /// Out: worst-case transition overhead, 100 ns units.
    pub WorstCaseTransitionOverhead: ULONG,
}
assert_layout!(
    PEP_PPM_QUERY_DOMAIN_INFO, size 16, align 4,
    DomainId @ 0, CoordinationType @ 4, IdleProcessorsDiscounted @ 5,
    SchedulerDirectedTransitionsSupported @ 6, AffinitizePerfSet @ 7,
    WorstCaseTransitionLatency @ 8, WorstCaseTransitionOverhead @ 12,
);
zeroed_default!(PEP_PPM_QUERY_DOMAIN_INFO {
    DomainId: 0,
    CoordinationType: PROCESSOR_DOMAIN_COORDIANTION_SW_ALL,
    IdleProcessorsDiscounted: FALSE,
    SchedulerDirectedTransitionsSupported: FALSE,
    AffinitizePerfSet: FALSE,
    WorstCaseTransitionLatency: 0,
    WorstCaseTransitionOverhead: 0,
});

/// Pointer to a [`PEP_PPM_QUERY_DOMAIN_INFO`].
pub type PPEP_PPM_QUERY_DOMAIN_INFO = *mut PEP_PPM_QUERY_DOMAIN_INFO;

/// `PEP_PROCESSOR_PERF_STATE`: one discrete performance state.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PROCESSOR_PERF_STATE {
    /// Performance level, on the scale of [`PEP_PPM_QUERY_PERF_CAPABILITIES`].
    pub Performance: ULONG,
    /// Frequency, MHz.
    pub Frequency: ULONG,
    /// Reserved.
    pub Reserved: [ULONG; 4],
}
assert_layout!(
    PEP_PROCESSOR_PERF_STATE, size 24, align 4,
    Performance @ 0, Frequency @ 4, Reserved @ 8,
);
zeroed_default!(PEP_PROCESSOR_PERF_STATE { Performance: 0, Frequency: 0, Reserved: [0; 4] });

/// Pointer to a [`PEP_PROCESSOR_PERF_STATE`].
pub type PPEP_PROCESSOR_PERF_STATE = *mut PEP_PROCESSOR_PERF_STATE;

/// `PEP_PPM_QUERY_DISCRETE_PERF_STATES`: payload of
/// [`PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_DISCRETE_PERF_STATES {
    /// In: number of elements of `States`.
    pub Count: ULONG,
    /// Out: the states, fastest first.
    pub States: PPEP_PROCESSOR_PERF_STATE,
}
assert_layout!(PEP_PPM_QUERY_DISCRETE_PERF_STATES, size 16, align 8, Count @ 0, States @ 8);
zeroed_default!(PEP_PPM_QUERY_DISCRETE_PERF_STATES { Count: 0, States: core::ptr::null_mut() });

/// Pointer to a [`PEP_PPM_QUERY_DISCRETE_PERF_STATES`].
pub type PPEP_PPM_QUERY_DISCRETE_PERF_STATES = *mut PEP_PPM_QUERY_DISCRETE_PERF_STATES;

/// `PEP_PPM_ENTER_SYSTEM_STATE`: payload of [`PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_ENTER_SYSTEM_STATE {
    /// In: the system state being entered.
    pub TargetState: SYSTEM_POWER_STATE,
}
assert_layout!(PEP_PPM_ENTER_SYSTEM_STATE, size 4, align 4, TargetState @ 0);
zeroed_default!(PEP_PPM_ENTER_SYSTEM_STATE { TargetState: PowerSystemUnspecified });

/// Pointer to a [`PEP_PPM_ENTER_SYSTEM_STATE`].
pub type PPEP_PPM_ENTER_SYSTEM_STATE = *mut PEP_PPM_ENTER_SYSTEM_STATE;

/// `PEP_PPM_RESUME_FROM_SYSTEM_STATE`: payload of [`PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_RESUME_FROM_SYSTEM_STATE {
    /// In: the system state being left.
    pub TargetState: SYSTEM_POWER_STATE,
}
assert_layout!(PEP_PPM_RESUME_FROM_SYSTEM_STATE, size 4, align 4, TargetState @ 0);
zeroed_default!(PEP_PPM_RESUME_FROM_SYSTEM_STATE { TargetState: PowerSystemUnspecified });

/// Pointer to a [`PEP_PPM_RESUME_FROM_SYSTEM_STATE`].
pub type PPEP_PPM_RESUME_FROM_SYSTEM_STATE = *mut PEP_PPM_RESUME_FROM_SYSTEM_STATE;

/// `PEP_PPM_PERF_CHECK_COMPLETE`: payload of [`PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_CHECK_COMPLETE {
    /// In: the evaluation time of the completed performance check.
    pub EvaluationTime: ULONG64,
}
assert_layout!(PEP_PPM_PERF_CHECK_COMPLETE, size 8, align 8, EvaluationTime @ 0);
zeroed_default!(PEP_PPM_PERF_CHECK_COMPLETE { EvaluationTime: 0 });

/// Pointer to a [`PEP_PPM_PERF_CHECK_COMPLETE`].
pub type PPEP_PPM_PERF_CHECK_COMPLETE = *mut PEP_PPM_PERF_CHECK_COMPLETE;

// ---------------------------------------------------------------------------------------------
// ACPI notifications (IDs only: this PEP answers FALSE to all of them)
// ---------------------------------------------------------------------------------------------

/// `PEP_NOTIFY_ACPI_PREPARE_DEVICE` (0x01).
pub const PEP_NOTIFY_ACPI_PREPARE_DEVICE: ULONG = 0x01;
/// `PEP_NOTIFY_ACPI_ABANDON_DEVICE` (0x02).
pub const PEP_NOTIFY_ACPI_ABANDON_DEVICE: ULONG = 0x02;
/// `PEP_NOTIFY_ACPI_REGISTER_DEVICE` (0x03).
pub const PEP_NOTIFY_ACPI_REGISTER_DEVICE: ULONG = 0x03;
/// `PEP_NOTIFY_ACPI_UNREGISTER_DEVICE` (0x04).
pub const PEP_NOTIFY_ACPI_UNREGISTER_DEVICE: ULONG = 0x04;
/// `PEP_NOTIFY_ACPI_ENUMERATE_DEVICE_NAMESPACE` (0x05).
pub const PEP_NOTIFY_ACPI_ENUMERATE_DEVICE_NAMESPACE: ULONG = 0x05;
/// `PEP_NOTIFY_ACPI_QUERY_OBJECT_INFORMATION` (0x06).
pub const PEP_NOTIFY_ACPI_QUERY_OBJECT_INFORMATION: ULONG = 0x06;
/// `PEP_NOTIFY_ACPI_EVALUATE_CONTROL_METHOD` (0x07).
pub const PEP_NOTIFY_ACPI_EVALUATE_CONTROL_METHOD: ULONG = 0x07;
/// `PEP_NOTIFY_ACPI_QUERY_DEVICE_CONTROL_RESOURCES` (0x08).
pub const PEP_NOTIFY_ACPI_QUERY_DEVICE_CONTROL_RESOURCES: ULONG = 0x08;
/// `PEP_NOTIFY_ACPI_TRANSLATED_DEVICE_CONTROL_RESOURCES` (0x09).
pub const PEP_NOTIFY_ACPI_TRANSLATED_DEVICE_CONTROL_RESOURCES: ULONG = 0x09;
/// `PEP_NOTIFY_ACPI_WORK` (0x0A).
pub const PEP_NOTIFY_ACPI_WORK: ULONG = 0x0A;

// ---------------------------------------------------------------------------------------------
// Processor numbering and hardware-counter arbitration (`ntddk.h`, `wdm.h`)
// ---------------------------------------------------------------------------------------------

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

#[cfg(test)]
// The tests inspect bindgen's `_bitfield_1` storage units and `__bindgen_anon_1` members.
#[allow(clippy::used_underscore_binding)]
mod tests {
    use super::*;

    /// The `u32` values at byte offsets 0 and 4 of a 64-bit word of a buffer.
    fn halves(word: u64) -> (u32, u32) {
        let [l0, l1, l2, l3, h0, h1, h2, h3] = word.to_ne_bytes();
        (u32::from_ne_bytes([l0, l1, l2, l3]), u32::from_ne_bytes([h0, h1, h2, h3]))
    }

    #[test]
    fn affinitized_relative_frequency_words() {
        let plain = PEP_PROCESSOR_FEEDBACK_COUNTER::new(
            true,
            PROCESSOR_FEEDBACK_TYPE_RELATIVE,
            PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
            false,
            3000,
        );
        assert_eq!(plain._bitfield_1, 0x3);
        assert_eq!(plain.NominalRate, 3000);

        let discounted = PEP_PROCESSOR_FEEDBACK_COUNTER::new(
            true,
            PROCESSOR_FEEDBACK_TYPE_RELATIVE,
            PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
            true,
            3000,
        );
        assert_eq!(discounted._bitfield_1, 0x83);

        assert_eq!(PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(1, 1, 0, 0, 0), 0x3);
        assert_eq!(PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(1, 1, 0, 1, 0), 0x83);
        // A performance counter, not affinitized: Counter = 1 at bit 3, Type = 1 at bit 1.
        assert_eq!(PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(0, 1, 1, 0, 0), 0xA);
    }

    #[test]
    fn bitfield_accessors_round_trip() {
        let mut counter = PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed();
        counter.set_Affinitized(1);
        counter.set_Type(PROCESSOR_FEEDBACK_TYPE_RELATIVE);
        counter.set_Counter(PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE);
        counter.set_DiscountIdle(1);
        assert_eq!(counter.Affinitized(), 1);
        assert_eq!(counter.Type(), PROCESSOR_FEEDBACK_TYPE_RELATIVE);
        assert_eq!(counter.Counter(), PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE);
        assert_eq!(counter.DiscountIdle(), 1);
        assert_eq!(counter.Reserved(), 0);
        assert_eq!(counter._bitfield_1, 0x8B);

        counter.set_Affinitized(0);
        counter.set_DiscountIdle(0);
        assert_eq!(counter._bitfield_1, 0x0A);
        assert_eq!(counter.Type(), PROCESSOR_FEEDBACK_TYPE_RELATIVE);
        assert_eq!(counter.Counter(), PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE);
    }

    #[test]
    fn bitfield_setters_mask_to_width() {
        let mut counter = PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed();
        counter.set_Type(0xFF);
        assert_eq!(counter.Type(), 0x3);
        assert_eq!(counter._bitfield_1, 0x6);

        counter.set_Counter(0x1F);
        assert_eq!(counter.Counter(), 0xF);
        assert_eq!(counter._bitfield_1, 0x7E);

        counter.set_Affinitized(0xFFFF_FFFE);
        assert_eq!(counter.Affinitized(), 0);
        counter.set_DiscountIdle(3);
        assert_eq!(counter.DiscountIdle(), 1);
        assert_eq!(counter._bitfield_1, 0xFE);

        counter.set_Reserved(u32::MAX);
        assert_eq!(counter.Reserved(), 0x00FF_FFFF);
        assert_eq!(counter._bitfield_1, 0xFFFF_FFFE);
        counter.set_Reserved(0);
        assert_eq!(counter._bitfield_1, 0xFE);

        assert_eq!(
            PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(3, 7, 0x1F, 2, 0x0100_0000),
            0x7F
        );

        let mut flags = PEP_UNMASKED_INTERRUPT_FLAGS__bindgen_ty_1::default();
        flags.set_SecondaryInterrupt(3);
        assert_eq!(flags.SecondaryInterrupt(), 1);
        flags.set_Reserved(u16::MAX);
        assert_eq!(flags.Reserved(), 0x7FFF);
        assert_eq!(flags._bitfield_1, u16::MAX);
        flags.set_SecondaryInterrupt(0);
        assert_eq!(flags._bitfield_1, 0xFFFE);
    }

    #[test]
    fn feedback_read_relative_lands_at_8_and_16() {
        let mut buffer = [0_u64; 3];
        {
            // SAFETY: `buffer` is 24 bytes, 8-aligned and all zero, which is a valid
            // `PEP_PPM_FEEDBACK_READ`; the reference is the only access until it is dropped.
            let read =
                unsafe { &mut *core::ptr::from_mut(&mut buffer).cast::<PEP_PPM_FEEDBACK_READ>() };
            read.CounterIndex = 0x1234_5678;
            read.__bindgen_anon_1.__bindgen_anon_1.NominalCount = 0x1111_2222_3333_4444;
            read.__bindgen_anon_1.__bindgen_anon_1.ActualCount = 0x5555_6666_7777_8888;
        }
        let [first, second, third] = buffer;
        assert_eq!(halves(first).0, 0x1234_5678);
        assert_eq!(second, 0x1111_2222_3333_4444);
        assert_eq!(third, 0x5555_6666_7777_8888);
    }

    #[test]
    fn feedback_read_instantaneous_lands_at_8() {
        let mut buffer = [0_u64; 3];
        {
            // SAFETY: `buffer` is 24 bytes, 8-aligned and all zero, which is a valid
            // `PEP_PPM_FEEDBACK_READ`; the reference is the only access until it is dropped.
            let read =
                unsafe { &mut *core::ptr::from_mut(&mut buffer).cast::<PEP_PPM_FEEDBACK_READ>() };
            read.CounterIndex = 2;
            read.__bindgen_anon_1.InstantaneousValue = 0xDEAD_BEEF_0000_0001;
        }
        let [first, second, third] = buffer;
        assert_eq!(halves(first).0, 2);
        assert_eq!(second, 0xDEAD_BEEF_0000_0001);
        assert_eq!(third, 0);
    }

    #[test]
    fn counter_descriptor_union_lands_at_8() {
        let mut buffer = [0_u64; 4];
        {
            // SAFETY: `buffer` is 32 bytes, 8-aligned and all zero, which is a valid
            // `PHYSICAL_COUNTER_RESOURCE_LIST` (count 0, a NULL overflow handler); the
            // reference is the only access until it is dropped.
            let list = unsafe {
                &mut *core::ptr::from_mut(&mut buffer).cast::<PHYSICAL_COUNTER_RESOURCE_LIST>()
            };
            list.Count = 1;
            let [descriptor] = &mut list.Descriptors;
            descriptor.Type = ResourceTypeRange;
            descriptor.Flags = 0;
            descriptor.u.Range.Begin = 2;
            descriptor.u.Range.End = 3;
        }
        let [count, kind_flags, range, rest] = buffer;
        assert_eq!(halves(count).0, 1);
        assert_eq!(halves(kind_flags), (1, 0));
        assert_eq!(halves(range), (2, 3));
        assert_eq!(rest, 0);

        let mut buffer = [0_u64; 3];
        {
            // SAFETY: `buffer` is 24 bytes, 8-aligned and all zero, which is a valid
            // `PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR`; the reference is the only access until it
            // is dropped.
            let descriptor = unsafe {
                &mut *core::ptr::from_mut(&mut buffer)
                    .cast::<PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR>()
            };
            descriptor.Type = ResourceTypeEventBuffer;
            descriptor.u.EventBufferConfiguration = PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION {
                OverflowHandler: None,
                CustomEventBufferEntrySize: 64,
                EventThreshold: 7,
            };
        }
        let [kind_flags, handler, sizes] = buffer;
        assert_eq!(halves(kind_flags), (4, 0));
        assert_eq!(handler, 0);
        assert_eq!(halves(sizes), (64, 7));
    }

    #[test]
    fn anysize_array_pointers() {
        let mut list = PHYSICAL_COUNTER_RESOURCE_LIST::zeroed();
        let base = core::ptr::from_mut(&mut list);
        let first = PHYSICAL_COUNTER_RESOURCE_LIST::descriptors_ptr(base);
        assert_eq!(first.addr().wrapping_sub(base.addr()), 8);

        let mut query = PEP_PPM_QUERY_FEEDBACK_COUNTERS::zeroed();
        let base = core::ptr::from_mut(&mut query);
        let first = PEP_PPM_QUERY_FEEDBACK_COUNTERS::counters_ptr(base);
        assert_eq!(first.addr().wrapping_sub(base.addr()), 4);
    }

    #[test]
    fn constants_match_the_headers() {
        assert_eq!(PEP_INFORMATION::SIZE, 32);
        assert_eq!(PEP_KERNEL_INFORMATION_STRUCT_V3::SIZE, 96);
        assert_eq!(STATUS_INVALID_PARAMETER.cast_unsigned(), 0xC000_000D);
        assert_eq!(STATUS_INVALID_PEP_INFO_VERSION.cast_unsigned(), 0xC000_A005);
        assert_eq!(STATUS_INSUFFICIENT_RESOURCES.cast_unsigned(), 0xC000_009A);
        assert_eq!(STATUS_UNSUCCESSFUL.cast_unsigned(), 0xC000_0001);
        assert_eq!(PepDeviceAccepted, 2);
        assert_eq!(PEP_NOTIFY_PPM_PERF_SET_STATE, 0x2B);
        assert_eq!(PEP_DPM_DEVICE_STARTED, 0x12);
        assert_eq!(
            PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES,
            PEP_DPM_QUERY_COMPONENT_PERF_CAPABILTIES
        );
    }
}
