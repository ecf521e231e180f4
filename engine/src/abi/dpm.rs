//! Device (DPM) notifications.

use super::types::{
    BOOLEAN, FALSE, GUID, NTSTATUS, PCUNICODE_STRING, PEPHANDLE, POHANDLE, PVOID, ULONG, ULONGLONG,
};

// Items that only the documentation links name.
#[cfg(doc)]
use super::types::TRUE;

/// `PEP_DPM_PREPARE_DEVICE` (0x01): [`PEP_PREPARE_DEVICE`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_PREPARE_DEVICE: ULONG = 0x01;
/// `PEP_DPM_ABANDON_DEVICE` (0x02): [`PEP_ABANDON_DEVICE`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_ABANDON_DEVICE: ULONG = 0x02;
/// `PEP_DPM_REGISTER_DEVICE` (0x03): [`PEP_REGISTER_DEVICE_V2`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_REGISTER_DEVICE: ULONG = 0x03;
/// `PEP_DPM_UNREGISTER_DEVICE` (0x04): [`PEP_UNREGISTER_DEVICE`]; `PASSIVE_LEVEL`.
pub const PEP_DPM_UNREGISTER_DEVICE: ULONG = 0x04;
/// `PEP_DPM_DEVICE_POWER_STATE` (0x05): [`PEP_DEVICE_POWER_STATE`]; IRQL <= `DISPATCH_LEVEL`
/// (the conceptual page says `PASSIVE_LEVEL`; Microsoft's i.MX6 PEP allows `DISPATCH_LEVEL`).
pub const PEP_DPM_DEVICE_POWER_STATE: ULONG = 0x05;
/// `PEP_DPM_COMPONENT_ACTIVE` (0x07): `PEP_COMPONENT_ACTIVE` (`pep_x.h` only).
pub const PEP_DPM_COMPONENT_ACTIVE: ULONG = 0x07;
/// `PEP_DPM_WORK` (0x0D): [`PEP_WORK`]; sent after `RequestWorker`.
pub const PEP_DPM_WORK: ULONG = 0x0D;
/// `PEP_DPM_POWER_CONTROL_REQUEST` (0x0E): [`PEP_POWER_CONTROL_REQUEST`]; IRQL <=
/// `DISPATCH_LEVEL`.
pub const PEP_DPM_POWER_CONTROL_REQUEST: ULONG = 0x0E;
/// `PEP_DPM_POWER_CONTROL_COMPLETE` (0x0F): `PEP_POWER_CONTROL_COMPLETE`.
pub const PEP_DPM_POWER_CONTROL_COMPLETE: ULONG = 0x0F;
/// `PEP_DPM_SYSTEM_LATENCY_UPDATE` (0x10): `PEP_SYSTEM_LATENCY`.
pub const PEP_DPM_SYSTEM_LATENCY_UPDATE: ULONG = 0x10;
/// `PEP_DPM_DEVICE_STARTED` (0x12): [`PEP_DEVICE_STARTED`]; IRQL <= `DISPATCH_LEVEL`.
pub const PEP_DPM_DEVICE_STARTED: ULONG = 0x12;
/// `PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE` (0x13): [`PEP_NOTIFY_COMPONENT_IDLE_STATE`];
/// IRQL <= `DISPATCH_LEVEL`.
pub const PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE: ULONG = 0x13;
/// `PEP_DPM_REGISTER_DEBUGGER` (0x15): `PEP_REGISTER_DEBUGGER`.
pub const PEP_DPM_REGISTER_DEBUGGER: ULONG = 0x15;
/// `PEP_DPM_LOW_POWER_EPOCH` (0x18): `PEP_LOW_POWER_EPOCH` (deprecated).
pub const PEP_DPM_LOW_POWER_EPOCH: ULONG = 0x18;
/// `PEP_DPM_REGISTER_CRASHDUMP_DEVICE` (0x19): [`PEP_REGISTER_CRASHDUMP_DEVICE`]; IRQL <=
/// `HIGH_LEVEL`.
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

/// `PEP_DEVICE_POWER_STATE`: payload of [`PEP_DPM_DEVICE_POWER_STATE`]. Every member is an
/// input; "the PEP does not write to this structure" (its reference page).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_DEVICE_POWER_STATE {
    /// In: the PEP's handle for the device.
    pub DeviceHandle: PEPHANDLE,
    /// In: the new `DEVICE_POWER_STATE` (a 4-byte C enum).
    pub PowerState: i32,
    /// In: [`TRUE`] when the transition completed, [`FALSE`] when it was initiated.
    pub Complete: BOOLEAN,
    /// In: always [`FALSE`].
    pub SystemTransition: BOOLEAN,
}
assert_layout!(
    PEP_DEVICE_POWER_STATE, size 16, align 8,
    DeviceHandle @ 0, PowerState @ 8, Complete @ 12, SystemTransition @ 13,
);
zeroed_default!(PEP_DEVICE_POWER_STATE {
    DeviceHandle: core::ptr::null_mut(),
    PowerState: 0,
    Complete: FALSE,
    SystemTransition: FALSE,
});

/// `PEP_NOTIFY_COMPONENT_IDLE_STATE`: payload of [`PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_NOTIFY_COMPONENT_IDLE_STATE {
    /// In: the PEP's handle for the device.
    pub DeviceHandle: PEPHANDLE,
    /// In: the component's index.
    pub Component: ULONG,
    /// In: the F-state it moves to (0 = F0).
    pub IdleState: ULONG,
    /// In: [`TRUE`] after the driver was notified (a post-notification).
    pub DriverNotified: BOOLEAN,
    /// Out: [`TRUE`] when the PEP completed its preparations synchronously.
    pub Completed: BOOLEAN,
}
assert_layout!(
    PEP_NOTIFY_COMPONENT_IDLE_STATE, size 24, align 8,
    DeviceHandle @ 0, Component @ 8, IdleState @ 12, DriverNotified @ 16, Completed @ 17,
);
zeroed_default!(PEP_NOTIFY_COMPONENT_IDLE_STATE {
    DeviceHandle: core::ptr::null_mut(),
    Component: 0,
    IdleState: 0,
    DriverNotified: FALSE,
    Completed: FALSE,
});

/// `PEP_POWER_CONTROL_REQUEST`: payload of [`PEP_DPM_POWER_CONTROL_REQUEST`]. The first six
/// members are inputs; the PEP writes `BytesReturned` and `Status`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_POWER_CONTROL_REQUEST {
    /// In: the PEP's handle for the device.
    pub DeviceHandle: PEPHANDLE,
    /// In: the control code (`LPCGUID`).
    pub PowerControlCode: *const GUID,
    /// In: the driver's input buffer.
    pub InBuffer: PVOID,
    /// In: its size in bytes (`SIZE_T`).
    pub InBufferSize: usize,
    /// In: the driver's output buffer.
    pub OutBuffer: PVOID,
    /// In: its size in bytes.
    pub OutBufferSize: usize,
    /// Out: bytes the PEP wrote to `OutBuffer`.
    pub BytesReturned: usize,
    /// Out: the operation's status.
    pub Status: NTSTATUS,
}
assert_layout!(
    PEP_POWER_CONTROL_REQUEST, size 64, align 8,
    DeviceHandle @ 0, PowerControlCode @ 8, InBuffer @ 16, InBufferSize @ 24, OutBuffer @ 32,
    OutBufferSize @ 40, BytesReturned @ 48, Status @ 56,
);
zeroed_default!(PEP_POWER_CONTROL_REQUEST {
    DeviceHandle: core::ptr::null_mut(),
    PowerControlCode: core::ptr::null(),
    InBuffer: core::ptr::null_mut(),
    InBufferSize: 0,
    OutBuffer: core::ptr::null_mut(),
    OutBufferSize: 0,
    BytesReturned: 0,
    Status: 0,
});

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
    /// Out: a PEP-allocated work description when `NeedWork` is [`TRUE`], else NULL.
    pub WorkInformation: PPEP_WORK_INFORMATION,
    /// Out: [`TRUE`] if the PEP has a work request.
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
