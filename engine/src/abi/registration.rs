//! Registration: `PEP_INFORMATION`, `PEP_KERNEL_INFORMATION_STRUCT_V3`, `PoFxRegisterPluginEx`.

use core::mem::size_of;

use super::layout::{get_bits16, set_bits16};
use super::types::{
    BOOLEAN, KINTERRUPT_MODE, KINTERRUPT_POLARITY, NTSTATUS, PEPHANDLE, POHANDLE, PVOID, ULONG,
    ULONGLONG, USHORT,
};

// Items that only the documentation links name.
#[cfg(doc)]
use super::dpm::PEP_DPM_WORK;
#[cfg(doc)]
use super::types::{FALSE, TRUE};

/// `size_of` a registration structure as the `USHORT` its `Size` member holds.
///
/// Used in constant items only, where a size that does not fit fails the build.
const fn size_as_ushort(size: usize) -> USHORT {
    assert!(size <= 0xFFFF, "structure size does not fit a USHORT");
    let [lo, hi, ..] = size.to_le_bytes();
    u16::from_le_bytes([lo, hi])
}

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
