//! The PoFx emulator.
//!
//! It registers the PEP as `PoFxRegisterPluginEx` does, offers it devices, initialises the processors it accepted, runs the scenario's runtime (the OS reading every
//! processor's feedback counters every sample interval, the events, conformance probes) and
//! records everything it observed for the checks.
//!
//! The PEP under test (the engine, or the image) is reached only through the callbacks `PoFx`
//! holds for it, with raw pointers to the C structures of [`ppm_engine::abi`], each call made
//! "as" a processor (see
//! [`crate::platform::OnProcessor`]). The runtime runs on one thread or on one thread per
//! processor with a device thread beside them (`[pofx] threads`; see the `runtime` submodule),
//! optionally with nested notifications interrupting every read (`[pofx]
//! nested_notifications`; see [`NestedCall`]).
//!
//! The submodules are layers, each using only those before it: `records` (plain per-call
//! records), `pep` (the PEP under test — the engine's instance or the image — called through
//! [`ppm_caller::Callbacks`] as a processor and traced), `analysis`
//! (how a call's platform trace read the counters), `digest` (the runtime's reads, digested as
//! they are made), `observations` (the per-processor records and the run's [`Observations`]),
//! `probes`, `nested`, `sample`, `startup`, `schedule` and `runtime` (what the emulated OS does,
//! most of it as methods of [`Emulator`]). This module holds [`RunOptions`] and the
//! [`Emulator`]'s orchestration. The checks ([`crate::checks`]) consume the observations;
//! nothing here uses them. The rules they judge by ([`crate::verdict`]) are a leaf below both:
//! the digest holds each interval to its rule as it streams (it keeps no read to judge later)
//! and records the [`crate::verdict::Findings`] the checks turn into pass or fail.

use std::sync::Arc;

use ppm_caller::Callbacks;
use ppm_engine::Pep;

use crate::driver_entry::{DriverEntryRecord, SimKernel};
use crate::image::{self, Runner};
use crate::machine::Machine;
use crate::platform::{self, SimPlatform};
#[cfg(any(test, feature = "sabotage"))]
use crate::sabotage::Sabotage;
use crate::scenario::Scenario;

mod analysis;
mod digest;
mod nested;
mod observations;
mod pep;
mod probes;
mod records;
mod runtime;
mod sample;
mod schedule;
mod startup;

pub use digest::{
    CounterMetrics, NestedDigest, ReadDigest, ReadObserver, SleepDigest, TracedInterval, TracedRead,
};
pub use nested::{
    NestingSetup, PLATFORM_CALL_NS, UNMASKED_WINDOWS_PER_READ, notifications_per_window,
};
pub use observations::{Observations, ProcessorRecord};
use pep::PepUnderTest;
pub use ppm_caller::names::{
    UNDEFINED_DPM as UNDEFINED_DPM_NOTIFICATIONS, UNDEFINED_PPM as UNDEFINED_PPM_NOTIFICATIONS,
};
pub use records::{
    DeviceRecord, EngineSummary, HotplugChange, HotplugRecord, NestedCall, NestedNotification,
    PairAccess, Probe, ProbeKind, RawRead, ReadRecord, RegisterRecord, RegistrationRecord,
    SleepRecord, StartupQuery,
};
pub use startup::default_other_devices;

/// How to run a scenario: who observes the reads and which backend runs the PEP. The default
/// runs the real engine on a faithful platform.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// What a test substitutes for the real PEP or breaks in the platform and the kernel
    /// services, to show that the checks catch it (only with the `sabotage` feature; see
    /// [`crate::sabotage`]).
    #[cfg(any(test, feature = "sabotage"))]
    pub sabotage: Sabotage,
    /// Called with every runtime read as it is digested (`--trace`, `--plot`).
    pub read_observer: Option<ReadObserver>,
    /// The image backend: the runner that executes the image (`None`: the engine).
    pub image: Option<Arc<Runner>>,
    /// How an image run's two processes hand over (`crate::run_image`): spinning only for a
    /// command that makes one run at a time.
    pub handoff: crate::image::Handoff,
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
    /// The PEP under test, once `PoFx` accepted it. Dropped before `kernel`: the engine refers
    /// to the processor table in the kernel's pool.
    pep: Option<PepUnderTest>,
    observations: Observations,
    /// Called with every runtime read as it is digested.
    read_observer: Option<ReadObserver>,
    /// The image backend's runner.
    runner: Option<Arc<Runner>>,
    /// Owns the pool blocks the registered PEP uses (its processor table) until the run ends.
    #[allow(dead_code, reason = "held for its pool, freed when the emulator is dropped")]
    kernel: SimKernel<'a>,
}

impl<'a> Emulator<'a> {
    /// Builds the machine and loads the driver as Windows does: `DriverEntry` through the
    /// engine's sequence over the emulated kernel services ([`crate::driver_entry`]), on processor 0.
    #[must_use]
    pub fn new(scenario: &'a Scenario, options: &RunOptions) -> Self {
        let machine = Arc::new(Machine::new(scenario));
        #[cfg(not(any(test, feature = "sabotage")))]
        let platform = SimPlatform::new(Arc::clone(&machine));
        #[cfg(any(test, feature = "sabotage"))]
        let platform =
            SimPlatform::with_faults(Arc::clone(&machine), options.sabotage.platform.clone());
        let mut observations = Observations {
            image: None,
            registration: RegistrationRecord {
                version: 0,
                size: 0,
                device_callback: false,
                processor_callback: false,
                status: 0,
                injected: None,
            },
            driver_entry: None,
            devices: Vec::new(),
            processors: Vec::new(),
            probes: Vec::new(),
            documented_answers: Vec::new(),
            startup_queries: Vec::new(),
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
        let kernel = SimKernel::new(scenario, platform.clone());
        #[cfg(any(test, feature = "sabotage"))]
        let kernel = kernel.with_sabotage(&options.sabotage);
        platform::begin_trace();
        let (record, pep, image) = match &options.image {
            None => {
                let (record, pep) = kernel.run_driver_entry();
                (record, pep, None)
            }
            Some(runner) => {
                let load = image::load_driver(&kernel, runner, &platform);
                observations.image = Some(load.observation);
                (load.record, None, Some(load.callbacks))
            }
        };
        observations.absorb(&platform::take_trace());
        if let Some(registration) = record.registration {
            let info = registration.information;
            observations.registration = RegistrationRecord {
                version: info.version,
                size: info.size,
                device_callback: info.device_callback,
                processor_callback: info.processor_callback,
                status: registration.checked,
                injected: (registration.status != registration.checked)
                    .then_some(registration.status),
            };
        }
        let pep = match (pep, image) {
            (Some(instance), None) => {
                observations.engine = summarise(&instance);
                kernel
                    .registered_information()
                    .and_then(|info| Callbacks::of(&info))
                    .map(|callbacks| PepUnderTest::Engine { instance, callbacks })
            }
            (None, Some(Some(image))) => Some(PepUnderTest::image(image)),
            _ => None,
        };
        if observations.image.is_some() {
            observations.engine = summarise_state(&record);
        }
        observations.driver_entry = Some(record);
        Self {
            scenario,
            machine,
            pep,
            observations,
            read_observer: options.read_observer.clone(),
            runner: options.image.clone(),
            kernel,
        }
    }

    /// Runs the scenario and returns what was observed, with the machine (after a failed
    /// registration nothing runs: the observations hold the registration and what the engine
    /// detected at initialisation).
    #[must_use]
    pub fn run(mut self) -> (Observations, Arc<Machine>) {
        if let Some(pep) = self.pep.take() {
            self.offer_devices(&pep);
            if matches!(pep, PepUnderTest::Image { .. }) {
                // The image's device log is its own memory: what PoFx saw it decide.
                self.observations.engine.device_ids_seen = self
                    .observations
                    .devices
                    .iter()
                    .map(|device| (device.id.clone(), device.prepare_returned && device.accepted))
                    .collect();
            }
            self.initialise_processors(&pep);
            self.startup_queries(&pep);
            self.start_devices(&pep);
            self.runtime(&pep);
            self.unregister_last(&pep);
            if let Some(instance) = pep.instance() {
                self.observations.engine = summarise(instance);
            }
            if let Some((ledger, crash)) = pep.image_outcome()
                && let Some(observation) = self.observations.image.as_mut()
            {
                observation.ledger.absorb(ledger);
                if let Some(crash) = crash {
                    observation.crash.get_or_insert(crash);
                }
            }
        }
        if let (Some(runner), Some(observation)) = (&self.runner, self.observations.image.as_mut())
        {
            match runner
                .command(&serde_json::json!({"op": "report"}), &image::ImageHost::without_machine())
            {
                Ok(report) => observation.report = Some(report),
                Err(error) => {
                    observation.error.get_or_insert(error);
                }
            }
            if let Some(error) = runner.error() {
                observation.error.get_or_insert(error);
            }
        }
        (self.observations, self.machine)
    }

    const fn processor_count(&self) -> u32 {
        self.scenario.platform.processors
    }

    /// The runtime: samples every `sample_interval_ms` from 0 to `duration_ms`, the probes
    /// after the first sample, the events at their times.
    fn runtime(&mut self, pep: &PepUnderTest) {
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
        self.run_items(pep, origin, &schedule);
    }
}

/// What the image reported of itself: the `Boot` key it wrote (the values a VM's registry
/// shows), as [`summarise`] reads the engine.
fn summarise_state(record: &DriverEntryRecord) -> EngineSummary {
    use ppm_engine::driver::registry::state;
    let text = |name: &str| record.state_value(name).unwrap_or_default();
    let number = |name: &str| text(name).parse().unwrap_or(0);
    let reason = text(state::NO_COUNTERS_REASON);
    EngineSummary {
        counter_source: text(state::COUNTER_SOURCE),
        nominal_mhz: number(state::NOMINAL_MHZ),
        nominal_source: text(state::NOMINAL_RATE_SOURCE),
        no_counters_reason: (!reason.is_empty() && reason != "none").then_some(reason),
        perf_source: text(state::PERF_SOURCE),
        perf_capabilities: [
            number(state::HIGHEST_PERFORMANCE),
            number(state::NOMINAL_PERFORMANCE),
            number(state::LOWEST_NONLINEAR_PERFORMANCE),
            number(state::LOWEST_PERFORMANCE),
        ],
        device_ids_seen: Vec::new(),
    }
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
        // The driver's `Boot` vocabulary, so that a run compares with a VM's registry.
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
