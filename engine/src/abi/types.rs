//! Scalar types (`ntdef.h`, `basetsd.h`), `NTSTATUS` values (`ntstatus.h`), handles and
//! common structures.

use core::ffi::c_void;

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
/// `STATUS_NOT_IMPLEMENTED` (`0xC0000002`). `PoFxPowerControl`'s documented failure for "The
/// requested power control operation is not implemented" (`wdm/nf-wdm-pofxpowercontrol.md`).
pub const STATUS_NOT_IMPLEMENTED: NTSTATUS = 0xC000_0002_u32.cast_signed();
/// `STATUS_INVALID_PARAMETER` (`0xC000000D`). `PoFxRegisterPluginEx` returns it for a bad
/// kernel-information `Version` or `Size`, or a NULL notification callback.
pub const STATUS_INVALID_PARAMETER: NTSTATUS = 0xC000_000D_u32.cast_signed();
/// `STATUS_INSUFFICIENT_RESOURCES` (`0xC000009A`). Also what `HalAllocateHardwareCounters`
/// returns while another owner holds the counters.
pub const STATUS_INSUFFICIENT_RESOURCES: NTSTATUS = 0xC000_009A_u32.cast_signed();
/// `STATUS_NOT_SUPPORTED` (`0xC00000BB`). From `PoFxPowerControl`: "The power engine plug-in
/// (PEP) does not acknowledge support for this device".
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
///
/// [`PEP_INFORMATION::Version`]: super::PEP_INFORMATION::Version
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
