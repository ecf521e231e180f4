//! The PoFx emulator.
//!
//! It registers the PEP as `PoFxRegisterPluginEx` does, offers it devices, initialises the processors it accepted, runs the scenario's runtime (the OS reading every
//! processor's feedback counters every sample interval, the events, conformance probes) and
//! records everything it observed for the checks.
//!
//! The engine is reached only through the `PEP_INFORMATION` callbacks, with raw pointers to the
//! C structures of [`ppm_engine::abi`], each call made "as" a processor (see
//! [`crate::platform::OnProcessor`]). The runtime runs on one thread or on one thread per
//! processor with a device thread beside them (`[pofx] threads`; see the `runtime` submodule),
//! optionally with nested notifications interrupting every read (`[pofx]
//! nested_notifications`; see [`NestedCall`]).

use std::ffi::c_void;
use std::rc::Rc;
use std::sync::Arc;

use ppm_engine::Pep;
use ppm_engine::abi::{
    BOOLEAN, FALSE, NTSTATUS, PEP_DEVICE_REGISTER_V2, PEP_DEVICE_STARTED, PEP_DPM_DEVICE_STARTED,
    PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE, PEP_DPM_UNREGISTER_DEVICE, PEP_INFORMATION,
    PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE,
    PEP_NOTIFY_PPM_QUERY_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, PEP_NOTIFY_PPM_QUERY_VETO_REASONS,
    PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1, PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1,
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PREPARE_DEVICE, PEP_PROCESSOR_FEEDBACK_COUNTER, PEP_REGISTER_DEVICE_V2,
    PEP_UNREGISTER_DEVICE, PEPHANDLE, PEPHANDLE__, POHANDLE__, PVOID, PepDeviceAccepted, ULONG,
    UNICODE_STRING,
};

use crate::boot::{BootRecord, BootSabotage, SimKernel};
use crate::checks::ReadDigest;
pub use crate::checks::reads::{ReadObserver, TracedInterval, TracedRead};
use crate::cpu::msr;
use crate::machine::Machine;
use crate::platform::{self, MsrRead, OnProcessor, PlatformFaults, PlatformOp, SimPlatform};
use crate::scenario::{CpuKind, Scenario};

mod nested;
mod runtime;

pub use nested::{NestedCall, NestedNotification, NestingSetup, PLATFORM_CALL_NS};
pub use runtime::{HotplugChange, HotplugRecord, SleepRecord};

/// How to run a scenario: what to substitute for the real PEP or platform, to show that the
/// checks catch a broken one. The default runs the real engine on a faithful platform.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The `PEP_INFORMATION` to register instead of the engine's (that of
    /// [`ppm_engine::pep_information`] for [`crate::platform::SimHost`]). A test can wrap the
    /// engine's callbacks in `extern "C"` shims that corrupt their results; inside a callback,
    /// [`ppm_engine::PepHost::instance`] on `SimHost` returns the engine instance (and
    /// `.platform()` the simulated platform, e.g. to read an MSR the PEP should not read).
    pub pep_information: Option<PEP_INFORMATION>,
    /// Faults injected into the platform the engine runs on.
    pub platform_faults: PlatformFaults,
    /// Kernel services that get `DriverEntry`'s unwinding or reporting wrong.
    pub boot_sabotage: BootSabotage,
    /// Called with every runtime read as it is digested (`--trace`, `--plot`).
    pub read_observer: Option<ReadObserver>,
}

/// The device ids of a flavour's non-processor devices, in ACPI-namespace-like order.
#[must_use]
pub const fn default_other_devices(cpu: CpuKind) -> &'static [&'static str] {
    match cpu {
        // Ice Lake and later firmware names the PCI root `\_SB.PC00`.
        CpuKind::IntelHwp => &[
            "\\_SB.PC00",
            "\\_SB.PC00.GFX0",
            "\\_SB.PC00.XHCI",
            "\\_SB.PC00.I2C0",
            "\\_SB.PC00.UA00",
            "\\_SB.PC00.RP01.PXSX",
            "\\_SB.PEPD",
            "\\_SB.PWRB",
            "\\_SB.LID0",
            "\\_SB.BAT0",
            "ACPI\\PNP0C0C",
            "\\_TZ.TZ00",
        ],
        CpuKind::AmdCppc => &[
            "\\_SB.PCI0",
            "\\_SB.PCI0.GP17.VGA",
            "\\_SB.PCI0.GP17.XHC0",
            "\\_SB.I2CA",
            "\\_SB.FUR0",
            "\\_SB.PEP",
            "\\_SB.PWRB",
            "\\_SB.LID",
            "\\_SB.BAT1",
            "\\_TZ.THRM",
        ],
        // Snapdragon-like ACPI tables.
        CpuKind::Arm64 => &[
            "\\_SB.PEP0",
            "\\_SB.GIO0",
            "\\_SB.UFS0",
            "\\_SB.ADSP",
            "\\_SB.GPU0",
            "\\_SB.URS0.USB0",
            "\\_SB.PMIC",
            "\\_SB.PWRB",
            "\\_SB.BAT1",
            "\\_TZ.TZ98",
        ],
        CpuKind::IntelLegacy => &[
            "\\_SB.PCI0",
            "\\_SB.PCI0.GFX0",
            "\\_SB.PCI0.XHC",
            "\\_SB.PCI0.SAT0",
            "\\_SB.PCI0.LPCB.EC0",
            "\\_SB.PCI0.RP01.PXSX",
            "\\_SB.I2C1",
            "\\_SB.UAR1",
            "\\_SB.PWRB",
            "ACPI\\PNP0C0C",
        ],
    }
}

/// DPM notification IDs no header defines: the PEP must refuse them without touching data.
pub const UNDEFINED_DPM_NOTIFICATIONS: [ULONG; 5] = [0x00, 0x29, 0x80, 0xFFFF, 0xFFFF_FFFF];
/// PPM notification IDs no header defines.
pub const UNDEFINED_PPM_NOTIFICATIONS: [ULONG; 5] = [0x00, 0x2C, 0x80, 0xFFFF, 0xFFFF_FFFF];

/// The most feedback counters the emulator asks a PEP to describe (a larger count is
/// reported as inconsistent rather than queried).
pub const MAX_QUERIED_COUNTERS: usize = 64;
/// The byte pattern probe buffers are filled with, to see whether the PEP wrote to them.
const SENTINEL_BYTE: u8 = 0xA5;
const SENTINEL: u64 = u64::from_ne_bytes([SENTINEL_BYTE; 8]);

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

/// The raw counter values of a call's trace, if it read a counter pair: of the pairs it read
/// (a PEP reads a pair again when an SMI or a descheduled VM stretched the first), the one
/// whose nominal read followed its actual read most closely — the pair a PEP keeps.
fn raw_read(trace: &[PlatformOp]) -> Option<RawRead> {
    let reads: Vec<&MsrRead> = trace
        .iter()
        .filter_map(|op| match op {
            PlatformOp::ReadMsr(read) => Some(read),
            _ => None,
        })
        .collect();
    let mut best: Option<(u64, RawRead)> = None;
    for (position, actual) in reads.iter().enumerate() {
        let Some(partner) = nominal_partner(actual.msr) else { continue };
        let Some(nominal) = reads.iter().skip(position + 1).find(|read| read.msr == partner) else {
            continue;
        };
        let (Some(actual_value), Some(nominal_value)) = (actual.value, nominal.value) else {
            continue;
        };
        let gap = nominal.at_ns.saturating_sub(actual.at_ns);
        if best.is_none_or(|(best_gap, _)| gap < best_gap) {
            let raw =
                RawRead { actual: actual_value, nominal: nominal_value, at_ns: nominal.at_ns };
            best = Some((gap, raw));
        }
    }
    best.map(|(_, raw)| raw)
}

/// Everything observed about one processor.
#[derive(Clone, Debug)]
pub struct ProcessorRecord {
    /// Global index.
    pub index: u32,
    /// The device id offered.
    pub device_id: String,
    /// The handle the PEP returned, if it accepted the processor.
    pub handle: Option<usize>,
    /// `QUERY_CAPABILITIES`: returned, answer.
    pub capabilities: Option<(bool, PEP_PPM_QUERY_CAPABILITIES)>,
    /// `QUERY_FEEDBACK_COUNTERS`: returned, descriptors (sent when the count is 1..=64).
    pub counters: Option<(bool, Vec<PEP_PROCESSOR_FEEDBACK_COUNTER>)>,
    /// `QUERY_PERF_CAPABILITIES`: returned, answer.
    pub perf: Option<(bool, PEP_PPM_QUERY_PERF_CAPABILITIES)>,
    /// `QUERY_DOMAIN_INFO` for the domain `QUERY_PERF_CAPABILITIES` named: returned, answer.
    pub domain: Option<(bool, PEP_PPM_QUERY_DOMAIN_INFO)>,
    /// The runtime loop's reads, digested as they are made (see [`ReadDigest`]).
    pub digest: ReadDigest,
    /// Every handle the PEP issued for the processor, in order (a processor hot-added again
    /// gets a new one).
    pub issued_handles: Vec<usize>,
    /// Whether the processor was hot-removed (and not added again).
    pub removed: bool,
}

impl ProcessorRecord {
    /// Folds the reads added to the digest so far (see [`ReadDigest::fold`]).
    pub fn fold_reads(&mut self, machine: &Machine) {
        let capabilities = self
            .capabilities
            .map(|(_, answer)| (answer.FeedbackCounterCount, answer.IdleStateCount));
        let frequency_rate = self.described_counters().first().map(|counter| counter.NominalRate);
        self.digest.fold(machine, self.index, capabilities, frequency_rate);
    }

    /// The feedback counters the OS uses: those `QUERY_FEEDBACK_COUNTERS` described.
    #[must_use]
    pub fn described_counters(&self) -> &[PEP_PROCESSOR_FEEDBACK_COUNTER] {
        match &self.counters {
            Some((true, descriptors)) => descriptors,
            _ => &[],
        }
    }
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

/// Everything a run observed.
#[derive(Clone, Debug)]
pub struct Observations {
    /// Registration (`status`: what `PoFx`'s checks of the structures returned).
    pub registration: RegistrationRecord,
    /// `DriverEntry`, as the emulated kernel services saw it.
    pub boot: Option<BootRecord>,
    /// Every device offered, in order.
    pub devices: Vec<DeviceRecord>,
    /// Per processor.
    pub processors: Vec<ProcessorRecord>,
    /// The conformance probes.
    pub probes: Vec<Probe>,
    /// `PEP_DPM_UNREGISTER_DEVICE` at the end: processor, return value.
    pub unregistered: Option<(u32, bool)>,
    /// MSR reads in all.
    pub msr_reads: usize,
    /// MSR reads CPUID did not announce (the first 32).
    pub unannounced_msr_reads: Vec<MsrRead>,
    /// How many MSR reads CPUID did not announce.
    pub unannounced_msr_read_count: usize,
    /// The engine's own account.
    pub engine: EngineSummary,
    /// Clock times of the runtime's first and last samples, ns.
    pub runtime_ns: (u64, u64),
    /// The `hot-add`/`hot-remove` events, in the order they happened.
    pub hotplug: Vec<HotplugRecord>,
    /// The `sleep` events, in the order they happened.
    pub sleeps: Vec<SleepRecord>,
    /// The processor threads the runtime used (0: one thread did everything).
    pub processor_threads: u32,
    /// The boot queries sent once all processors registered, in order.
    pub boot_queries: Vec<BootQuery>,
}

/// One boot-time PPM query (NULL handle) and what the PEP answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootQuery {
    /// The notification.
    pub notification: ULONG,
    /// Its name.
    pub name: &'static str,
    /// The callback's return value.
    pub returned: bool,
    /// The count the PEP wrote (`None`: no payload, or the sentinel left untouched).
    pub count: Option<u32>,
}

/// MSR reads taken note of, per thread, merged into the [`Observations`] afterwards.
#[derive(Debug, Default)]
struct Tally {
    msr_reads: usize,
    unannounced: Vec<MsrRead>,
    unannounced_count: usize,
}

impl Tally {
    fn absorb(&mut self, trace: &[PlatformOp]) {
        absorb_into(&mut self.msr_reads, &mut self.unannounced, &mut self.unannounced_count, trace);
    }

    fn merge(&mut self, other: Self) {
        self.msr_reads += other.msr_reads;
        self.unannounced_count += other.unannounced_count;
        let room = 32_usize.saturating_sub(self.unannounced.len());
        self.unannounced.extend(other.unannounced.into_iter().take(room));
    }

    fn merge_into(self, observations: &mut Observations) {
        let mut total = Self {
            msr_reads: observations.msr_reads,
            unannounced: std::mem::take(&mut observations.unannounced_msr_reads),
            unannounced_count: observations.unannounced_msr_read_count,
        };
        total.merge(self);
        observations.msr_reads = total.msr_reads;
        observations.unannounced_msr_reads = total.unannounced;
        observations.unannounced_msr_read_count = total.unannounced_count;
    }
}

type DpmCallback = unsafe extern "C" fn(ULONG, PVOID) -> BOOLEAN;
type PpmCallback = unsafe extern "C" fn(PEPHANDLE, ULONG, PVOID) -> BOOLEAN;

/// Payloads of notifications that hold no pointers: the notification IDs they belong to.
trait Payload {
    /// The DPM notifications whose documented payload this is.
    const DPM: &'static [ULONG];
    /// The PPM notifications whose documented payload this is.
    const PPM: &'static [ULONG];
}

impl Payload for PEP_UNREGISTER_DEVICE {
    const DPM: &'static [ULONG] = &[PEP_DPM_UNREGISTER_DEVICE];
    const PPM: &'static [ULONG] = &[];
}
impl Payload for PEP_DEVICE_STARTED {
    const DPM: &'static [ULONG] = &[PEP_DPM_DEVICE_STARTED];
    const PPM: &'static [ULONG] = &[];
}
impl Payload for PEP_PPM_QUERY_CAPABILITIES {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_CAPABILITIES];
}
impl Payload for CountersBuffer {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS];
}
impl Payload for PEP_PPM_FEEDBACK_READ {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_FEEDBACK_READ];
}
impl Payload for PEP_PPM_QUERY_PERF_CAPABILITIES {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES];
}
impl Payload for PEP_PPM_QUERY_DOMAIN_INFO {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO];
}
/// The one-count payloads (`PEP_PPM_QUERY_PLATFORM_STATES`, `PEP_PPM_QUERY_VETO_REASONS`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CountPayload {
    /// The count.
    pub count: u32,
}
const _: () = assert!(
    size_of::<CountPayload>() == size_of::<ppm_engine::abi::PEP_PPM_QUERY_PLATFORM_STATES>()
        && size_of::<CountPayload>() == size_of::<ppm_engine::abi::PEP_PPM_QUERY_VETO_REASONS>()
);
impl Payload for CountPayload {
    const DPM: &'static [ULONG] = &[];
    const PPM: &'static [ULONG] = &[
        PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES,
        PEP_NOTIFY_PPM_QUERY_VETO_REASONS,
        PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES,
    ];
}
impl Payload for Sentinel {
    const DPM: &'static [ULONG] = &UNDEFINED_DPM_NOTIFICATIONS;
    const PPM: &'static [ULONG] = &UNDEFINED_PPM_NOTIFICATIONS;
}

/// A `PEP_PPM_QUERY_FEEDBACK_COUNTERS` with room for [`MAX_QUERIED_COUNTERS`] + 1 descriptors
/// (the C structure's `Counters[ANYSIZE_ARRAY]`): same layout, larger array.
#[repr(C)]
#[derive(Clone, Copy)]
struct CountersBuffer {
    count: ULONG,
    counters: [PEP_PROCESSOR_FEEDBACK_COUNTER; MAX_QUERIED_COUNTERS + 1],
}

impl CountersBuffer {
    const fn new(count: ULONG) -> Self {
        let mut sentinel = PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed();
        sentinel._bitfield_1 = u32::from_ne_bytes([SENTINEL_BYTE; 4]);
        sentinel.NominalRate = u32::from_ne_bytes([SENTINEL_BYTE; 4]);
        Self { count, counters: [sentinel; MAX_QUERIED_COUNTERS + 1] }
    }

    fn untouched(&self, count: ULONG) -> bool {
        let fresh = Self::new(count);
        self.count == count
            && self.counters.iter().zip(fresh.counters.iter()).all(|(now, before)| {
                now._bitfield_1 == before._bitfield_1 && now.NominalRate == before.NominalRate
            })
    }
}

/// A buffer of [`SENTINEL_BYTE`]s, passed with undefined notification IDs.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
struct Sentinel([u64; 16]);

impl Sentinel {
    const FRESH: Self = Self([SENTINEL; 16]);
}

const fn feedback_read(counter_index: ULONG) -> PEP_PPM_FEEDBACK_READ {
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
const fn read_counts(read: &PEP_PPM_FEEDBACK_READ) -> (u64, u64) {
    // SAFETY: both union members are plain integers covering the same bytes, so every bit
    // pattern is a valid `NominalCount`/`ActualCount` pair.
    let counts = unsafe { read.__bindgen_anon_1.__bindgen_anon_1 };
    (counts.NominalCount, counts.ActualCount)
}

const fn handle(address: usize) -> PEPHANDLE {
    std::ptr::without_provenance_mut::<PEPHANDLE__>(address)
}

fn data<T>(payload: Option<&mut T>) -> PVOID {
    payload.map_or(std::ptr::null_mut(), |payload| std::ptr::from_mut(payload).cast::<c_void>())
}

fn utf16(text: &str) -> Vec<u16> {
    text.encode_utf16().collect()
}

/// The engine instance and the callbacks registered for it.
struct Engine {
    pep: Box<Pep<SimPlatform>>,
    dpm: DpmCallback,
    ppm: PpmCallback,
}

impl Engine {
    /// Calls the DPM callback as `processor`, recording the platform operations.
    ///
    /// # Safety
    /// `data` is NULL or points to the payload PoFx documents for `notification` (or, for an
    /// undefined notification, to a buffer of at least 128 bytes), valid for the call.
    unsafe fn dpm_raw(
        &self,
        processor: u32,
        notification: ULONG,
        data: PVOID,
    ) -> (bool, Vec<PlatformOp>) {
        let _on = OnProcessor::enter(Some(&self.pep), processor);
        platform::begin_trace();
        // SAFETY: the callback was registered by the PEP for exactly this use; `data` meets
        // the callback's contract (this function's precondition).
        let returned = unsafe { (self.dpm)(notification, data) };
        (returned != FALSE, platform::take_trace())
    }

    /// Calls the PPM callback as `processor`, recording the platform operations.
    ///
    /// # Safety
    /// As [`Self::dpm_raw`].
    unsafe fn ppm_raw(
        &self,
        processor: u32,
        handle_value: usize,
        notification: ULONG,
        data: PVOID,
    ) -> (bool, Vec<PlatformOp>) {
        let _on = OnProcessor::enter(Some(&self.pep), processor);
        platform::begin_trace();
        // SAFETY: as in `dpm_raw`; the handle may be anything (the PEP validates it).
        let returned = unsafe { (self.ppm)(handle(handle_value), notification, data) };
        (returned != FALSE, platform::take_trace())
    }

    /// A DPM notification whose payload holds no pointers (or NULL).
    fn dpm<T: Payload>(
        &self,
        processor: u32,
        notification: ULONG,
        payload: Option<&mut T>,
    ) -> (bool, Vec<PlatformOp>) {
        assert!(
            payload.is_none() || T::DPM.contains(&notification),
            "payload type does not match DPM {notification:#x}"
        );
        // SAFETY: `payload` is NULL or a live, exclusive `T`, the documented payload of
        // `notification` (asserted above; `Sentinel` only with undefined IDs).
        unsafe { self.dpm_raw(processor, notification, data(payload)) }
    }

    /// A PPM notification whose payload holds no pointers (or NULL).
    fn ppm<T: Payload>(
        &self,
        processor: u32,
        handle_value: usize,
        notification: ULONG,
        payload: Option<&mut T>,
    ) -> (bool, Vec<PlatformOp>) {
        assert!(
            payload.is_none() || T::PPM.contains(&notification),
            "payload type does not match PPM {notification:#x}"
        );
        // SAFETY: as in `dpm`; a `CountersBuffer` holds MAX_QUERIED_COUNTERS + 1 descriptors
        // and callers never set its `Count` higher.
        unsafe { self.ppm_raw(processor, handle_value, notification, data(payload)) }
    }

    /// `PEP_DPM_PREPARE_DEVICE` for `id` (`None`: a NULL `DeviceId`): returned, accepted.
    fn prepare(&self, id: Option<&[u16]>) -> (bool, bool, Vec<PlatformOp>) {
        let mut buffer = id.map(<[u16]>::to_vec);
        let mut string = buffer.as_mut().map(|units| unicode_string(units));
        let mut request = PEP_PREPARE_DEVICE::zeroed();
        request.DeviceId = string
            .as_mut()
            .map_or(std::ptr::null(), |string| std::ptr::from_mut(string).cast_const());
        // SAFETY: `request` is a PEP_PREPARE_DEVICE whose DeviceId is NULL or points to a
        // UNICODE_STRING over `buffer`; all three live until the call returns.
        let (returned, trace) =
            unsafe { self.dpm_raw(0, PEP_DPM_PREPARE_DEVICE, data(Some(&mut request))) };
        (returned, request.DeviceAccepted != FALSE, trace)
    }

    /// `PEP_DPM_REGISTER_DEVICE` for `id`, with PoFx's handle `kernel_handle` and one
    /// component.
    fn register(&self, id: &[u16], kernel_handle: usize) -> (RegisterRecord, Vec<PlatformOp>) {
        let mut buffer = id.to_vec();
        let mut string = unicode_string(&mut buffer);
        let mut component = ppm_engine::abi::PEP_COMPONENT_V2::zeroed();
        let mut register = PEP_DEVICE_REGISTER_V2::zeroed();
        register.ComponentCount = 1;
        register.Components = [std::ptr::from_mut(&mut component)];
        let mut request = PEP_REGISTER_DEVICE_V2::zeroed();
        request.DeviceId = std::ptr::from_mut(&mut string).cast_const();
        request.KernelHandle = std::ptr::without_provenance_mut::<POHANDLE__>(kernel_handle);
        request.Register = std::ptr::from_mut(&mut register);
        request.DeviceHandle = std::ptr::null_mut();
        // SAFETY: `request` is a PEP_REGISTER_DEVICE_V2 whose pointers (the id string and its
        // buffer, the one-component register block) all live until the call returns.
        let (returned, trace) =
            unsafe { self.dpm_raw(0, PEP_DPM_REGISTER_DEVICE, data(Some(&mut request))) };
        (
            RegisterRecord {
                returned,
                acceptance: request.DeviceAccepted,
                handle: request.DeviceHandle.addr(),
            },
            trace,
        )
    }
}

fn unicode_string(units: &mut [u16]) -> UNICODE_STRING {
    let bytes = u16::try_from(units.len() * 2).unwrap_or(0xFFFE);
    UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: units.as_mut_ptr() }
}

/// What happens at one instant of the runtime, in order: the power-ons and resumes of sleeps
/// ending then, the OS's reads, then the probes (once, after the first reads), then the events
/// in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    /// The processors are powered on again after `sleep` event `n`.
    PowerOn(usize),
    /// `RESUME_FROM_SYSTEM_STATE` of `sleep` event `n`.
    Resume(usize),
    Sample,
    Probes,
    Event(usize),
    EndFault(usize),
    /// The other PMU owner of a `pmu-reprogrammed` event re-enables the fixed counters.
    PmuResume(usize),
}

/// The emulator for one run.
pub struct Emulator<'a> {
    scenario: &'a Scenario,
    machine: Arc<Machine>,
    // Dropped before `kernel`: the PEP refers to the processor table in the kernel's pool.
    engine: Option<Engine>,
    observations: Observations,
    /// Called with every runtime read as it is digested.
    read_observer: Option<ReadObserver>,
    /// Owns the pool blocks the registered PEP uses (its processor table) until the run ends.
    #[allow(dead_code, reason = "held for its pool, freed when the emulator is dropped")]
    kernel: SimKernel<'a>,
}

impl<'a> Emulator<'a> {
    /// Builds the machine and boots the PEP as Windows does: `DriverEntry` through the
    /// engine's sequence over the emulated kernel services ([`crate::boot`]), on processor 0.
    #[must_use]
    pub fn new(scenario: &'a Scenario, options: &RunOptions) -> Self {
        let machine = Arc::new(Machine::new(scenario));
        let platform = SimPlatform::new(Arc::clone(&machine), options.platform_faults.clone());
        let mut observations = Observations {
            registration: RegistrationRecord {
                version: 0,
                size: 0,
                device_callback: false,
                processor_callback: false,
                status: 0,
                injected: None,
            },
            boot: None,
            devices: Vec::new(),
            processors: Vec::new(),
            probes: Vec::new(),
            boot_queries: Vec::new(),
            unregistered: None,
            msr_reads: 0,
            unannounced_msr_reads: Vec::new(),
            unannounced_msr_read_count: 0,
            engine: EngineSummary::default(),
            runtime_ns: (0, 0),
            hotplug: Vec::new(),
            sleeps: Vec::new(),
            processor_threads: 0,
        };
        let kernel =
            SimKernel::new(scenario, platform, options.pep_information, options.boot_sabotage);
        platform::begin_trace();
        let (boot, pep) = kernel.boot();
        observations.absorb(&platform::take_trace());
        if let Some(registration) = boot.registration {
            let info = registration.information;
            observations.registration = RegistrationRecord {
                version: info.Version,
                size: info.Size,
                device_callback: info.AcceptDeviceNotification.is_some(),
                processor_callback: info.AcceptProcessorNotification.is_some(),
                status: registration.checked,
                injected: (registration.status != registration.checked)
                    .then_some(registration.status),
            };
        }
        if let Some(pep) = &pep {
            observations.engine = summarise(pep);
        }
        let engine = match (pep, kernel.registered_information()) {
            (Some(pep), Some(info)) => {
                match (info.AcceptDeviceNotification, info.AcceptProcessorNotification) {
                    (Some(dpm), Some(ppm)) => Some(Engine { pep, dpm, ppm }),
                    _ => None,
                }
            }
            _ => None,
        };
        observations.boot = Some(boot);
        Self {
            scenario,
            machine,
            engine,
            observations,
            read_observer: options.read_observer.clone(),
            kernel,
        }
    }

    /// Runs the scenario and returns what was observed, with the machine (after a failed
    /// registration nothing runs: the observations hold the registration and what the engine
    /// detected at initialisation).
    #[must_use]
    pub fn run(mut self) -> (Observations, Arc<Machine>) {
        if let Some(engine) = self.engine.take() {
            self.offer_devices(&engine);
            self.initialise_processors(&engine);
            self.boot_queries(&engine);
            self.start_devices(&engine);
            self.runtime(&engine);
            self.unregister_last(&engine);
            self.observations.engine = summarise(&engine.pep);
        }
        (self.observations, self.machine)
    }

    const fn processor_count(&self) -> u32 {
        self.scenario.platform.processors
    }

    /// PREPARE every device, processors interleaved with the others, then REGISTER the ones
    /// accepted.
    fn offer_devices(&mut self, engine: &Engine) {
        let processors = self.processor_count();
        let others: Vec<String> =
            self.scenario.platform.other_devices.clone().unwrap_or_else(|| {
                default_other_devices(self.scenario.platform.cpu)
                    .iter()
                    .map(|id| (*id).to_owned())
                    .collect()
            });
        let style = self.scenario.platform.device_id_style;
        // Other device k goes before processor ⌊(k+1)(n+1)/(m+1)⌋ (after the last when = n).
        let slot_of = |k: usize| (k + 1) * (processors as usize + 1) / (others.len() + 1);
        let mut order: Vec<(String, Option<u32>)> = Vec::new();
        let mut next_other = 0;
        for index in 0..=processors {
            while next_other < others.len() && slot_of(next_other) <= index as usize {
                order.push((others[next_other].clone(), None));
                next_other += 1;
            }
            // Processors hot-added later are not offered at boot.
            if index < processors && self.scenario.initially_present(index) {
                order.push((style.device_id(index), Some(index)));
            }
        }
        self.observations.processors = (0..processors)
            .map(|index| ProcessorRecord {
                index,
                device_id: style.device_id(index),
                handle: None,
                capabilities: None,
                counters: None,
                perf: None,
                domain: None,
                digest: ReadDigest::new(self.scenario, self.read_observer.clone()),
                issued_handles: Vec::new(),
                removed: false,
            })
            .collect();
        for (id, processor) in order {
            let (returned, accepted, trace) = engine.prepare(Some(&utf16(&id)));
            self.observations.absorb(&trace);
            self.observations.devices.push(DeviceRecord {
                id,
                processor,
                prepare_returned: returned,
                accepted,
                registered: None,
                started: None,
            });
        }
        for (number, device) in self.observations.devices.iter_mut().enumerate() {
            if !(device.prepare_returned && device.accepted) {
                continue;
            }
            let kernel_handle = 0xFFFF_C000_0000_0000 + (number + 1) * 0x100;
            let (record, trace) = engine.register(&utf16(&device.id), kernel_handle);
            device.registered = Some(record);
            if let (Some(index), Some(live)) = (device.processor, record.live_handle())
                && let Some(processor) = self.observations.processors.get_mut(index as usize)
            {
                processor.handle = Some(live);
                processor.issued_handles.push(live);
            }
            absorb_into(
                &mut self.observations.msr_reads,
                &mut self.observations.unannounced_msr_reads,
                &mut self.observations.unannounced_msr_read_count,
                &trace,
            );
        }
    }

    /// Per registered processor, as that processor: `QUERY_CAPABILITIES`, `QUERY_FEEDBACK_COUNTERS`
    /// (when counters are announced), `QUERY_PERF_CAPABILITIES`, `QUERY_DOMAIN_INFO`.
    fn initialise_processors(&mut self, engine: &Engine) {
        let mut tally = Tally::default();
        for record in &mut self.observations.processors {
            if record.handle.is_some() {
                initialise_processor(engine, record, &mut tally);
            }
        }
        tally.merge_into(&mut self.observations);
    }

    /// The queries PoFx documents once all processors registered, before their devices
    /// start, with a NULL handle: `QUERY_PLATFORM_STATES` ("sent once upon boot"),
    /// `QUERY_VETO_REASONS` (at processor initialisation) and `ENUMERATE_BOOT_VETOES` (no
    /// payload; before the first idle entry). Count buffers start at a sentinel, so an
    /// untouched one shows.
    fn boot_queries(&mut self, engine: &Engine) {
        let mut count = |notification, name| {
            let mut answer = CountPayload { count: u32::from_ne_bytes([SENTINEL_BYTE; 4]) };
            let (returned, trace) = engine.ppm(0, 0, notification, Some(&mut answer));
            self.observations.absorb(&trace);
            let written =
                (answer.count != u32::from_ne_bytes([SENTINEL_BYTE; 4])).then_some(answer.count);
            self.observations.boot_queries.push(BootQuery {
                notification,
                name,
                returned,
                count: written,
            });
        };
        count(PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, "QUERY_PLATFORM_STATES");
        count(PEP_NOTIFY_PPM_QUERY_VETO_REASONS, "QUERY_VETO_REASONS");
        let (returned, trace) =
            engine.ppm::<CountPayload>(0, 0, PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, None);
        self.observations.absorb(&trace);
        self.observations.boot_queries.push(BootQuery {
            notification: PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES,
            name: "ENUMERATE_BOOT_VETOES",
            returned,
            count: None,
        });
    }

    /// `DEVICE_STARTED` for every registered device.
    fn start_devices(&mut self, engine: &Engine) {
        for number in 0..self.observations.devices.len() {
            let Some(handle_value) = self.observations.devices[number]
                .registered
                .and_then(|record| record.live_handle())
            else {
                continue;
            };
            let mut started = PEP_DEVICE_STARTED { DeviceHandle: handle(handle_value) };
            let (returned, trace) = engine.dpm(0, PEP_DPM_DEVICE_STARTED, Some(&mut started));
            self.observations.absorb(&trace);
            self.observations.devices[number].started = Some(returned);
        }
    }

    /// The runtime: samples every `sample_interval_ms` from 0 to `duration_ms`, the probes
    /// after the first sample, the events at their times.
    fn runtime(&mut self, engine: &Engine) {
        self.machine.start_runtime();
        let origin = self.machine.now_ns();
        let mut schedule = self.schedule();
        // Time, then action: the order `runtime::items` expands it in.
        schedule.sort();
        let last_sample = schedule
            .iter()
            .rev()
            .find(|(_, action)| *action == Action::Sample)
            .map_or(0, |(at, _)| *at);
        self.observations.runtime_ns = (origin, origin + last_sample);
        self.observations.processor_threads =
            self.scenario.pofx.threads.processor_threads(self.processor_count());
        self.run_items(engine, origin, &schedule);
    }

    fn probe(
        &mut self,
        kind: ProbeKind,
        what: String,
        returned: bool,
        untouched: bool,
        trace: &[PlatformOp],
    ) {
        self.observations.absorb(trace);
        self.observations.probes.push(Probe { kind, what, returned, untouched });
    }

    /// A `FEEDBACK_READ` that must be refused (and, where the kind requires, leave its buffer alone).
    fn refused_read(
        &mut self,
        engine: &Engine,
        kind: ProbeKind,
        on: u32,
        handle_value: usize,
        counter_index: ULONG,
        what: String,
    ) {
        let (probe, trace) =
            refused_read_probe(engine, kind, on, handle_value, counter_index, what);
        self.observations.absorb(&trace);
        self.observations.probes.push(probe);
    }

    /// What the conformance probes need to know: the live processors (index, handle,
    /// counters described) among `records`, every handle issued so far, and the first live
    /// processor's `FeedbackCounterCount`.
    fn probe_inputs(&self, records: &[ProcessorRecord]) -> ProbeInputs {
        let live: Vec<(u32, usize, usize)> = records
            .iter()
            .filter_map(|record| {
                record
                    .handle
                    .map(|handle| (record.index, handle, record.described_counters().len()))
            })
            .collect();
        let issued: Vec<usize> = self
            .observations
            .devices
            .iter()
            .filter_map(|d| d.registered.map(|r| r.handle))
            .collect();
        let first_described = live
            .first()
            .and_then(|(index, _, _)| records.iter().find(|record| record.index == *index))
            .map_or(0, |record| {
                record.capabilities.map_or(0, |(_, capabilities)| capabilities.FeedbackCounterCount)
            });
        ProbeInputs { live, issued, first_described }
    }

    /// The conformance probes, run once after the first sample (every handle bound).
    fn run_probes(&mut self, engine: &Engine, inputs: &ProbeInputs) {
        self.dpm_probes(engine);
        self.ppm_probes(engine, inputs.live.first().copied(), inputs.first_described);
        self.forged_handle_probes(engine, &inputs.issued);
        self.counter_probes(engine, &inputs.live);
    }

    /// Undefined DPM notifications and NULL DPM data.
    fn dpm_probes(&mut self, engine: &Engine) {
        for notification in UNDEFINED_DPM_NOTIFICATIONS {
            let mut buffer = Sentinel::FRESH;
            let (returned, trace) = engine.dpm(0, notification, Some(&mut buffer));
            self.probe(
                ProbeKind::DpmUnknown,
                format!("DPM notification {notification:#x}"),
                returned,
                buffer == Sentinel::FRESH,
                &trace,
            );
        }
        for notification in [
            PEP_DPM_PREPARE_DEVICE,
            PEP_DPM_REGISTER_DEVICE,
            PEP_DPM_UNREGISTER_DEVICE,
            PEP_DPM_DEVICE_STARTED,
        ] {
            let (returned, trace) = engine.dpm::<Sentinel>(0, notification, None);
            self.probe(
                ProbeKind::DpmUnknown,
                format!("DPM notification {notification:#x} with NULL data"),
                returned,
                true,
                &trace,
            );
        }
        let (returned, accepted, trace) = engine.prepare(None);
        self.probe(
            ProbeKind::DpmUnknown,
            "PREPARE_DEVICE with a NULL DeviceId".to_owned(),
            returned && accepted,
            true,
            &trace,
        );
    }

    /// Undefined PPM notifications, NULL PPM data and a wrong `Count`, with the first live
    /// processor (index, handle, counters) and its `FeedbackCounterCount` (`described`).
    fn ppm_probes(
        &mut self,
        engine: &Engine,
        first: Option<(u32, usize, usize)>,
        described: ULONG,
    ) {
        for notification in UNDEFINED_PPM_NOTIFICATIONS {
            let handles = [Some(0), first.map(|(_, handle, _)| handle)];
            for handle_value in handles.into_iter().flatten() {
                let on = first.map_or(0, |(index, _, _)| index);
                let mut buffer = Sentinel::FRESH;
                let (returned, trace) =
                    engine.ppm(on, handle_value, notification, Some(&mut buffer));
                let which = if handle_value == 0 { "NULL" } else { "a live" };
                self.probe(
                    ProbeKind::PpmUnknown,
                    format!("PPM notification {notification:#x} with {which} handle"),
                    returned,
                    buffer == Sentinel::FRESH,
                    &trace,
                );
            }
        }
        if let Some((index, handle_value, _)) = first {
            for (notification, name) in [
                (PEP_NOTIFY_PPM_QUERY_CAPABILITIES, "QUERY_CAPABILITIES"),
                (PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, "QUERY_FEEDBACK_COUNTERS"),
                (PEP_NOTIFY_PPM_FEEDBACK_READ, "FEEDBACK_READ"),
                (PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, "QUERY_PERF_CAPABILITIES"),
                (PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, "QUERY_DOMAIN_INFO"),
                (PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, "ENTER_SYSTEM_STATE"),
                (PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, "RESUME_FROM_SYSTEM_STATE"),
                (PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, "PERF_CHECK_COMPLETE"),
            ] {
                let (returned, trace) =
                    engine.ppm::<Sentinel>(index, handle_value, notification, None);
                self.probe(
                    ProbeKind::PpmNullData,
                    format!("{name} with NULL data"),
                    returned,
                    true,
                    &trace,
                );
            }
            // QUERY_FEEDBACK_COUNTERS with a Count other than FeedbackCounterCount.
            let wrong_counts: Vec<ULONG> =
                if described == 0 { vec![1] } else { vec![0, described.saturating_add(1)] };
            for wrong in wrong_counts
                .into_iter()
                .filter(|wrong| (*wrong as usize) <= MAX_QUERIED_COUNTERS + 1)
            {
                let mut buffer = CountersBuffer::new(wrong);
                let (returned, trace) = engine.ppm(
                    index,
                    handle_value,
                    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
                    Some(&mut buffer),
                );
                let untouched = buffer.untouched(wrong);
                self.probe(ProbeKind::WrongCount, format!("QUERY_FEEDBACK_COUNTERS with Count {wrong} (FeedbackCounterCount {described})"), returned, untouched, &trace);
            }
        }
    }

    /// Handles the PEP never issued: near-misses of issued ones and values never issued.
    fn forged_handle_probes(&mut self, engine: &Engine, issued: &[usize]) {
        let mut forged: Vec<usize> = vec![
            1,
            0xDEAD_BEEF,
            usize::MAX,
            0x8000_0000_0000_0000,
            std::ptr::from_ref(&issued).addr(),
        ];
        for &issued_handle in issued.iter().take(4) {
            forged.extend([
                issued_handle.wrapping_add(1 << 32),
                issued_handle.wrapping_sub(1 << 32),
                issued_handle ^ (1 << 63),
                issued_handle ^ 0xFFFF_0000,
                !issued_handle,
            ]);
        }
        forged.retain(|value| *value != 0 && !issued.contains(value));
        forged.sort_unstable();
        forged.dedup();
        let processor_count = self.processor_count();
        for (number, forged_handle) in forged.into_iter().enumerate() {
            let on = u32::try_from(number).unwrap_or(0) % processor_count;
            self.refused_read(
                engine,
                ProbeKind::ForgedHandle,
                on,
                forged_handle,
                0,
                format!("FEEDBACK_READ with forged handle {forged_handle:#x}"),
            );
            let mut capabilities = capabilities_sentinel();
            let (returned, trace) = engine.ppm(
                on,
                forged_handle,
                PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
                Some(&mut capabilities),
            );
            let untouched = capabilities_untouched(&capabilities);
            self.probe(
                ProbeKind::ForgedHandle,
                format!("QUERY_CAPABILITIES with forged handle {forged_handle:#x}"),
                returned,
                untouched,
                &trace,
            );
            let mut perf = perf_sentinel();
            let (returned, trace) = engine.ppm(
                on,
                forged_handle,
                PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
                Some(&mut perf),
            );
            let untouched = perf_untouched(&perf);
            self.probe(
                ProbeKind::ForgedHandle,
                format!("QUERY_PERF_CAPABILITIES with forged handle {forged_handle:#x}"),
                returned,
                untouched,
                &trace,
            );
        }
    }

    /// Per live processor: out-of-range indexes (or any index without counters) and a read on
    /// the wrong processor.
    fn counter_probes(&mut self, engine: &Engine, live: &[(u32, usize, usize)]) {
        let processor_count = self.processor_count();
        for (index, handle_value, count) in live {
            let (index, handle_value, count) =
                (*index, *handle_value, u32::try_from(*count).unwrap_or(u32::MAX));
            if count == 0 {
                self.refused_read(
                    engine,
                    ProbeKind::NoCounters,
                    index,
                    handle_value,
                    0,
                    format!(
                        "FEEDBACK_READ of counter 0 of processor {index}, which describes none"
                    ),
                );
                continue;
            }
            for counter_index in [count, count.saturating_add(7), u32::MAX] {
                self.refused_read(engine, ProbeKind::IndexOutOfRange, index, handle_value, counter_index, format!("FEEDBACK_READ of counter {counter_index} of processor {index} ({count} described)"));
            }
            if processor_count > 1 {
                let on = (index + 1) % processor_count;
                self.refused_read(
                    engine,
                    ProbeKind::WrongProcessor,
                    on,
                    handle_value,
                    0,
                    format!("FEEDBACK_READ of processor {index}'s counter on processor {on}"),
                );
            }
        }
    }

    /// Unregisters the last processor, then checks that its handle is stale.
    fn unregister_last(&mut self, engine: &Engine) {
        let Some((index, handle_value)) = self
            .observations
            .processors
            .iter()
            .rev()
            .find_map(|record| record.handle.map(|handle| (record.index, handle)))
        else {
            return;
        };
        let mut request = PEP_UNREGISTER_DEVICE { DeviceHandle: handle(handle_value) };
        let (returned, trace) = engine.dpm(0, PEP_DPM_UNREGISTER_DEVICE, Some(&mut request));
        self.observations.absorb(&trace);
        self.observations.unregistered = Some((index, returned));
        for (probe, trace) in stale_handle_probes(engine, index, handle_value) {
            self.observations.absorb(&trace);
            self.observations.probes.push(probe);
        }
    }
}

/// What the conformance probes need (see `Emulator::probe_inputs`).
#[derive(Clone, Debug)]
struct ProbeInputs {
    live: Vec<(u32, usize, usize)>,
    issued: Vec<usize>,
    first_described: ULONG,
}

/// A `FEEDBACK_READ` on processor `on` that must be refused (and, where the kind requires,
/// leave its buffer alone).
fn refused_read_probe(
    engine: &Engine,
    kind: ProbeKind,
    on: u32,
    handle_value: usize,
    counter_index: ULONG,
    what: String,
) -> (Probe, Vec<PlatformOp>) {
    let mut read = feedback_read(counter_index);
    let (returned, trace) =
        engine.ppm(on, handle_value, PEP_NOTIFY_PPM_FEEDBACK_READ, Some(&mut read));
    let untouched = read_counts(&read) == (SENTINEL, SENTINEL);
    let untouched = untouched || !kind.requires_untouched_data();
    (Probe { kind, what, returned, untouched }, trace)
}

/// After processor `index`'s handle was unregistered: a `FEEDBACK_READ` and a
/// `QUERY_CAPABILITIES` with it as the processor, and a `DEVICE_STARTED` with it, each of which
/// must be refused.
fn stale_handle_probes(
    engine: &Engine,
    index: u32,
    handle_value: usize,
) -> Vec<(Probe, Vec<PlatformOp>)> {
    let mut probes = vec![refused_read_probe(
        engine,
        ProbeKind::StaleHandle,
        index,
        handle_value,
        0,
        format!("FEEDBACK_READ with processor {index}'s handle after UNREGISTER"),
    )];
    let mut capabilities = capabilities_sentinel();
    let (returned, trace) =
        engine.ppm(index, handle_value, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, Some(&mut capabilities));
    let untouched = capabilities_untouched(&capabilities);
    probes.push((
        Probe {
            kind: ProbeKind::StaleHandle,
            what: format!("QUERY_CAPABILITIES with processor {index}'s handle after UNREGISTER"),
            returned,
            untouched,
        },
        trace,
    ));
    let mut started = PEP_DEVICE_STARTED { DeviceHandle: handle(handle_value) };
    let (returned, trace) = engine.dpm(0, PEP_DPM_DEVICE_STARTED, Some(&mut started));
    probes.push((
        Probe {
            kind: ProbeKind::StaleHandle,
            what: format!("DEVICE_STARTED with processor {index}'s handle after UNREGISTER"),
            returned,
            untouched: true,
        },
        trace,
    ));
    probes
}

/// As processor `record.index`, with its live handle: `QUERY_CAPABILITIES`,
/// `QUERY_FEEDBACK_COUNTERS` (when counters are announced), `QUERY_PERF_CAPABILITIES`,
/// `QUERY_DOMAIN_INFO` — at boot and when the processor is hot-added.
fn initialise_processor(engine: &Engine, record: &mut ProcessorRecord, tally: &mut Tally) {
    let Some(handle_value) = record.handle else { return };
    let index = record.index;
    let mut capabilities = PEP_PPM_QUERY_CAPABILITIES::zeroed();
    let (returned, trace) =
        engine.ppm(index, handle_value, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, Some(&mut capabilities));
    tally.absorb(&trace);
    let count = capabilities.FeedbackCounterCount;
    let counters = if returned && (1..=MAX_QUERIED_COUNTERS).contains(&(count as usize)) {
        let mut buffer = CountersBuffer::new(count);
        let (described, trace) = engine.ppm(
            index,
            handle_value,
            PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
            Some(&mut buffer),
        );
        tally.absorb(&trace);
        Some((described, buffer.counters[..count as usize].to_vec()))
    } else {
        None
    };
    let mut perf = PEP_PPM_QUERY_PERF_CAPABILITIES::zeroed();
    let (perf_returned, trace) =
        engine.ppm(index, handle_value, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, Some(&mut perf));
    tally.absorb(&trace);
    let mut domain = PEP_PPM_QUERY_DOMAIN_INFO::zeroed();
    domain.DomainId = if perf_returned { perf.DomainId } else { index };
    let (domain_returned, trace) =
        engine.ppm(index, handle_value, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, Some(&mut domain));
    tally.absorb(&trace);
    record.capabilities = Some((returned, capabilities));
    record.counters = counters;
    record.perf = Some((perf_returned, perf));
    record.domain = Some((domain_returned, domain));
}

/// One processor's part of a sample: as the processor, `FEEDBACK_READ` every counter it
/// described — with `nesting`, each interrupted by nested notifications (see [`NestedCall`]).
/// Reads only that processor's record and returns its new reads with the platform operations
/// they made (the nested ones included), so that a runtime with one thread per processor runs
/// it concurrently (the engine and the machine are shared by reference; "running as" is per
/// thread).
fn sample_processor(
    engine: &Engine,
    machine: &Machine,
    record: &ProcessorRecord,
    nesting: Option<NestingSetup>,
) -> (Vec<ReadRecord>, Vec<PlatformOp>) {
    let Some(handle_value) = record.handle else { return (Vec::new(), Vec::new()) };
    let count = u32::try_from(record.described_counters().len()).unwrap_or(0);
    let mut reads = Vec::with_capacity(count as usize);
    let mut operations = Vec::new();
    for counter_index in 0..count {
        let mut read = feedback_read(counter_index);
        let deliveries: Option<Rc<nested::Nesting>> = nesting
            .map(|setup| nested::Nesting::new(engine.ppm, handle_value, counter_index, setup));
        let guard = deliveries
            .as_ref()
            .map(|deliveries| platform::nest(deliveries.hook(), PLATFORM_CALL_NS));
        let (returned, trace) =
            engine.ppm(record.index, handle_value, PEP_NOTIFY_PPM_FEEDBACK_READ, Some(&mut read));
        drop(guard);
        let (nested, nested_operations) =
            deliveries.map(|deliveries| deliveries.finish()).unwrap_or_default();
        let (nominal, actual) = read_counts(&read);
        let (access, faulted) = analyse_read(&trace);
        let raw = raw_read(&trace);
        reads.push(ReadRecord {
            // With nested notifications the call goes on after it read the counters.
            at_ns: raw.map_or_else(|| machine.processor_now_ns(record.index), |raw| raw.at_ns),
            counter_index,
            returned,
            nominal,
            actual,
            access,
            faulted,
            handle: handle_value,
            raw,
            nested,
        });
        operations.extend(trace);
        operations.extend(nested_operations);
    }
    (reads, operations)
}

const fn capabilities_sentinel() -> PEP_PPM_QUERY_CAPABILITIES {
    let word = u32::from_ne_bytes([SENTINEL_BYTE; 4]);
    PEP_PPM_QUERY_CAPABILITIES {
        FeedbackCounterCount: word,
        IdleStateCount: word,
        PerformanceStatesSupported: SENTINEL_BYTE,
        ParkingSupported: SENTINEL_BYTE,
        DiscretePerformanceStateCount: SENTINEL_BYTE,
        Reserved: SENTINEL_BYTE,
    }
}

const fn capabilities_untouched(capabilities: &PEP_PPM_QUERY_CAPABILITIES) -> bool {
    let fresh = capabilities_sentinel();
    capabilities.FeedbackCounterCount == fresh.FeedbackCounterCount
        && capabilities.IdleStateCount == fresh.IdleStateCount
        && capabilities.PerformanceStatesSupported == fresh.PerformanceStatesSupported
        && capabilities.ParkingSupported == fresh.ParkingSupported
        && capabilities.DiscretePerformanceStateCount == fresh.DiscretePerformanceStateCount
        && capabilities.Reserved == fresh.Reserved
}

const fn perf_sentinel() -> PEP_PPM_QUERY_PERF_CAPABILITIES {
    let word = u32::from_ne_bytes([SENTINEL_BYTE; 4]);
    PEP_PPM_QUERY_PERF_CAPABILITIES {
        HighestPerformance: word,
        NominalPerformance: word,
        LowestNonlinearPerformance: word,
        LowestPerformance: word,
        DomainId: word,
        DomainMembers: word,
    }
}

fn perf_untouched(perf: &PEP_PPM_QUERY_PERF_CAPABILITIES) -> bool {
    let word = u32::from_ne_bytes([SENTINEL_BYTE; 4]);
    [
        perf.HighestPerformance,
        perf.NominalPerformance,
        perf.LowestNonlinearPerformance,
        perf.LowestPerformance,
        perf.DomainId,
        perf.DomainMembers,
    ]
    .iter()
    .all(|value| *value == word)
}

impl Observations {
    /// Takes note of the MSR reads in a trace.
    fn absorb(&mut self, trace: &[PlatformOp]) {
        absorb_into(
            &mut self.msr_reads,
            &mut self.unannounced_msr_reads,
            &mut self.unannounced_msr_read_count,
            trace,
        );
    }
}

fn absorb_into(
    total: &mut usize,
    unannounced: &mut Vec<MsrRead>,
    unannounced_count: &mut usize,
    trace: &[PlatformOp],
) {
    for op in trace {
        if let PlatformOp::ReadMsr(read) = op {
            *total += 1;
            if !read.announced {
                *unannounced_count += 1;
                if unannounced.len() < 32 {
                    unannounced.push(*read);
                }
            }
        }
    }
}

/// The nominal-count MSR that pairs with an actual-count MSR.
const fn nominal_partner(actual: u32) -> Option<u32> {
    match actual {
        msr::IA32_APERF => Some(msr::IA32_MPERF),
        msr::AMD_APERF_READ_ONLY => Some(msr::AMD_MPERF_READ_ONLY),
        msr::IA32_FIXED_CTR1 => Some(msr::IA32_FIXED_CTR2),
        crate::cpu::sysreg::AMEVCNTR00 => Some(crate::cpu::sysreg::AMEVCNTR01),
        _ => None,
    }
}

/// How one `FEEDBACK_READ` read the counters, and whether a read faulted.
fn analyse_read(trace: &[PlatformOp]) -> (PairAccess, bool) {
    let faulted =
        trace.iter().any(|op| matches!(op, PlatformOp::ReadMsr(read) if read.value.is_none()));
    let mut access = PairAccess::NoRead;
    for (position, op) in trace.iter().enumerate() {
        let PlatformOp::ReadMsr(read) = op else { continue };
        let Some(partner) = nominal_partner(read.msr) else {
            if matches!(
                read.msr,
                msr::IA32_MPERF
                    | msr::AMD_MPERF_READ_ONLY
                    | msr::IA32_FIXED_CTR2
                    | crate::cpu::sysreg::AMEVCNTR01
            ) && access == PairAccess::NoRead
            {
                access = PairAccess::Problem(format!("MPERF ({:#x}) read before APERF", read.msr));
            }
            continue;
        };
        // An SMI between the two reads is the hardware's doing, not the PEP's.
        let next = trace.iter().skip(position + 1).find(|op| !matches!(op, PlatformOp::Smi { .. }));
        let verdict = match next {
            Some(PlatformOp::ReadMsr(next)) if next.msr == partner => {
                if !read.masked || !next.masked {
                    PairAccess::Problem("counters read with interrupts enabled".to_owned())
                } else if read.mask_epoch != next.mask_epoch {
                    PairAccess::Problem(
                        "interrupts re-enabled between the APERF and MPERF reads".to_owned(),
                    )
                } else {
                    PairAccess::BackToBackMasked { actual_msr: read.msr, nominal_msr: next.msr }
                }
            }
            Some(other) => {
                PairAccess::Problem(format!("{other:?} between the APERF and MPERF reads"))
            }
            None if read.value.is_none() => PairAccess::NoRead,
            None => PairAccess::Problem("APERF read without MPERF".to_owned()),
        };
        if matches!(verdict, PairAccess::Problem(_)) || access == PairAccess::NoRead {
            access = verdict;
        }
    }
    (access, faulted)
}

fn summarise(pep: &Pep<SimPlatform>) -> EngineSummary {
    use ppm_engine::driver::registry;
    let mut device_ids_seen = Vec::new();
    let _ = pep.device_log().for_each(|entry| {
        device_ids_seen.push((String::from_utf16_lossy(entry.as_units()), entry.accepted));
    });
    EngineSummary {
        counter_source: pep.counter_source().name().to_owned(),
        nominal_mhz: pep.nominal_mhz(),
        // The driver's `State` vocabulary, so that a run compares with a VM's registry.
        nominal_source: registry::nominal_rate_source_name(pep.nominal_rate_source()).to_owned(),
        no_counters_reason: pep
            .no_counters_reason()
            .map(|reason| registry::no_counters_reason_name(Some(reason)).to_owned()),
        perf_source: registry::perf_source_name(pep.perf_source()).to_owned(),
        perf_capabilities: {
            let caps = pep.perf_capabilities();
            [caps.highest, caps.nominal, caps.lowest_nonlinear, caps.lowest]
        },
        device_ids_seen,
    }
}

#[cfg(test)]
mod tests;
