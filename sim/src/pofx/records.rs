//! What the emulator observes: one plain record per call or event, holding no pointers.

use ppm_engine::abi::{NTSTATUS, PepDeviceAccepted, ULONG};

use crate::platform::InjectionPoint;
use crate::scenario::SleepState;

/// What registration saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistrationRecord {
    /// `PEP_INFORMATION.Version`.
    pub version: u16,
    /// `PEP_INFORMATION.Size`.
    pub size: u16,
    /// `AcceptDeviceNotification` is non-NULL.
    pub device_callback: bool,
    /// `AcceptProcessorNotification` is non-NULL.
    pub processor_callback: bool,
    /// What `PoFxRegisterPluginEx`'s own checks of the structures returned.
    pub status: NTSTATUS,
    /// What the call returned, when a `[[fault]]` made it fail anyway.
    pub injected: Option<NTSTATUS>,
}

/// A `PEP_DPM_REGISTER_DEVICE` outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterRecord {
    /// The callback's return value.
    pub returned: bool,
    /// `DeviceAccepted`.
    pub acceptance: i32,
    /// `DeviceHandle`, as an address.
    pub handle: usize,
}

impl RegisterRecord {
    /// The handle, when the PEP accepted the device with a non-NULL one.
    #[must_use]
    pub const fn live_handle(&self) -> Option<usize> {
        if self.returned && self.acceptance == PepDeviceAccepted && self.handle != 0 {
            Some(self.handle)
        } else {
            None
        }
    }
}

/// A device offered to the PEP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRecord {
    /// The device id.
    pub id: String,
    /// The processor index, for processor devices.
    pub processor: Option<u32>,
    /// `PEP_DPM_PREPARE_DEVICE`'s return value.
    pub prepare_returned: bool,
    /// `DeviceAccepted` after `PEP_DPM_PREPARE_DEVICE`.
    pub accepted: bool,
    /// `PEP_DPM_REGISTER_DEVICE`, when sent (after an acceptance).
    pub registered: Option<RegisterRecord>,
    /// `PEP_DPM_DEVICE_STARTED`'s return value, when sent.
    pub started: Option<bool>,
}

/// How the counter MSRs were read during one `FEEDBACK_READ`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairAccess {
    /// An actual-count MSR read immediately followed by its nominal-count MSR, both with
    /// interrupts masked, in one masked section.
    BackToBackMasked {
        /// The actual-count MSR.
        actual_msr: u32,
        /// The nominal-count MSR.
        nominal_msr: u32,
    },
    /// What was wrong.
    Problem(String),
    /// No counter MSR was read.
    NoRead,
}

/// One `PEP_NOTIFY_PPM_FEEDBACK_READ` the emulated OS made in the runtime loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRecord {
    /// The processor's time when the call read the nominal counter (when it read none: when it
    /// returned), ns.
    pub at_ns: u64,
    /// `CounterIndex`.
    pub counter_index: u32,
    /// The callback's return value.
    pub returned: bool,
    /// `NominalCount` after the call.
    pub nominal: u64,
    /// `ActualCount` after the call.
    pub actual: u64,
    /// How the MSRs were read.
    pub access: PairAccess,
    /// Whether an MSR read faulted during the call.
    pub faulted: bool,
    /// The handle read.
    pub handle: usize,
    /// The raw counter values the call itself read (not those of nested notifications).
    pub raw: Option<RawRead>,
    /// The nested notifications delivered during the call (`[pofx] nested_notifications`).
    pub nested: Vec<NestedCall>,
}

/// The raw values of the counter pair one call read: the actual-count MSR and the next
/// nominal-count MSR read after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRead {
    /// The actual count (APERF).
    pub actual: u64,
    /// The nominal count (MPERF).
    pub nominal: u64,
    /// When the nominal count was read (the processor's time), ns: with nested notifications
    /// every platform call takes time, so this orders the reads of one processor as they
    /// accumulated.
    pub at_ns: u64,
}

/// Which check a probe belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// Undefined DPM notification IDs, NULL DPM data.
    DpmUnknown,
    /// Undefined PPM notification IDs.
    PpmUnknown,
    /// NULL data for PPM notifications that need data.
    PpmNullData,
    /// Handles the PEP never issued.
    ForgedHandle,
    /// `CounterIndex` >= the count described.
    IndexOutOfRange,
    /// A read on a processor other than the handle's.
    WrongProcessor,
    /// A read of a processor without counters.
    NoCounters,
    /// `QUERY_FEEDBACK_COUNTERS` with a `Count` other than `FeedbackCounterCount`.
    WrongCount,
    /// A handle after `PEP_DPM_UNREGISTER_DEVICE`.
    StaleHandle,
}

/// One conformance probe: a call that must be refused (FALSE) without touching the data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The check it belongs to.
    pub kind: ProbeKind,
    /// What was sent.
    pub what: String,
    /// The callback's return value.
    pub returned: bool,
    /// Whether the data buffer was left as it was.
    pub untouched: bool,
}

impl ProbeKind {
    /// Whether a probe of this kind must also leave its data untouched (not only be refused):
    /// an undefined notification or a handle the PEP never issued gives it no right to write.
    #[must_use]
    pub const fn requires_untouched_data(self) -> bool {
        matches!(
            self,
            Self::DpmUnknown
                | Self::PpmUnknown
                | Self::ForgedHandle
                | Self::WrongCount
                | Self::StaleHandle
        )
    }
}

impl Probe {
    /// Whether the PEP refused without touching the data.
    #[must_use]
    pub const fn passed(&self) -> bool {
        !self.returned && self.untouched
    }
}

/// What the engine said about itself (through its accessors; for the report only).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineSummary {
    /// The counter source it selected.
    pub counter_source: String,
    /// Its nominal rate, MHz.
    pub nominal_mhz: u32,
    /// Where the nominal rate came from.
    pub nominal_source: String,
    /// Why it reports no counters, if it does not.
    pub no_counters_reason: Option<String>,
    /// Where its perf capabilities came from.
    pub perf_source: String,
    /// Its perf capabilities: highest, nominal, lowest nonlinear, lowest.
    pub perf_capabilities: [u32; 4],
    /// The device ids it logged, with its decisions.
    pub device_ids_seen: Vec<(String, bool)>,
}

/// One start-up PPM query (NULL handle) and what the PEP answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartupQuery {
    /// The notification.
    pub notification: ULONG,
    /// Its name.
    pub name: &'static str,
    /// The callback's return value.
    pub returned: bool,
    /// The count the PEP wrote (`None`: no payload, or the sentinel left untouched).
    pub count: Option<u32>,
}

/// Which nested notification was delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NestedNotification {
    /// `FEEDBACK_READ` of the interrupted read's own handle and counter: must be served.
    OwnRead,
    /// `FEEDBACK_READ` of a handle bound to another processor: must be refused untouched.
    ForeignRead,
    /// `QUERY_CAPABILITIES` with the interrupted read's handle: the answer of initialisation.
    QueryCapabilities,
    /// `PERF_CHECK_COMPLETE` with a NULL handle: acknowledged.
    PerfCheckComplete,
}

/// One nested notification delivered during a runtime `FEEDBACK_READ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // Independent observations, not a state.
pub struct NestedCall {
    /// Where the interrupted call was.
    pub point: InjectionPoint,
    /// Whether interrupts were masked there (never, on a faithful platform).
    pub masked: bool,
    /// What was delivered.
    pub notification: NestedNotification,
    /// The handle passed.
    pub handle: usize,
    /// The callback's return value.
    pub returned: bool,
    /// `FEEDBACK_READ`: `NominalCount` after the call.
    pub nominal: u64,
    /// `FEEDBACK_READ`: `ActualCount` after the call.
    pub actual: u64,
    /// `QUERY_CAPABILITIES`: `FeedbackCounterCount` and `IdleStateCount` after the call.
    pub capabilities: Option<(u32, u32)>,
    /// `FEEDBACK_READ`: the raw counter values it read.
    pub raw: Option<RawRead>,
    /// Whether an MSR read faulted during the call.
    pub faulted: bool,
    /// Whether its data was left as it was.
    pub untouched: bool,
}

/// A `hot-add` or `hot-remove`, as the device side carried it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotplugRecord {
    /// The event's index in the scenario.
    pub event: usize,
    /// Runtime time, ms.
    pub at_ms: u32,
    /// The processor.
    pub processor: u32,
    /// What happened.
    pub change: HotplugChange,
}

/// What a [`HotplugRecord`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HotplugChange {
    /// The processor was offered: its [`DeviceRecord`] is `Observations::devices[device]`
    /// (registered and started there; its queries are in its processor record).
    Added {
        /// The index of its device record.
        device: usize,
    },
    /// `PEP_DPM_UNREGISTER_DEVICE` of the processor's handle.
    Removed {
        /// The handle unregistered (`None`: the processor had no live handle; nothing was sent).
        handle: Option<usize>,
        /// The callback's return value.
        returned: bool,
        /// Calls with the stale handle afterwards, each of which must be refused.
        stale_probes: Vec<Probe>,
    },
}

/// A `sleep`, as the processors saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SleepRecord {
    /// The event's index in the scenario.
    pub event: usize,
    /// The state entered.
    pub state: SleepState,
    /// Runtime times of the sleep's start and of the resume, ms.
    pub window_ms: (u32, u32),
    /// `ENTER_SYSTEM_STATE` per processor with a live handle: (processor, returned).
    pub entered: Vec<(u32, bool)>,
    /// `RESUME_FROM_SYSTEM_STATE` likewise.
    pub resumed: Vec<(u32, bool)>,
}
