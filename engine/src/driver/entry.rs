//! `DriverEntry`'s sequence after `WdfDriverCreate`, generic over the kernel services.
//!
//! In order, at `PASSIVE_LEVEL`, once per boot:
//!
//! 1. reads the configuration from the service's `Parameters` key (every value optional); if
//!    `SkipRegistration` is set (boot safety), or a volatile `Parameters\InstallPending` key
//!    says the package was installed in this session (the PEP registers when the boot loader
//!    starts it, not mid-session), stops here: nothing is allocated or registered, `Boot`
//!    says why, and `DriverEntry` succeeds, so the service loads inert;
//! 2. allocates the processor table for `KeQueryMaximumProcessorCountEx(ALL_PROCESSOR_GROUPS)`
//!    processors from non-paged pool;
//! 3. where the configuration may use the architectural fixed counters and CPUID offers them
//!    (by default only where APERF/MPERF are missing), reserves the PMU through the HAL's
//!    counter arbitration and enables the counters on every active processor;
//! 4. builds the PEP (`Pep::new`) with the thread pinned to the processor it runs on (the
//!    engine calibrates MPERF over ~10 ms and both reads must come from one processor), moves
//!    it into the services' storage and publishes it (release);
//! 5. calls `PoFxRegisterPluginEx` with the engine's `PEP_INFORMATION`;
//! 6. writes the outcome to the volatile `Boot` key and the debugger.
//!
//! Any failure before registration undoes everything done so far — the PEP is withdrawn, the
//! PMU control values restored on every processor and the reservation freed, the table freed —
//! records the failed step in `Boot` and returns its status, so the driver does not load.
//! Nothing after a successful registration can fail `DriverEntry`.

use core::fmt::Write as _;

use crate::abi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_SUCCESS, STATUS_UNSUCCESSFUL};
use crate::driver::line::Line;
use crate::driver::pmu_reservation::{self, PmuReservation};
use crate::driver::processor_table::ProcessorTable;
use crate::driver::registry::{self, Note, Problem, state};
use crate::driver::services::{KernelServices, LogLevel, StateKey};
use crate::platform::Passive;
use crate::{Config, Pep, pep_information};

/// An initialisation step that can fail `DriverEntry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `KeQueryMaximumProcessorCountEx` returned 0.
    ProcessorCount,
    /// The processor table could not be allocated.
    ProcessorTable,
    /// `PoFxRegisterPluginEx` failed.
    RegisterPlugin,
}

impl Step {
    /// The step's name, as `State\FailedStep` records it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::ProcessorCount => "KeQueryMaximumProcessorCountEx",
            Self::ProcessorTable => "allocating the processor table",
            Self::RegisterPlugin => "PoFxRegisterPluginEx",
        }
    }
}

/// A failed initialisation step and the status `DriverEntry` returns for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// What failed.
    pub step: Step,
    /// Its status.
    pub status: NTSTATUS,
}

/// Why `DriverEntry` left the PEP unregistered on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// `Parameters\SkipRegistration` is set (boot safety).
    SkipRegistration,
    /// The package was installed in this session (a volatile `Parameters\InstallPending` key
    /// exists): the PEP registers at the next boot, when the boot loader starts it, not
    /// mid-session.
    InstallPending,
}

impl SkipReason {
    /// The reason, as `State\RegistrationSkipped` records it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::SkipRegistration => "skip-registration",
            Self::InstallPending => "install-pending",
        }
    }
}

/// How `DriverEntry` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The PEP is registered.
    Registered,
    /// The driver loads inert, for this reason.
    Skipped(SkipReason),
    /// A step failed; everything was undone.
    Failed(Failure),
}

impl Outcome {
    /// The status `DriverEntry` returns.
    #[must_use]
    pub const fn status(self) -> NTSTATUS {
        match self {
            Self::Registered | Self::Skipped(_) => STATUS_SUCCESS,
            Self::Failed(failure) => failure.status,
        }
    }
}

/// What a successful initialisation produced.
struct Registered<'a, P: crate::Platform> {
    /// The registered PEP.
    pep: &'a Pep<P>,
    /// The processor table's capacity.
    capacity: u32,
    /// What became of the PMU reservation.
    pmu: &'static str,
}

/// `DriverEntry` after the KMDF driver object exists. `PASSIVE_LEVEL`, once per boot: `passive`
/// is `DriverEntry`'s token, which building the PEP requires.
///
/// Configuration, table, PMU, PEP, registration, `Boot`. Returns how it ended
/// ([`Outcome::status`] is what `DriverEntry` returns).
pub fn driver_entry<K: KernelServices>(kernel: &K, passive: &Passive) -> Outcome {
    let mut issues = Issues::new();
    let (config, skip) = read_configuration(kernel, &mut issues);
    let skipped = if skip {
        Some(SkipReason::SkipRegistration)
    } else if kernel.install_pending() {
        Some(SkipReason::InstallPending)
    } else {
        None
    };
    if let Some(reason) = skipped {
        kernel.log(
            LogLevel::Info,
            format_args!(
                "the PEP is not registered and the driver loads inert ({}){}",
                reason.name(),
                if reason == SkipReason::InstallPending {
                    ": installed in this session, it registers at the next boot"
                } else {
                    ""
                }
            ),
        );
        report_skipped(kernel, &issues, reason);
        return Outcome::Skipped(reason);
    }
    match initialize(kernel, passive, &config) {
        Ok(registered) => {
            report_registered(kernel, &registered, &config, &issues);
            Outcome::Registered
        }
        Err(failure) => {
            report_failure(kernel, failure);
            Outcome::Failed(failure)
        }
    }
}

/// The configuration values `DriverEntry` ignored: all counted, the first
/// [`state::MAX_LISTED_ISSUES`] kept, compactly (it lives in `DriverEntry`'s frame, which must
/// stay under the 4 KiB that would need a stack probe), to be listed in `Boot`
/// (`ConfigurationIssue1`, …).
#[derive(Clone, Copy, Debug)]
struct Issues {
    /// How many.
    count: u32,
    /// The first ones, in the order found: the value's index in [`registry::names::ALL`]
    /// ([`Issues::KEY`]: the `Parameters` key itself) and the problem.
    listed: [Option<(u8, Problem)>; state::MAX_LISTED_ISSUES],
}

impl Issues {
    /// The index that stands for the `Parameters` key itself.
    const KEY: u8 = u8::MAX;

    const fn new() -> Self {
        Self { count: 0, listed: [None; state::MAX_LISTED_ISSUES] }
    }

    fn push(&mut self, note: Note) {
        let value = registry::names::ALL
            .iter()
            .position(|name| *name == note.value)
            .and_then(|index| u8::try_from(index).ok())
            .unwrap_or(Self::KEY);
        if let Some(slot) = self.listed.get_mut(usize::try_from(self.count).unwrap_or(usize::MAX)) {
            *slot = Some((value, note.problem));
        }
        self.count = self.count.saturating_add(1);
    }

    /// Writes `ConfigurationIssues` and one `ConfigurationIssueN` (`VALUE: REASON`) per listed
    /// issue. Not inlined: its text buffers stay out of `DriverEntry`'s frame.
    #[inline(never)]
    fn record<S: StateKey>(&self, record: &mut Recorder<S>) {
        record.dword(state::CONFIGURATION_ISSUES, self.count);
        for (index, (value, problem)) in self.listed.iter().flatten().enumerate() {
            let value =
                registry::names::ALL.get(usize::from(*value)).copied().unwrap_or("Parameters");
            let mut name = Line::<32>::new();
            let mut text = Line::<128>::new();
            let _ =
                write!(name, "{}{}", state::CONFIGURATION_ISSUE_PREFIX, index.saturating_add(1));
            let _ = write!(text, "{}", Note { value, problem: *problem });
            record.string(name.as_str(), text.as_str());
        }
    }
}

/// Reads the configuration from `Parameters`, logging every ignored value: the configuration,
/// the ignored values, and whether the registration is to be skipped. A `Parameters` key that
/// cannot be opened leaves every default in place (logged, and one issue: `Parameters`).
/// `PASSIVE_LEVEL`. Not inlined: the value buffer and the pattern parser's scratch space then
/// leave the stack before `Pep::new` runs.
#[inline(never)]
fn read_configuration<K: KernelServices>(kernel: &K, issues: &mut Issues) -> (Config, bool) {
    let mut values = match kernel.open_parameters() {
        Ok(values) => values,
        Err(status) => {
            kernel.log(
                LogLevel::Error,
                format_args!("cannot open the Parameters key ({status:#010X}): using the defaults"),
            );
            issues.push(Note { value: "Parameters", problem: Problem::KeyUnreadable { status } });
            return (Config::new(), false);
        }
    };
    let mut note = |note: Note| {
        issues.push(note);
        kernel.log(LogLevel::Error, format_args!("Parameters\\{note}"));
    };
    let skip = registry::read_skip_registration(&mut values, &mut note);
    let config = if skip { Config::new() } else { registry::read_config(&mut values, &mut note) };
    (config, skip)
}

/// Steps 2 to 5. `PASSIVE_LEVEL`. Not inlined: building the PEP needs room of its own, and
/// `DriverEntry`'s frame (the configuration, the ignored values) must stay under the 4 KiB past
/// which the compiler probes the stack with `__chkstk`, which a driver does not link.
#[inline(never)]
fn initialize<'k, K: KernelServices>(
    kernel: &'k K,
    passive: &Passive,
    config: &Config,
) -> Result<Registered<'k, K::Platform>, Failure> {
    let capacity = kernel.maximum_processor_count();
    let count = usize::try_from(capacity).unwrap_or(0);
    if count == 0 {
        return Err(Failure { step: Step::ProcessorCount, status: STATUS_UNSUCCESSFUL });
    }
    let table = ProcessorTable::allocate(kernel, count)
        .ok_or(Failure { step: Step::ProcessorTable, status: STATUS_INSUFFICIENT_RESOURCES })?;
    let pmu = pmu_reservation::reserve_and_enable(kernel, config);
    let pep = kernel.run_on_current_processor(|| {
        let pep = Pep::new(passive, kernel.platform(), config, table.slots());
        // SAFETY: once per DriverEntry, and nothing has been published yet.
        unsafe { kernel.install(pep) }
    });
    kernel.publish(pep);
    let information = pep_information::<K::Host>();
    // SAFETY: once per boot, from DriverEntry at PASSIVE_LEVEL; the PEP the callbacks serve is
    // published; after a successful registration DriverEntry succeeds and the image stays.
    let status = unsafe { kernel.register_plugin(&information) };
    if status < 0 {
        unwind(kernel, pmu, table);
        return Err(Failure { step: Step::RegisterPlugin, status });
    }
    let pmu = pmu.keep(kernel);
    Ok(Registered { pep, capacity, pmu })
}

/// Undoes steps 2 to 4 after a failed registration, in reverse order. `PASSIVE_LEVEL`.
fn unwind<K: KernelServices>(
    kernel: &K,
    pmu: PmuReservation<K::CounterReservation>,
    table: ProcessorTable,
) {
    kernel.withdraw();
    pmu.release(kernel);
    // SAFETY: the registration failed, so PoFx never received the callbacks, and the PEP
    // that refers to the slots is withdrawn: nothing uses them again.
    unsafe { table.free(kernel) };
}

/// Logs the registration and writes it to `Boot`. `PASSIVE_LEVEL`. Best effort: the PEP is
/// registered whatever happens here.
#[inline(never)]
fn report_registered<K: KernelServices>(
    kernel: &K,
    registered: &Registered<'_, K::Platform>,
    config: &Config,
    issues: &Issues,
) {
    let pep = registered.pep;
    let caps = pep.perf_capabilities();
    let source = pep.counter_source().name();
    let reason = registry::no_counters_reason_name(pep.no_counters_reason());
    let rate_source = registry::nominal_rate_source_name(pep.nominal_rate_source());
    let perf_source = registry::perf_source_name(pep.perf_source());
    let patterns = u32::try_from(config.device_id_patterns.len()).unwrap_or(u32::MAX);
    kernel.log(
        LogLevel::Info,
        format_args!(
            "registered: {} feedback counter(s), source {source} (no-counters reason {reason}), \
             nominal {} MHz ({rate_source}), perf {}/{}/{}/{} ({perf_source}), {} processor \
             slots, {} ignored configuration value(s), PMU reservation {}",
            pep.feedback_counter_count(),
            pep.nominal_mhz(),
            caps.highest,
            caps.nominal,
            caps.lowest_nonlinear,
            caps.lowest,
            registered.capacity,
            issues.count,
            registered.pmu,
        ),
    );
    let Some(key) = open_state(kernel) else { return };
    let mut record = Recorder { key, failures: 0 };
    record.dword(state::REGISTERED, 1);
    record.dword(state::FEEDBACK_COUNTER_COUNT, pep.feedback_counter_count());
    record.string(state::COUNTER_SOURCE, source);
    record.string(state::NO_COUNTERS_REASON, reason);
    record.dword(state::NOMINAL_MHZ, pep.nominal_mhz());
    record.string(state::NOMINAL_RATE_SOURCE, rate_source);
    record.dword(state::CALIBRATED_MHZ, pep.calibrated_mhz());
    record.dword(state::HIGHEST_PERFORMANCE, caps.highest);
    record.dword(state::NOMINAL_PERFORMANCE, caps.nominal);
    record.dword(state::LOWEST_NONLINEAR_PERFORMANCE, caps.lowest_nonlinear);
    record.dword(state::LOWEST_PERFORMANCE, caps.lowest);
    record.string(state::PERF_SOURCE, perf_source);
    record.dword(state::PROCESSOR_TABLE_CAPACITY, registered.capacity);
    record.dword(state::DEVICE_ID_PATTERN_COUNT, patterns);
    issues.record(&mut record);
    record.string(state::ARCHITECTURE, kernel.architecture());
    record.dword(state::IMAGE_TIME_DATE_STAMP, kernel.image_time_date_stamp());
    record.string(state::PMU_RESERVATION, registered.pmu);
    let failures = record.failures;
    drop(record);
    if failures > 0 {
        kernel.log(LogLevel::Error, format_args!("{failures} State value(s) not written"));
    }
}

/// An open `Boot` key that counts the writes that failed.
struct Recorder<S: StateKey> {
    key: S,
    failures: u32,
}

impl<S: StateKey> Recorder<S> {
    fn dword(&mut self, name: &str, value: u32) {
        let status = self.key.dword(name, value);
        self.failures = self.failures.saturating_add(u32::from(status != STATUS_SUCCESS));
    }

    fn string(&mut self, name: &str, text: &str) {
        let status = self.key.string(name, text);
        self.failures = self.failures.saturating_add(u32::from(status != STATUS_SUCCESS));
    }
}

/// Logs a failed initialisation and records it in `Boot` (best effort). `PASSIVE_LEVEL`. Not
/// inlined, as [`report_registered`].
#[inline(never)]
fn report_failure<K: KernelServices>(kernel: &K, failure: Failure) {
    kernel.log(
        LogLevel::Error,
        format_args!(
            "{} failed with {:#010X}; the PEP is not registered and the driver does not load",
            failure.step.name(),
            failure.status
        ),
    );
    if let Some(mut record) = open_state(kernel) {
        let _ = record.dword(state::REGISTERED, 0);
        let _ = record.string(state::FAILED_STEP, failure.step.name());
        let _ = record.dword(state::FAILURE_STATUS, failure.status.cast_unsigned());
        let _ = record.string(state::ARCHITECTURE, kernel.architecture());
        let _ = record.dword(state::IMAGE_TIME_DATE_STAMP, kernel.image_time_date_stamp());
    }
}

/// Records a skipped registration in `Boot` (best effort). `PASSIVE_LEVEL`. Not inlined, as
/// [`report_registered`].
#[inline(never)]
fn report_skipped<K: KernelServices>(kernel: &K, issues: &Issues, reason: SkipReason) {
    if let Some(key) = open_state(kernel) {
        let mut record = Recorder { key, failures: 0 };
        record.dword(state::REGISTERED, 0);
        record.string(state::REGISTRATION_SKIPPED, reason.name());
        issues.record(&mut record);
        record.string(state::ARCHITECTURE, kernel.architecture());
        record.dword(state::IMAGE_TIME_DATE_STAMP, kernel.image_time_date_stamp());
    }
}

/// Opens `Boot`, logging a failure. `PASSIVE_LEVEL`.
fn open_state<K: KernelServices>(kernel: &K) -> Option<K::State<'_>> {
    match kernel.create_state_key() {
        Ok(record) => Some(record),
        Err(status) => {
            kernel
                .log(LogLevel::Error, format_args!("cannot create the Boot key ({status:#010X})"));
            None
        }
    }
}
