//! Every notification PoFx can send this PEP, what the documentation says, what the PEP answers.
//!
//! Each DPM and PPM id of `pepfx.h` (and the `pep_x.h`-only ids the documentation lists), with
//! what Microsoft's documentation says about it, what the PEP answers, and why: the one table
//! the engine's answers, `docs/notifications.md` (generated from it, checked by
//! `engine/tests/notifications.rs`) and the emulator's `notifications.documented_answers` check
//! follow.
//!
//! The rule: where the documentation says a PEP must handle a notification, it is handled as
//! documented; where it documents how to decline (an output field), the PEP declines that way;
//! where it is silent, the answer is the one that can neither crash the system nor report wrong
//! data. Sources: `kernel/dpm-notifications.md` and `kernel/ppm-notifications.md` of
//! MicrosoftDocs/windows-driver-docs, and the `pepfx` structure pages of
//! MicrosoftDocs/windows-driver-docs-ddi (`wdk-ddi-src/content/pepfx/`).

use crate::abi::{
    PEP_DPM_ABANDON_DEVICE, PEP_DPM_COMPONENT_ACTIVE, PEP_DPM_COMPONENT_IDLE_CONSTRAINTS,
    PEP_DPM_DEVICE_IDLE_CONSTRAINTS, PEP_DPM_DEVICE_POWER_STATE, PEP_DPM_DEVICE_STARTED,
    PEP_DPM_LOW_POWER_EPOCH, PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE, PEP_DPM_POWER_CONTROL_COMPLETE,
    PEP_DPM_POWER_CONTROL_REQUEST, PEP_DPM_PREPARE_DEVICE,
    PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES, PEP_DPM_QUERY_COMPONENT_PERF_SET,
    PEP_DPM_QUERY_COMPONENT_PERF_SET_NAME, PEP_DPM_QUERY_COMPONENT_PERF_STATES,
    PEP_DPM_QUERY_CURRENT_COMPONENT_PERF_STATE, PEP_DPM_QUERY_DEBUGGER_TRANSITION_REQUIREMENTS,
    PEP_DPM_QUERY_SOC_SUBSYSTEM, PEP_DPM_QUERY_SOC_SUBSYSTEM_BLOCKING_TIME,
    PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT, PEP_DPM_QUERY_SOC_SUBSYSTEM_METADATA,
    PEP_DPM_REGISTER_COMPONENT_PERF_STATES, PEP_DPM_REGISTER_CRASHDUMP_DEVICE,
    PEP_DPM_REGISTER_DEBUGGER, PEP_DPM_REGISTER_DEVICE, PEP_DPM_REQUEST_COMPONENT_PERF_STATE,
    PEP_DPM_RESET_SOC_SUBSYSTEM_ACCOUNTING, PEP_DPM_SYSTEM_LATENCY_UPDATE,
    PEP_DPM_UNREGISTER_DEVICE, PEP_DPM_WORK, PEP_NOTIFY_PPM_CST_STATES,
    PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_IDLE_CANCEL, PEP_NOTIFY_PPM_IDLE_COMPLETE,
    PEP_NOTIFY_PPM_IDLE_EXECUTE, PEP_NOTIFY_PPM_IDLE_PRE_EXECUTE, PEP_NOTIFY_PPM_IDLE_SELECT,
    PEP_NOTIFY_PPM_INITIATE_WAKE, PEP_NOTIFY_PPM_IS_PROCESSOR_HALTED, PEP_NOTIFY_PPM_LPI_COMPLETE,
    PEP_NOTIFY_PPM_LPI_COORDINATED_STATES, PEP_NOTIFY_PPM_LPI_PRE_EXECUTE,
    PEP_NOTIFY_PPM_LPI_PROCESSOR_STATES, PEP_NOTIFY_PPM_LPI_SUPPORTED, PEP_NOTIFY_PPM_PARK_MASK,
    PEP_NOTIFY_PPM_PARK_SELECTION, PEP_NOTIFY_PPM_PARK_SELECTION_V2,
    PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, PEP_NOTIFY_PPM_PERF_CONSTRAINTS, PEP_NOTIFY_PPM_PERF_SET,
    PEP_NOTIFY_PPM_PERF_SET_STATE, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_COORDINATED_DEPENDENCY, PEP_NOTIFY_PPM_QUERY_COORDINATED_STATE_NAME,
    PEP_NOTIFY_PPM_QUERY_COORDINATED_STATES, PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES,
    PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_NOTIFY_PPM_QUERY_IDLE_STATES, PEP_NOTIFY_PPM_QUERY_IDLE_STATES_V2,
    PEP_NOTIFY_PPM_QUERY_LP_SETTINGS, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE, PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE_RESIDENCIES,
    PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, PEP_NOTIFY_PPM_QUERY_PROCESSOR_STATE_NAME,
    PEP_NOTIFY_PPM_QUERY_VETO_REASON, PEP_NOTIFY_PPM_QUERY_VETO_REASONS,
    PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, PEP_NOTIFY_PPM_TEST_IDLE_STATE,
    PEP_NOTIFY_PPM_UPDATE_PLATFORM_STATE, STATUS_NOT_IMPLEMENTED, TRUE, ULONG,
};

/// Which callback receives the notification (the two id spaces overlap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callback {
    /// `AcceptDeviceNotification` (`PEP_DPM_*`).
    Dpm,
    /// `AcceptProcessorNotification` (`PEP_NOTIFY_PPM_*`).
    Ppm,
}

/// What the documentation requires of a PEP for the notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// "The PEP must handle this notification."
    Must,
    /// Must be handled, but only by a PEP that opted into it earlier (this one never does).
    MustOnceOptedIn,
    /// Called optional, or the PEP "can ignore" it, or declining is documented.
    Optional,
    /// Deprecated, or defined only in `pep_x.h`.
    Deprecated,
    /// The documentation says nothing about handling or declining it.
    Silent,
    /// Defined in the header, not documented.
    Undocumented,
}

impl Requirement {
    /// How `docs/notifications.md` names it.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Must => "must handle",
            Self::MustOnceOptedIn => "must, once opted in",
            Self::Optional => "optional",
            Self::Deprecated => "deprecated",
            Self::Silent => "silent",
            Self::Undocumented => "undocumented",
        }
    }
}

/// What the PEP answers (for a live handle of its own, where the notification has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// TRUE, handled: the structure's outputs filled in, or the state it reports updated.
    Handled,
    /// TRUE, nothing written (the notification only informs).
    Acknowledged,
    /// TRUE, with the output fields saying no, as documented.
    DeclinedInOutputs,
    /// FALSE, nothing written.
    Refused,
}

impl Answer {
    /// What the callback returns.
    #[must_use]
    pub const fn returns(self) -> bool {
        !matches!(self, Self::Refused)
    }

    /// How `docs/notifications.md` names it.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Handled => "TRUE, handled",
            Self::Acknowledged => "TRUE, nothing written",
            Self::DeclinedInOutputs => "TRUE, declined in its outputs",
            Self::Refused => "FALSE",
        }
    }
}

/// Bytes the PEP writes into a notification's structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    /// Offset in the structure.
    pub offset: usize,
    /// The bytes written there (little-endian, as on x64 and ARM64).
    pub bytes: &'static [u8],
}

/// One notification id and the PEP's answer to it.
#[derive(Clone, Copy, Debug)]
pub struct Notification {
    /// The callback that receives it.
    pub callback: Callback,
    /// The `Notification` argument.
    pub id: ULONG,
    /// The header's name.
    pub name: &'static str,
    /// What the documentation requires.
    pub requirement: Requirement,
    /// What the documentation says (quoted where it speaks to handling or declining).
    pub documented: &'static str,
    /// What the PEP answers.
    pub answer: Answer,
    /// What it writes and when it answers otherwise (a NULL or misaligned structure, or a
    /// handle that is not a live one of its own, is always FALSE with nothing written).
    pub detail: &'static str,
    /// Why.
    pub why: &'static str,
    /// Where the documentation says it.
    pub source: &'static str,
    /// For a fixed answer ([`Self::fixed`]): every byte the PEP writes into the structure for
    /// a live handle of its own; empty when it writes nothing.
    pub outputs: &'static [Output],
}

impl Notification {
    /// Whether the answer is the same on every machine — a refusal, an acknowledgement, a
    /// decline in the outputs, or a handled notification with fixed [`Self::outputs`] — so that
    /// a caller can check it from the table alone (the queries, whose outputs describe the
    /// machine, have their own tests and checks).
    #[must_use]
    pub const fn fixed(&self) -> bool {
        !matches!(self.answer, Answer::Handled) || !self.outputs.is_empty()
    }
}

const DPM_DOC: &str = "windows-driver-docs kernel/dpm-notifications.md";
const PPM_DOC: &str = "windows-driver-docs kernel/ppm-notifications.md";

/// One row: `row!(Dpm | Ppm, id, requirement, documented, answer, detail, why, source)`; the
/// name is the id constant's own (`stringify!`), so the two cannot disagree.
macro_rules! row {
    ($callback:ident, $id:ident, $requirement:ident, $documented:expr, $answer:ident,
     $detail:expr, $why:expr, $source:expr $(,)?) => {
        row!($callback, $id, $requirement, $documented, $answer, $detail, $why, $source, [])
    };
    ($callback:ident, $id:ident, $requirement:ident, $documented:expr, $answer:ident,
     $detail:expr, $why:expr, $source:expr, [$($offset:literal => $bytes:expr),* $(,)?] $(,)?) => {
        Notification {
            callback: Callback::$callback,
            id: $id,
            name: stringify!($id),
            requirement: Requirement::$requirement,
            documented: $documented,
            answer: Answer::$answer,
            detail: $detail,
            why: $why,
            source: $source,
            outputs: &[$(Output { offset: $offset, bytes: &$bytes }),*],
        }
    };
}

/// Every DPM notification id the documentation lists, in id order.
pub const DPM: [Notification; 30] = [
    row!(
        Dpm,
        PEP_DPM_PREPARE_DEVICE,
        Optional,
        "\"The PEP should set the DeviceAccepted member ... to FALSE for all devices that the PEP does not own.\"",
        Handled,
        "DeviceAccepted TRUE for a processor id while a slot is free, FALSE for any other device.",
        "How processors arrive.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_ABANDON_DEVICE,
        Optional,
        "DeviceAccepted TRUE to claim ownership, FALSE otherwise.",
        Handled,
        "Releases the slot; DeviceAccepted says whether the device was one of its own.",
        "Lifecycle.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_REGISTER_DEVICE,
        Optional,
        "DeviceAccepted TRUE to claim ownership, FALSE otherwise.",
        Handled,
        "Its own handle and PepDeviceAccepted for a prepared processor; a NULL handle and PepDeviceNotAccepted otherwise.",
        "Lifecycle.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_UNREGISTER_DEVICE,
        Silent,
        "\"the PEP can clean up any internal state used for power management of this device.\"",
        Handled,
        "Frees the slot; a stale or repeated handle frees nothing and is refused.",
        "Lifecycle.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_DEVICE_POWER_STATE,
        Silent,
        "\"All four members of the structure contain input values that are supplied by PoFx. The PEP does not write to this structure.\" (The conceptual page's decline text names WorkInformation and NeedWork, members of PEP_WORK, not of this structure.)",
        Acknowledged,
        "TRUE for a live processor handle, nothing written; FALSE for any other handle.",
        "Informational; writing the PEP_WORK fields the conceptual page names would overwrite DeviceHandle and PowerState. A processor's D-state needs nothing from this PEP. The conceptual page says PASSIVE_LEVEL, but AcceptDeviceNotification \"can be called at IRQL <= DISPATCH_LEVEL\" (pepfx/nc-pepfx-pepcallbacknotifydpm.md) and Microsoft's i.MX6 PEP asserts no more than DISPATCH_LEVEL for this one (ms-iot/imx-iotcore mx6dpm.cpp, DpmDevicePowerState): the answer only looks the handle up, which is safe there.",
        "windows-driver-docs-ddi pepfx/ns-pepfx-_pep_device_power_state.md",
    ),
    row!(
        Dpm,
        PEP_DPM_COMPONENT_ACTIVE,
        Deprecated,
        "Listed with a pep_x.h structure (PEP_COMPONENT_ACTIVE); pepfx.h has no such id.",
        Refused,
        "FALSE, nothing written.",
        "This PEP registers through pepfx.h; completing a transition needs RequestWorker, which it never calls.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_WORK,
        Optional,
        "NeedWork [out]: \"Set this member to TRUE if the PEP has a work request, or to FALSE if the PEP has no work to request.\"; sent after the PEP calls RequestWorker.",
        DeclinedInOutputs,
        "NeedWork FALSE; WorkInformation left as PoFx passed it.",
        "It never calls RequestWorker, so it has no work. The page also says \"If NeedWork is FALSE, WorkInformation must be NULL\", but Microsoft's i.MX PEP (ms-iot/imx-iotcore) fills the PEP_WORK_INFORMATION that WorkInformation points to in place and never assigns the pointer: it is the OS's buffer, and NULL written over it could lose it.",
        "windows-driver-docs-ddi pepfx/ns-pepfx-_pep_work.md",
        [8 => [0]],
    ),
    row!(
        Dpm,
        PEP_DPM_POWER_CONTROL_REQUEST,
        Silent,
        "Status [out]: \"If the operation is successful, the PEP sets this member to STATUS_SUCCESS. Otherwise, the PEP sets this member to an appropriate error status code.\"",
        DeclinedInOutputs,
        "For a live processor handle: Status STATUS_NOT_IMPLEMENTED, BytesReturned 0, the driver's buffers untouched; FALSE for any other handle.",
        "The PEP owns the processor but defines no control code. PoFxPowerControl's page (wdm/nf-wdm-pofxpowercontrol.md) gives the two failures: STATUS_NOT_IMPLEMENTED, \"The requested power control operation is not implemented\", and STATUS_NOT_SUPPORTED, \"The power engine plug-in (PEP) does not acknowledge support for this device\" (untrue of a processor it registered).",
        "windows-driver-docs-ddi pepfx/ns-pepfx-_pep_power_control_request.md",
        [48 => [0; 8], 56 => STATUS_NOT_IMPLEMENTED.to_le_bytes()],
    ),
    row!(
        Dpm,
        PEP_DPM_POWER_CONTROL_COMPLETE,
        Optional,
        "\"The PEP can ignore this notification if it does not issue any power control requests.\"",
        Refused,
        "FALSE, nothing written.",
        "It issues none.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_SYSTEM_LATENCY_UPDATE,
        Optional,
        "\"this notification is no longer useful ... the PEP should ignore it.\"",
        Refused,
        "FALSE, nothing written.",
        "As documented.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_DEVICE_STARTED,
        Optional,
        "\"The PEP can ignore this notification if it does not issue any power control requests.\"",
        Handled,
        "Marks the slot started; a handle that is not live is refused.",
        "Lifecycle (the emulator checks the state).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE,
        Must,
        "\"The PEP must handle this notification.\" Completed TRUE completes it synchronously.",
        Handled,
        "Completed TRUE for any device handle (only a NULL or misaligned structure is refused).",
        "The PEP manages no clock or power resource, so its preparations for any F-state are complete.",
        DPM_DOC,
        [17 => [TRUE]],
    ),
    row!(
        Dpm,
        PEP_DPM_REGISTER_DEBUGGER,
        Silent,
        "Informs the PEP that a registered device may be used as a debug port.",
        Refused,
        "FALSE, nothing written.",
        "A processor is no debug port; nothing to do.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_LOW_POWER_EPOCH,
        Deprecated,
        "\"This notification is deprecated.\"",
        Refused,
        "FALSE, nothing written.",
        "As documented.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_REGISTER_CRASHDUMP_DEVICE,
        Optional,
        "\"If the PEP cannot power on the device under these constraints, it should either not handle the notification or not supply a callback routine.\"",
        Refused,
        "FALSE, nothing written.",
        "A processor is no dump device; the documented decline. Sent \"at IRQL <= HIGH_LEVEL\": the refusal reads and writes nothing, so it is safe at any IRQL.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_DEVICE_IDLE_CONSTRAINTS,
        Optional,
        "\"If no platform idle states depend on this device being in a particular D-state, this notification can be ignored.\"",
        Refused,
        "FALSE, nothing written.",
        "The PEP reports no platform idle state.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_COMPONENT_IDLE_CONSTRAINTS,
        Optional,
        "\"If no platform idle states depend on this component being in a particular F-state, this notification can be ignored.\"",
        Refused,
        "FALSE, nothing written.",
        "The PEP reports no platform idle state.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES,
        Silent,
        "Queries the number of P-state sets of a component.",
        Refused,
        "FALSE, nothing written.",
        "Processor perf control stays with ACPI (\"Platforms with x86/AMD64 processors must use ACPI interfaces for processor performance control\", ppm-notifications.md); a wrong set count would be wrong data.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_COMPONENT_PERF_SET,
        Silent,
        "Queries a component's P-state set.",
        Refused,
        "FALSE, nothing written.",
        "No component perf states (above).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_COMPONENT_PERF_SET_NAME,
        Silent,
        "Queries a P-state set's name.",
        Refused,
        "FALSE, nothing written.",
        "No component perf states (above).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_COMPONENT_PERF_STATES,
        Silent,
        "Queries a P-state set's discrete values.",
        Refused,
        "FALSE, nothing written.",
        "No component perf states (above).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_REGISTER_COMPONENT_PERF_STATES,
        Silent,
        "Informs the PEP of a component's P-states.",
        Refused,
        "FALSE, nothing written.",
        "No component perf states (above).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_REQUEST_COMPONENT_PERF_STATE,
        Silent,
        "P-state changes requested by PoFx.",
        Refused,
        "FALSE, nothing written.",
        "No component perf states (above).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_CURRENT_COMPONENT_PERF_STATE,
        Silent,
        "Queries the current P-state of a set.",
        Refused,
        "FALSE, nothing written.",
        "No component perf states (above).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_DEBUGGER_TRANSITION_REQUIREMENTS,
        Optional,
        "\"If this notification is accepted, the OS will perform all debugger power transitions for the PEP\"; sent after the PEP accepted QUERY_PLATFORM_STATE or QUERY_COORDINATED_STATES.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (it refuses both queries); not accepting is the documented alternative.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT,
        Optional,
        "\"A PEP that does not implement SoC subsystem accounting ... returns FALSE\"; \"The PEP can ignore this notification\".",
        Refused,
        "FALSE, nothing written.",
        "The documented decline: no SoC subsystem accounting.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_SOC_SUBSYSTEM,
        MustOnceOptedIn,
        "\"The PEP cannot ignore this notification. The PEP is receiving this notification because it responded to the PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT notification ... with a non-zero SubsystemCount.\" Also: \"A PEP that does not implement SoC subsystem accounting ... returns FALSE.\"",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (it refuses the COUNT query); FALSE is the documented answer of a PEP without SoC accounting.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_RESET_SOC_SUBSYSTEM_ACCOUNTING,
        Silent,
        "A SoC subsystem diagnostic notification (after a non-zero SubsystemCount).",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (it refuses the COUNT query).",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_SOC_SUBSYSTEM_BLOCKING_TIME,
        MustOnceOptedIn,
        "\"The PEP cannot ignore this notification. The PEP is receiving this notification because it responded to the PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT notification ... with a non-zero SubsystemCount.\"",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (it refuses the COUNT query); answering would invent a blocking time.",
        DPM_DOC,
    ),
    row!(
        Dpm,
        PEP_DPM_QUERY_SOC_SUBSYSTEM_METADATA,
        MustOnceOptedIn,
        "\"Sent to the PEP to collect optional metadata\" after a blocking-time query; \"The PEP cannot ignore this notification. The PEP is receiving this notification because it responded to the PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT notification ... with a non-zero SubsystemCount.\"",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (it refuses the COUNT query); the metadata it would return describe a subsystem it does not account.",
        DPM_DOC,
    ),
];

/// Every PPM notification id of `pepfx.h` and `pep_x.h`, in id order.
pub const PPM: [Notification; 43] = [
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
        Silent,
        "Sent for each processor at initialisation; \"Platforms with x86/AMD64 processors must use ACPI interfaces for processor performance control.\" FeedbackCounterCount: \"On x86/AMD64 platforms, this must be zero.\" IdleStateCount: \"The PEP can set IdleStateCount = 0 to indicate that it doesn't support any idle states, in which case the PEP doesn't need to implement any other notifications that deal with processor idle states.\" (pepfx/ns-pepfx-_pep_ppm_query_capabilities.md)",
        Handled,
        "FeedbackCounterCount (0 without usable counters), IdleStateCount 0, PerformanceStatesSupported FALSE, ParkingSupported FALSE, for a live handle or NULL (the answer is the same for every processor).",
        "By default this departs from the documented x86/AMD64 contract: FeedbackCounterCount is 1 (2 with PerformanceCounterView) where the processor has usable counters, because delivering APERF/MPERF feedback on x86-64 is what this PEP exists for; FeedbackCounters = 0 restores the contract (the x86 caveat in architecture.md). IdleStateCount 0 keeps the idle notifications away, but the documentation does not say that Windows then idles an owned processor through ACPI _CST: a machine may lose its deep C-states (architecture.md, idle states; Test-PpmPep.ps1 idle-states). Perf and parking stay with ACPI and the OS.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_IDLE_STATES,
        Deprecated,
        "pep_x.h only (superseded by QUERY_IDLE_STATES_V2).",
        Refused,
        "FALSE, nothing written.",
        "IdleStateCount is 0.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_IDLE_SELECT,
        Deprecated,
        "pep_x.h only.",
        Refused,
        "FALSE, nothing written.",
        "IdleStateCount is 0.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_IDLE_CANCEL,
        Deprecated,
        "pep_x.h only.",
        Refused,
        "FALSE, nothing written.",
        "IdleStateCount is 0.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_IDLE_EXECUTE,
        Silent,
        "\"If the PEP is unable to execute the processor (and platform) idle state, then it must return back an error status.\" The error status is the structure's: Status [out] \"indicates whether the processor idle state transition was successful\" (pepfx/ns-pepfx-_pep_ppm_idle_execute.md).",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP: the documentation sends it only to execute an idle state the PEP reported, and this PEP reports none (IdleStateCount 0). FALSE declines the notification as unrecognised; it is not the documented failure, which would be TRUE with an error in Status, so nothing is written.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_IDLE_COMPLETE,
        Silent,
        "Follows an idle transition the PEP executed.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (IdleStateCount 0).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_IS_PROCESSOR_HALTED,
        Silent,
        "Between IDLE_SELECT and IDLE_COMPLETE of a platform idle transition.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (no platform idle state); claiming \"halted\" would be wrong data.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_INITIATE_WAKE,
        Silent,
        "Wakes a processor from a non-interruptible idle state the PEP entered.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (it enters no idle state).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
        Silent,
        "Queries the feedback counters at processor initialisation.",
        Handled,
        "Count descriptors when Count equals FeedbackCounterCount (Affinitized 1, Type RELATIVE, DiscountIdle 1, NominalRate the nominal MHz or NominalPerformance); FALSE for any other Count.",
        "A buffer of another size cannot be filled without reading or writing past it. DiscountIdle, which the structure's page lists without a description, is set because every pair this PEP reads stops counting while its processor idles: APERF/MPERF \"measure performance only when the targeted processor is in the C0 state\" (Intel SDM vol. 3, hardware coordination feedback), the fixed counters' unhalted events \"count reference clock cycles whenever the specified processor is not halted\" (Intel SDM vol. 3, non-halted reference clockticks), and an AMU's, for example the Cortex-A76's: \"Counters monitoring cycle events do not increment when the core is in WFI or WFE state\" (Cortex-A76 TRM, AMU counters); what Windows does with the bit is not documented and not verified here.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_FEEDBACK_READ,
        Silent,
        "\"If the counter's Affinitized field is set, this notification is executed on the target processor.\" The callback \"must return TRUE if it handles the notification, or FALSE if it does not.\"",
        Handled,
        "NominalCount and ActualCount accumulated. FALSE with nothing written for an unknown handle, an index beyond FeedbackCounterCount, a read on another processor than the handle's and a faulting counter read.",
        "Judgement: the documentation allows FALSE and requires nothing; a read on the wrong processor cannot read the handle's counters, and a faulted read has no counts, so serving them would report wrong data.",
        "windows-driver-docs-ddi pepfx/ns-pepfx-_pep_ppm_feedback_read.md",
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
        Silent,
        "\"Each processor is a member of exactly one performance state domain.\"",
        Handled,
        "Highest, Nominal, LowestNonlinear, Lowest; one domain per processor.",
        "The scale of the PERFORMANCE counter view.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_PERF_CONSTRAINTS,
        Silent,
        "Queries the processor's operating constraints.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (PerformanceStatesSupported FALSE).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_PERF_SET,
        Silent,
        "Changes the processor's operating performance.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (PerformanceStatesSupported FALSE; perf control stays with ACPI).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_PARK_SELECTION,
        Silent,
        "Asks the PEP for a preferred set of cores to park.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (ParkingSupported FALSE).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_CST_STATES,
        Silent,
        "\"sent to the PEP to indicate the set of ACPI-defined C-states supported by the processor\", \"once before the first time the PEP receives PEP_NOTIFY_PPM_QUERY_IDLE_STATES_V2 notification for a processor, and again any time that processor receives a Notify(0x81)\"; the structure's contents \"are obtained from the _CST object\" (pepfx/ns-pepfx-_pep_ppm_cst_states.md).",
        Refused,
        "FALSE, nothing written.",
        "The PEP executes no idle state (IdleStateCount 0), so it has no use for the _CST; Microsoft's i.MX6 PEP, which reports its own idle states, refuses it too (ms-iot/imx-iotcore mx6pep.cpp). That the _CST goes to the PEP that owns the processor is the point: whether Windows still enters an owned processor's _CST C-states when its PEP reports none is not documented (architecture.md, idle states) and is what Test-PpmPep.ps1's idle-states check measures on a VM.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES,
        Silent,
        "\"After returning a non-zero number of platform states, the PEP can then begin to select platform idle states\".",
        Handled,
        "PlatformStateCount 0, for NULL or a live handle.",
        "The documented way to have none.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_LP_SETTINGS,
        Deprecated,
        "pep_x.h only.",
        Refused,
        "FALSE, nothing written.",
        "No settings to report.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_IDLE_STATES_V2,
        Silent,
        "\"The processor driver will query for the number of idle states with PEP_NOTIFY_PPM_QUERY_CAPABILITIES before sending this notification.\"",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP: IdleStateCount 0, which \"indicate[s] that it doesn't support any idle states\" (pepfx/ns-pepfx-_pep_ppm_query_capabilities.md). Microsoft's i.MX6 PEP, the public PEP that owns processors, answers it with its own three idle states (ms-iot/imx-iotcore mx6ppm.cpp).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE,
        Silent,
        "One per platform idle state the PEP reported.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (0 platform idle states).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_TEST_IDLE_STATE,
        Silent,
        "Tests whether an idle state the PEP reported can be entered.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (IdleStateCount 0).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_IDLE_PRE_EXECUTE,
        Silent,
        "\"If the PEP is unable to prepare the system to enter the processor (and platform) idle state, then it must return back an error status.\"",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP: it prepares an idle state the PEP reported, and this PEP reports none (IdleStateCount 0). FALSE declines the notification as unrecognised; the documented failure would be TRUE with an error in the structure's Status (PEP_PPM_IDLE_EXECUTE), so nothing is written.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_UPDATE_PLATFORM_STATE,
        Optional,
        "\"If the PEP does not accept the notification (i.e. returns FALSE ...), then the prior definition of the platform idle state ... is preserved.\"",
        Refused,
        "FALSE, nothing written.",
        "The documented decline; there is no platform idle state.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE_RESIDENCIES,
        Silent,
        "\"only applicable to platforms where the underlying hardware may autonomously decide to enter a platform idle state\".",
        Refused,
        "FALSE, nothing written.",
        "No platform idle state; a residency would be invented.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_VETO_REASONS,
        Optional,
        "\"This notification is optional, and may be ignored by the PEP.\"",
        Handled,
        "VetoReasonCount 0, for NULL or a live handle.",
        "It vetoes nothing; accepting with 0 also keeps QUERY_VETO_REASON away.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_VETO_REASON,
        Silent,
        "\"sent twice for each veto reason\".",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (0 veto reasons).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES,
        Silent,
        "\"This notification has no associated Data parameter.\" The PEP \"may enumerate any boot-time vetoes\".",
        Acknowledged,
        "TRUE for NULL or a live handle; no data to touch.",
        "No boot veto.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_COORDINATED_STATE_NAME,
        Silent,
        "Names a coordinated or platform idle state.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (no such state).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_PROCESSOR_STATE_NAME,
        Silent,
        "Names a processor idle state.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (IdleStateCount 0).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_COORDINATED_STATES,
        Optional,
        "\"If not accepted, the PEP is using the platform idle state interface\".",
        Refused,
        "FALSE, nothing written.",
        "The documented decline.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_COORDINATED_DEPENDENCY,
        Silent,
        "Dependencies of each coordinated idle state.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (no coordinated state).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_PARK_SELECTION_V2,
        Optional,
        "\"If this notification is not accepted, the OS will fall back to sending the PEP_NOTIFY_PPM_PARK_SELECTION notification.\"",
        Refused,
        "FALSE, nothing written.",
        "The documented decline (ParkingSupported FALSE).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_PARK_MASK,
        Silent,
        "Informs the PEP of the core parking mask.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (ParkingSupported FALSE).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE,
        Silent,
        "Informs the PEP that a performance check completed.",
        Acknowledged,
        "TRUE for NULL or a live handle, nothing written.",
        "Informational; nothing can go wrong by acknowledging it.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_LPI_SUPPORTED,
        Undocumented,
        "No documentation.",
        Refused,
        "FALSE, nothing written.",
        "Nothing to answer with.",
        "pepfx.h",
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_LPI_PROCESSOR_STATES,
        Undocumented,
        "No documentation.",
        Refused,
        "FALSE, nothing written.",
        "Nothing to answer with.",
        "pepfx.h",
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_LPI_COORDINATED_STATES,
        Undocumented,
        "No documentation.",
        Refused,
        "FALSE, nothing written.",
        "Nothing to answer with.",
        "pepfx.h",
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_LPI_PRE_EXECUTE,
        Undocumented,
        "No documentation.",
        Refused,
        "FALSE, nothing written.",
        "Nothing to answer with.",
        "pepfx.h",
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_LPI_COMPLETE,
        Undocumented,
        "No documentation.",
        Refused,
        "FALSE, nothing written.",
        "Nothing to answer with.",
        "pepfx.h",
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE,
        Optional,
        "\"an optional notification\"; \"The PEP must not queue any work from this notification.\"",
        Handled,
        "TRUE for a valid TargetState; nothing queued.",
        "Acknowledged; the resume does the work.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE,
        Optional,
        "\"An optional notification that notifies the PEP that the system has just resumed\".",
        Handled,
        "TRUE for a valid TargetState (\"the power state that the system is entering\", pepfx/ns-pepfx-_pep_ppm_resume_from_system_state.md); the next read of the handle (every handle, with NULL) re-baselines; with the fixed-counter source, fixed counters 1 and 2 are enabled again.",
        "The counters restarted while the processors were off.",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES,
        Silent,
        "Sent \"if the PEP_NOTIFY_PPM_QUERY_CAPABILITIES notification indicates support for discrete performance states\".",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (DiscretePerformanceStateCount 0).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
        Optional,
        "\"An optional notification that queries for information about a performance domain.\"",
        Handled,
        "For the domain of a live processor: the whole structure — DomainId as asked, CoordinationType SW_ALL, IdleProcessorsDiscounted FALSE, SchedulerDirectedTransitionsSupported FALSE, AffinitizePerfSet FALSE, WorstCaseTransitionLatency 0, WorstCaseTransitionOverhead 0; FALSE for an unknown DomainId.",
        "One domain per processor (its slot index). The latency is 0 because the PEP reports PerformanceStatesSupported FALSE: a non-zero TransitionLatency100ns would describe transitions it does not make, so the driver ignores one as a configuration issue (Boot\\ConfigurationIssue1…).",
        PPM_DOC,
    ),
    row!(
        Ppm,
        PEP_NOTIFY_PPM_PERF_SET_STATE,
        Silent,
        "Sets the current performance state.",
        Refused,
        "FALSE, nothing written.",
        "Not sent to this PEP (PerformanceStatesSupported FALSE).",
        PPM_DOC,
    ),
];

/// The row of notification `id` of `callback`, if the documentation defines it.
#[must_use]
pub fn find(callback: Callback, id: ULONG) -> Option<&'static Notification> {
    let table: &'static [Notification] = match callback {
        Callback::Dpm => &DPM,
        Callback::Ppm => &PPM,
    };
    table.iter().find(|row| row.id == id)
}
