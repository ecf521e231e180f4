//! `DriverEntry` as Windows runs it, through the engine's generic sequence
//! ([`ppm_engine::driver::driver_entry`]) over emulated kernel services.
//!
//! [`SimKernel`] implements [`KernelServices`] over the simulated machine: the service's
//! `Parameters` key is the scenario's `[registry]` (with `[config]`'s values), non-paged pool
//! is the host allocator with a ledger of every block, processor affinity runs the thread as
//! the processor, `HalAllocateHardwareCounters` is the machine's PMU arbitration (refused while
//! another owner holds the PMU), `PoFxRegisterPluginEx` applies the emulated `PoFx`'s checks,
//! and the `Boot` key and the debugger log are recorded. A scenario's `[[fault]]` entries make
//! one of these services fail; [`DriverEntryRecord`] keeps what the checks need to see that every
//! failure was unwound completely.

use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;

use ppm_engine::Pep;
use ppm_engine::abi::{
    NTSTATUS, PEP_INFORMATION, PEP_INFORMATION_V3, PEP_KERNEL_INFORMATION_STRUCT_V3,
    PEP_KERNEL_INFORMATION_V3, PHYSICAL_COUNTER_RESOURCE_LIST, POHANDLE__, ResourceTypeRange,
    STATUS_INVALID_KERNEL_INFO_VERSION, STATUS_INVALID_PARAMETER, STATUS_INVALID_PEP_INFO_VERSION,
    STATUS_SUCCESS, STATUS_UNSUCCESSFUL,
};
use ppm_engine::driver::registry::{Lookup, VALUE_BUFFER_BYTES, ValueSource};
use ppm_engine::driver::{self, KernelServices, LogLevel, Outcome, PoolBlock, StateKey, registry};
use ppm_engine::platform::Passive;

use crate::machine::Machine;
use crate::platform::{DriverSetup, OnProcessor, SimHost, SimPlatform};
#[cfg(any(test, feature = "sabotage"))]
use crate::sabotage::{DriverEntrySabotage, Sabotage};
use crate::scenario::{Scenario, ServiceFault};

/// One `Boot` value as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateData {
    /// `REG_DWORD`.
    Dword(u32),
    /// `REG_SZ`.
    Text(String),
}

impl fmt::Display for StateData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dword(value) => write!(f, "{value}"),
            Self::Text(text) => f.write_str(text),
        }
    }
}

/// What `PoFx` checks and records of a `PEP_INFORMATION`: its version and size, and which
/// notification callbacks are non-NULL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PluginInformation {
    /// `Version`.
    pub version: u16,
    /// `Size`.
    pub size: u16,
    /// Whether `AcceptDeviceNotification` is non-NULL.
    pub device_callback: bool,
    /// Whether `AcceptProcessorNotification` is non-NULL.
    pub processor_callback: bool,
}

impl PluginInformation {
    /// What `PoFx` checks of `information`.
    #[must_use]
    pub const fn of(information: &PEP_INFORMATION) -> Self {
        Self {
            version: information.Version,
            size: information.Size,
            device_callback: information.AcceptDeviceNotification.is_some(),
            processor_callback: information.AcceptProcessorNotification.is_some(),
        }
    }
}

/// `PoFxRegisterPluginEx` as the emulated `PoFx` saw it.
#[derive(Clone, Copy, Debug)]
pub struct PluginRegistration {
    /// What `PoFx` checks of the `PEP_INFORMATION` passed.
    pub information: PluginInformation,
    /// The `PEP_INFORMATION` passed, when its callbacks are host functions (the engine's);
    /// `None` for the image's, which are addresses in the image its runner calls.
    pub host: Option<PEP_INFORMATION>,
    /// What `PoFx`'s own checks of the structures returned.
    pub checked: NTSTATUS,
    /// What the call returned (an injected fault's status when one was set).
    pub status: NTSTATUS,
}

/// The PMU control of one processor (`IA32_FIXED_CTR_CTRL`, `IA32_PERF_GLOBAL_CTRL`).
pub type PmuControl = (u64, u64);

/// What `DriverEntry` did.
#[derive(Clone, Debug)]
pub struct DriverEntryRecord {
    /// How the engine's sequence ended.
    pub outcome: Outcome,
    /// What `DriverEntry` returned.
    pub status: NTSTATUS,
    /// The `Boot` key, if it was created.
    pub state: Option<BTreeMap<String, StateData>>,
    /// The debugger lines, in order.
    pub log: Vec<(LogLevel, String)>,
    /// The `Parameters` values read, in order.
    pub values_read: Vec<String>,
    /// Every pool allocation: the block and whether it succeeded.
    pub allocations: Vec<(PoolBlock, bool)>,
    /// The pool blocks still allocated when `DriverEntry` returned.
    pub outstanding: Vec<PoolBlock>,
    /// The registration, if `DriverEntry` got that far.
    pub registration: Option<PluginRegistration>,
    /// Whether a PEP is published when `DriverEntry` returned.
    pub published: bool,
    /// Each processor's PMU control before and after `DriverEntry` (empty without a PMU).
    pub pmu_control: Vec<(PmuControl, PmuControl)>,
    /// Whether a PMU reservation is held when `DriverEntry` returned.
    pub pmu_reserved: bool,
    /// Whether `HalAllocateHardwareCounters` was called.
    pub reservation_requested: bool,
    /// The `TimeDateStamp` of the image that ran, which `State\ImageTimeDateStamp` must hold:
    /// [`ENGINE_IMAGE_TIME_DATE_STAMP`] on the engine backend (its kernel reports that), the
    /// image file's PE header on the image backend (the image reads its own header).
    pub image_time_date_stamp: u32,
}

/// The `TimeDateStamp` the engine backend's kernel reports for the running image (there is no
/// image: a fixed value, which `boot.state` expects in `State\ImageTimeDateStamp`).
pub const ENGINE_IMAGE_TIME_DATE_STAMP: u32 = 0x5050_4550;

impl DriverEntryRecord {
    /// `Boot` value `name`, as text.
    #[must_use]
    pub fn state_value(&self, name: &str) -> Option<String> {
        self.state.as_ref()?.get(name).map(ToString::to_string)
    }

    /// The configuration values the PEP ignored, as `Boot` lists them
    /// (`ConfigurationIssue1`, `ConfigurationIssue2`, … until one is missing): each split at
    /// its first `": "` into the value's name and the reason.
    #[must_use]
    pub fn configuration_issues(&self) -> Vec<(String, String)> {
        (1..)
            .map_while(|index| {
                self.state_value(&format!(
                    "{}{index}",
                    ppm_engine::driver::registry::state::CONFIGURATION_ISSUE_PREFIX
                ))
            })
            .map(|text| match text.split_once(": ") {
                Some((value, reason)) => (value.to_owned(), reason.to_owned()),
                None => (String::new(), text),
            })
            .collect()
    }
}

/// A block of the emulated non-paged pool.
struct PoolEntry {
    block: PoolBlock,
    address: NonNull<u8>,
    layout: Layout,
}

/// The kernel services over the simulated machine, for one `DriverEntry`.
pub struct SimKernel<'a> {
    scenario: &'a Scenario,
    platform: SimPlatform,
    /// The `PEP_INFORMATION` a test registers instead of the engine's.
    #[cfg(any(test, feature = "sabotage"))]
    information_override: Option<PEP_INFORMATION>,
    /// What a test breaks.
    #[cfg(any(test, feature = "sabotage"))]
    sabotage: DriverEntrySabotage,
    state: RefCell<Option<BTreeMap<String, StateData>>>,
    log: RefCell<Vec<(LogLevel, String)>>,
    values_read: RefCell<Vec<String>>,
    allocations: RefCell<Vec<(PoolBlock, bool)>>,
    pool: RefCell<Vec<PoolEntry>>,
    installed: Cell<*mut Pep<SimPlatform>>,
    published: Cell<bool>,
    registration: Cell<Option<PluginRegistration>>,
    reservation_requested: Cell<bool>,
    /// The processors `run_on_processor` visited, in order (a second visit is the unwinding's
    /// restore, which a test's `DriverEntrySabotage` may lose).
    #[cfg(any(test, feature = "sabotage"))]
    visited: RefCell<Vec<u32>>,
}

impl<'a> SimKernel<'a> {
    /// Kernel services for `scenario`'s `DriverEntry` on `platform`'s machine.
    #[must_use]
    pub const fn new(scenario: &'a Scenario, platform: SimPlatform) -> Self {
        Self {
            scenario,
            platform,
            #[cfg(any(test, feature = "sabotage"))]
            information_override: None,
            #[cfg(any(test, feature = "sabotage"))]
            sabotage: DriverEntrySabotage::NONE,
            state: RefCell::new(None),
            log: RefCell::new(Vec::new()),
            values_read: RefCell::new(Vec::new()),
            allocations: RefCell::new(Vec::new()),
            pool: RefCell::new(Vec::new()),
            installed: Cell::new(std::ptr::null_mut()),
            published: Cell::new(false),
            registration: Cell::new(None),
            reservation_requested: Cell::new(false),
            #[cfg(any(test, feature = "sabotage"))]
            visited: RefCell::new(Vec::new()),
        }
    }

    /// These services with `sabotage`'s substituted `PEP_INFORMATION` (a test's corrupting
    /// shims) and broken services.
    #[cfg(any(test, feature = "sabotage"))]
    #[must_use]
    pub const fn with_sabotage(mut self, sabotage: &Sabotage) -> Self {
        self.information_override = sabotage.pep_information;
        self.sabotage = sabotage.driver_entry;
        self
    }

    fn machine(&self) -> &Machine {
        self.platform.machine()
    }

    /// The system-wide indexes of the processors active at boot (the ones not hot-added later).
    fn active_processors(&self) -> Vec<u32> {
        (0..self.scenario.platform.processors)
            .filter(|&index| self.scenario.initially_present(index))
            .collect()
    }

    /// Each processor's PMU control now (empty without a PMU).
    #[must_use]
    pub fn pmu_control(&self) -> Vec<PmuControl> {
        (0..self.scenario.platform.processors)
            .filter_map(|index| self.machine().fixed_counters(index))
            .map(|state| (state.fixed_ctr_ctrl, state.perf_global_ctrl))
            .collect()
    }

    /// Runs `DriverEntry` (after `WdfDriverCreate`) and returns what it did, with the PEP it
    /// registered (`None` unless it registered) and the `PEP_INFORMATION` `PoFx` received.
    pub fn run_driver_entry(&self) -> (DriverEntryRecord, Option<Box<Pep<SimPlatform>>>) {
        let before = self.pmu_control();
        let outcome = {
            let _setup = DriverSetup::enter();
            // SAFETY: the emulated `DriverEntry` runs on this host thread, at no raised IRQL
            // (the emulator's PASSIVE_LEVEL), and the token lives only for the call.
            let passive = unsafe { Passive::assume() };
            driver::driver_entry(self, &passive)
        };
        let status = outcome.status();
        #[cfg(any(test, feature = "sabotage"))]
        let status = if self.sabotage.swallow_failure { STATUS_SUCCESS } else { status };
        let after = self.pmu_control();
        let installed = self.installed.replace(std::ptr::null_mut());
        // SAFETY: a non-NULL pointer came from `Box::into_raw` in `install`, once per `DriverEntry`, and
        // is taken back once (replaced by NULL above); the references the engine's sequence
        // held ended with `driver_entry`.
        let pep = (!installed.is_null()).then(|| unsafe { Box::from_raw(installed) });
        let registered = matches!(outcome, Outcome::Registered);
        let record = DriverEntryRecord {
            outcome,
            status,
            state: self.state.borrow().clone(),
            log: self.log.borrow().clone(),
            values_read: self.values_read.borrow().clone(),
            allocations: self.allocations.borrow().clone(),
            outstanding: self.pool.borrow().iter().map(|entry| entry.block).collect(),
            registration: self.registration.get(),
            published: self.published.get(),
            pmu_control: before.into_iter().zip(after).collect(),
            pmu_reserved: self.machine().pmu_reserved(),
            reservation_requested: self.reservation_requested.get(),
            image_time_date_stamp: ENGINE_IMAGE_TIME_DATE_STAMP,
        };
        (record, pep.filter(|_| registered))
    }

    /// The registration `PoFx` accepted, if it succeeded.
    fn accepted(&self) -> Option<PluginRegistration> {
        self.registration.get().filter(|registration| registration.status == STATUS_SUCCESS)
    }

    /// The `PEP_INFORMATION` of host functions `PoFx` accepted, if the registration succeeded.
    #[must_use]
    pub fn registered_information(&self) -> Option<PEP_INFORMATION> {
        self.accepted().and_then(|registration| registration.host)
    }

    /// `PoFxRegisterPluginEx` of a `PEP_INFORMATION` whose callbacks are not host functions
    /// (the image's): `PoFx`'s checks of `information`, recorded; the status returned.
    pub fn register_foreign_plugin(&self, information: PluginInformation) -> NTSTATUS {
        self.record_registration(information, None)
    }

    /// Checks and records a registration of `information` (`host`: the structure, when its
    /// callbacks are host functions): the status `PoFxRegisterPluginEx` returns, an injected
    /// `register-plugin` fault's when one is set.
    fn record_registration(
        &self,
        information: PluginInformation,
        host: Option<PEP_INFORMATION>,
    ) -> NTSTATUS {
        let mut kernel = PEP_KERNEL_INFORMATION_STRUCT_V3::zeroed();
        kernel.Version = PEP_KERNEL_INFORMATION_V3;
        kernel.Size = PEP_KERNEL_INFORMATION_STRUCT_V3::SIZE;
        let checked = register_plugin(&information, &mut kernel);
        let status = match self.fault("register-plugin") {
            Some(ServiceFault::RegisterPlugin { status }) if checked == STATUS_SUCCESS => *status,
            _ => checked,
        };
        self.registration.set(Some(PluginRegistration { information, host, checked, status }));
        status
    }

    fn fault(&self, step: &str) -> Option<&ServiceFault> {
        self.scenario.kernel.fault(step)
    }

    /// The system-wide index of active processor `index` (`KeGetProcessorNumberFromIndex`).
    #[must_use]
    pub fn active_processor(&self, index: u32) -> Option<u32> {
        self.active_processors().get(usize::try_from(index).ok()?).copied()
    }

    /// The image moved its thread to `processor`: an injected `enable-fixed-counters` fault
    /// makes that processor's PMU control MSRs fault until [`Self::end_pmu_fault`]. Whether
    /// one was injected there.
    pub fn begin_pmu_fault(&self, processor: u32) -> bool {
        let faulting = matches!(
            self.fault("enable-fixed-counters"),
            Some(ServiceFault::EnableFixedCounters { processor: target }) if *target == processor
        );
        if faulting {
            self.machine().set_msr_fault(processor, true);
        }
        faulting
    }

    /// Ends [`Self::begin_pmu_fault`]'s fault on `processor`.
    pub fn end_pmu_fault(&self, processor: u32) {
        self.machine().set_msr_fault(processor, false);
    }

    /// `ExAllocatePool2` for the image's `block` of `bytes` (the memory is the runner's):
    /// whether the pool grants it (an injected `allocate` fault refuses it). Recorded as the
    /// engine's allocations are.
    pub fn grant_pool(&self, block: PoolBlock, bytes: u64) -> bool {
        let refused = self.scenario.kernel.faults.iter().any(
            |fault| matches!(fault, ServiceFault::Allocate { block: target } if *target == block),
        );
        let granted = !refused && bytes > 0;
        self.allocations.borrow_mut().push((block, granted));
        granted
    }

    /// Fills `kernel` as a successful `PoFxRegisterPluginEx` does and returns the offsets of
    /// its function pointers (the services the emulated `PoFx` offers).
    pub fn kernel_information(&self, kernel: &mut PEP_KERNEL_INFORMATION_STRUCT_V3) -> Vec<usize> {
        kernel.Version = PEP_KERNEL_INFORMATION_V3;
        kernel.Size = PEP_KERNEL_INFORMATION_STRUCT_V3::SIZE;
        let information =
            self.accepted().map(|registration| registration.information).unwrap_or_default();
        let _ = register_plugin(&information, kernel);
        let mut functions = Vec::new();
        if kernel.RequestWorker.is_some() {
            functions.push(std::mem::offset_of!(PEP_KERNEL_INFORMATION_STRUCT_V3, RequestWorker));
        }
        if kernel.RequestCommon.is_some() {
            functions.push(std::mem::offset_of!(PEP_KERNEL_INFORMATION_STRUCT_V3, RequestCommon));
        }
        functions
    }

    /// The record of the image's `DriverEntry`, which returned `status` (`None`: it
    /// bugchecked) with the PMU control `before` it, the pool blocks still `outstanding`, as
    /// [`Self::run_driver_entry`] records the engine's (the outcome read back from the `Boot` key the image
    /// wrote). The image keeps its belief that the fixed counters are ready in its own memory;
    /// it holds the reservation at the end of `DriverEntry` only when it enabled them
    /// everywhere, which the machine is told.
    #[must_use]
    pub fn image_record(
        &self,
        status: Option<NTSTATUS>,
        before: Vec<PmuControl>,
        outstanding: Vec<PoolBlock>,
    ) -> DriverEntryRecord {
        self.machine().set_fixed_counters_ready(self.machine().pmu_reserved());
        let after = self.pmu_control();
        let state = self.state.borrow().clone();
        let registration = self.registration.get();
        let registered = status == Some(STATUS_SUCCESS)
            && registration.is_some_and(|registration| registration.status == STATUS_SUCCESS);
        let status = status.unwrap_or(STATUS_UNSUCCESSFUL);
        DriverEntryRecord {
            outcome: image_outcome(registered, status, state.as_ref()),
            status,
            state,
            log: self.log.borrow().clone(),
            values_read: self.values_read.borrow().clone(),
            allocations: self.allocations.borrow().clone(),
            outstanding,
            registration,
            // Observed by the emulator afterwards: whether the callbacks still answer.
            published: registered,
            pmu_control: before.into_iter().zip(after).collect(),
            pmu_reserved: self.machine().pmu_reserved(),
            reservation_requested: self.reservation_requested.get(),
            // The image backend sets the image's own (`crate::image::load_driver`).
            image_time_date_stamp: 0,
        }
    }
}

/// The image's outcome, read back as a reader of the `Boot` key would: registered, skipped
/// (`RegistrationSkipped`) or failed (`FailedStep`; a step the driver does not name is kept as
/// the status only, under the first step, and `boot.state` fails on the name).
fn image_outcome(
    registered: bool,
    status: NTSTATUS,
    state: Option<&BTreeMap<String, StateData>>,
) -> Outcome {
    use ppm_engine::driver::{Failure, SkipReason, Step};
    if registered {
        return Outcome::Registered;
    }
    let value = |name: &str| state.and_then(|values| values.get(name)).map(ToString::to_string);
    if status == STATUS_SUCCESS {
        let reason = value(registry::state::REGISTRATION_SKIPPED);
        for skip in [SkipReason::SkipRegistration, SkipReason::InstallPending] {
            if reason.as_deref() == Some(skip.name()) {
                return Outcome::Skipped(skip);
            }
        }
    }
    let named = value(registry::state::FAILED_STEP);
    let step = [Step::ProcessorCount, Step::ProcessorTable, Step::RegisterPlugin]
        .into_iter()
        .find(|step| named.as_deref() == Some(step.name()))
        .unwrap_or(Step::ProcessorCount);
    Outcome::Failed(Failure { step, status })
}

impl Drop for SimKernel<'_> {
    /// Frees what the driver kept (the processor table of a registered PEP): the emulator
    /// outlives nothing it was given.
    fn drop(&mut self) {
        for entry in self.pool.get_mut().drain(..) {
            // SAFETY: allocated in `allocate_non_paged` with this layout and not yet freed.
            unsafe { std::alloc::dealloc(entry.address.as_ptr(), entry.layout) };
        }
    }
}

/// The `Parameters` key as the driver reads it.
pub struct SimParameters<'k> {
    kernel: &'k SimKernel<'k>,
    buffer: Vec<u8>,
}

impl ValueSource for SimParameters<'_> {
    fn read(&mut self, name: &'static str) -> Lookup<'_> {
        self.read_named(name)
    }
}

impl SimParameters<'_> {
    /// `WdfRegistryQueryValue` of `name`, as the driver reads it (recorded, faults injected).
    pub fn read_named(&mut self, name: &str) -> Lookup<'_> {
        self.kernel.values_read.borrow_mut().push(name.to_owned());
        let faulted = self.kernel.scenario.kernel.faults.iter().find_map(|fault| match fault {
            ServiceFault::ReadValue { value, status } if value.eq_ignore_ascii_case(name) => {
                Some(*status)
            }
            _ => None,
        });
        if let Some(status) = faulted {
            return Lookup::Failed { status };
        }
        #[cfg(any(test, feature = "sabotage"))]
        if self.kernel.sabotage.ignore_skip_registration
            && name == registry::names::SKIP_REGISTRATION
        {
            return Lookup::Absent;
        }
        let Some(value) = self.kernel.scenario.kernel.value(name) else {
            return Lookup::Absent;
        };
        if value.data.len() > VALUE_BUFFER_BYTES {
            return Lookup::TooLarge {
                needed: u32::try_from(value.data.len()).unwrap_or(u32::MAX),
            };
        }
        self.buffer.clear();
        self.buffer.extend_from_slice(&value.data);
        Lookup::Found { value_type: value.value_type, data: &self.buffer }
    }
}

/// The `Boot` key as the driver writes it.
pub struct SimState<'k> {
    kernel: &'k SimKernel<'k>,
}

impl SimState<'_> {
    fn write(&self, name: &str, data: StateData) -> NTSTATUS {
        #[cfg(any(test, feature = "sabotage"))]
        if self.kernel.sabotage.drop_state_strings && matches!(data, StateData::Text(_)) {
            return STATUS_SUCCESS;
        }
        if let Some(values) = self.kernel.state.borrow_mut().as_mut() {
            values.insert(name.to_owned(), data);
        }
        STATUS_SUCCESS
    }
}

impl StateKey for SimState<'_> {
    fn dword(&mut self, name: &str, value: u32) -> NTSTATUS {
        self.write(name, StateData::Dword(value))
    }

    fn string(&mut self, name: &str, text: &str) -> NTSTATUS {
        if text.contains('\0') {
            return STATUS_INVALID_PARAMETER;
        }
        self.write(name, StateData::Text(text.to_owned()))
    }
}

impl KernelServices for SimKernel<'_> {
    type Platform = SimPlatform;
    type Host = SimHost;
    type Parameters<'k>
        = SimParameters<'k>
    where
        Self: 'k;
    type State<'k>
        = SimState<'k>
    where
        Self: 'k;
    type CounterReservation = ();

    fn platform(&self) -> SimPlatform {
        self.platform.clone()
    }

    fn architecture(&self) -> &'static str {
        // The emulated processors' architecture, whatever the host is.
        if self.platform.machine().cpu().kind.is_arm64() { "arm64" } else { "x64" }
    }

    fn image_time_date_stamp(&self) -> u32 {
        #[cfg(any(test, feature = "sabotage"))]
        if self.sabotage.stale_image {
            return ENGINE_IMAGE_TIME_DATE_STAMP.wrapping_sub(86_400);
        }
        ENGINE_IMAGE_TIME_DATE_STAMP
    }

    fn open_parameters(&self) -> Result<SimParameters<'_>, NTSTATUS> {
        if let Some(ServiceFault::OpenParameters { status }) = self.fault("open-parameters") {
            return Err(*status);
        }
        Ok(SimParameters { kernel: shorten(self), buffer: Vec::with_capacity(VALUE_BUFFER_BYTES) })
    }

    fn install_pending(&self) -> bool {
        #[cfg(any(test, feature = "sabotage"))]
        if self.sabotage.ignore_install_pending {
            return false;
        }
        self.scenario.kernel.install_pending
    }

    fn create_state_key(&self) -> Result<SimState<'_>, NTSTATUS> {
        if let Some(ServiceFault::CreateStateKey { status }) = self.fault("create-state-key") {
            return Err(*status);
        }
        // A volatile key: a new boot starts it empty.
        self.state.borrow_mut().get_or_insert_with(BTreeMap::new);
        Ok(SimState { kernel: shorten(self) })
    }

    fn maximum_processor_count(&self) -> u32 {
        if self.fault("processor-count").is_some() {
            return 0;
        }
        self.scenario.platform.processors
    }

    fn active_processor_count(&self) -> u32 {
        u32::try_from(self.active_processors().len()).unwrap_or(u32::MAX)
    }

    fn run_on_processor<R>(&self, index: u32, f: impl FnOnce() -> R) -> Option<R> {
        let processor = *self.active_processors().get(usize::try_from(index).ok()?)?;
        let _on = OnProcessor::enter(None, processor);
        let faulting = matches!(
            self.fault("enable-fixed-counters"),
            Some(ServiceFault::EnableFixedCounters { processor: target }) if *target == processor
        );
        // The second visit to a processor is the unwinding's restore: a sabotaged driver never
        // gets there.
        #[cfg(any(test, feature = "sabotage"))]
        {
            let revisit = self.visited.borrow().contains(&processor);
            self.visited.borrow_mut().push(processor);
            if revisit && self.sabotage.skip_pmu_restore {
                return None;
            }
        }
        // An injected fault makes this processor's PMU control MSRs fault.
        if faulting {
            self.machine().set_msr_fault(processor, true);
        }
        let result = f();
        if faulting {
            self.machine().set_msr_fault(processor, false);
        }
        Some(result)
    }

    fn run_on_current_processor<R>(&self, f: impl FnOnce() -> R) -> R {
        // DriverEntry runs on the boot processor.
        let _on = OnProcessor::enter(None, 0);
        f()
    }

    fn allocate_non_paged(&self, block: PoolBlock, bytes: usize) -> Option<NonNull<u8>> {
        let refused = self.scenario.kernel.faults.iter().any(
            |fault| matches!(fault, ServiceFault::Allocate { block: target } if *target == block),
        );
        let allocation = if refused || bytes == 0 {
            None
        } else {
            Layout::from_size_align(bytes, 16).ok().and_then(|layout| {
                // SAFETY: the layout has a non-zero size.
                let address = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
                self.pool.borrow_mut().push(PoolEntry { block, address, layout });
                Some(address)
            })
        };
        self.allocations.borrow_mut().push((block, allocation.is_some()));
        allocation
    }

    unsafe fn free_non_paged(&self, block: PoolBlock, allocation: NonNull<u8>) {
        #[cfg(any(test, feature = "sabotage"))]
        if self.sabotage.leak_pool {
            return;
        }
        let mut pool = self.pool.borrow_mut();
        if let Some(position) =
            pool.iter().position(|entry| entry.address == allocation && entry.block == block)
        {
            let entry = pool.swap_remove(position);
            // SAFETY: allocated in `allocate_non_paged` with this layout; removed from the
            // ledger, so freed once; the caller guarantees nothing uses it.
            unsafe { std::alloc::dealloc(entry.address.as_ptr(), entry.layout) };
        }
    }

    fn allocate_hardware_counters(
        &self,
        list: Option<&mut PHYSICAL_COUNTER_RESOURCE_LIST>,
    ) -> Result<(), NTSTATUS> {
        self.reservation_requested.set(true);
        if let Some(ServiceFault::HalAllocateCounters { status }) =
            self.fault("hal-allocate-counters")
        {
            return Err(*status);
        }
        let request = match list {
            None => "NULL (exclusive ownership of the PMU)".to_owned(),
            Some(list) => {
                let [descriptor] = list.Descriptors;
                if list.Count != 1 || descriptor.Type != ResourceTypeRange || descriptor.Flags != 0
                {
                    return Err(STATUS_INVALID_PARAMETER);
                }
                // SAFETY: a ResourceTypeRange descriptor's union holds `Range` (two ULONGs:
                // any bit pattern is valid).
                let range = unsafe { descriptor.u.Range };
                if range.Begin > range.End {
                    return Err(STATUS_INVALID_PARAMETER);
                }
                format!("1 ResourceTypeRange descriptor, counters {}..={}", range.Begin, range.End)
            }
        };
        match self.machine().allocate_hardware_counters(request) {
            STATUS_SUCCESS => Ok(()),
            status => Err(status),
        }
    }

    fn free_hardware_counters(&self, (): ()) -> NTSTATUS {
        self.machine().free_hardware_counters();
        STATUS_SUCCESS
    }

    fn set_fixed_counters_reserved(&self, reserved: bool) {
        self.machine().set_fixed_counters_ready(reserved);
    }

    unsafe fn install(&self, pep: Pep<SimPlatform>) -> &'static Pep<SimPlatform> {
        let pointer = Box::into_raw(Box::new(pep));
        self.installed.set(pointer);
        // SAFETY: the box is taken back only in `run_driver_entry`, after `driver_entry` returned and every
        // reference the sequence held ended (the `'static` is wider than the truth).
        unsafe { &*pointer }
    }

    fn publish(&self, _pep: &'static Pep<SimPlatform>) {
        self.published.set(true);
    }

    fn withdraw(&self) {
        #[cfg(any(test, feature = "sabotage"))]
        if self.sabotage.keep_published {
            return;
        }
        self.published.set(false);
    }

    unsafe fn register_plugin(&self, information: &PEP_INFORMATION) -> NTSTATUS {
        #[cfg(any(test, feature = "sabotage"))]
        let information = &self.information_override.unwrap_or(*information);
        self.record_registration(PluginInformation::of(information), Some(*information))
    }

    fn log(&self, level: LogLevel, message: fmt::Arguments<'_>) {
        self.log.borrow_mut().push((level, message.to_string()));
    }
}

/// Narrows `&'k SimKernel<'a>` to `&'k SimKernel<'k>` (`'a: 'k`; the kernel is covariant).
const fn shorten<'k>(kernel: &'k SimKernel<'_>) -> &'k SimKernel<'k> {
    kernel
}

/// `PoFxRegisterPluginEx`'s checks: `PEP_INFORMATION` version 3 and size 32 with both
/// notification callbacks, the kernel information version 3 and size 96; on success `PoFx`
/// fills in its services.
#[must_use]
pub fn register_plugin(
    info: &PluginInformation,
    kernel: &mut PEP_KERNEL_INFORMATION_STRUCT_V3,
) -> NTSTATUS {
    if info.version != PEP_INFORMATION_V3 || info.size != PEP_INFORMATION::SIZE {
        return STATUS_INVALID_PEP_INFO_VERSION;
    }
    if !info.device_callback || !info.processor_callback {
        return STATUS_INVALID_PARAMETER;
    }
    if kernel.Version != PEP_KERNEL_INFORMATION_V3
        || kernel.Size < PEP_KERNEL_INFORMATION_STRUCT_V3::SIZE
    {
        return STATUS_INVALID_KERNEL_INFO_VERSION;
    }
    kernel.Plugin = std::ptr::without_provenance_mut::<POHANDLE__>(0xFFFF_B000_0000_1000);
    kernel.RequestWorker = Some(kernel_services::request_worker);
    kernel.RequestCommon = Some(kernel_services::request_common);
    STATUS_SUCCESS
}

/// The kernel services the emulated `PoFx` offers (the engine uses none of them).
mod kernel_services {
    use ppm_engine::abi::{NTSTATUS, POHANDLE, PVOID, STATUS_NOT_SUPPORTED, ULONG};

    /// `RequestWorker`: the emulator has no worker to deliver; ignored.
    pub const unsafe extern "C" fn request_worker(_plugin: POHANDLE) {}

    /// `RequestCommon`: no request is supported.
    pub const unsafe extern "C" fn request_common(_request: ULONG, _data: PVOID) -> NTSTATUS {
        STATUS_NOT_SUPPORTED
    }
}
