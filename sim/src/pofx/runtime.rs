//! The runtime: the emulated OS's actions over time — samples, probes, events — on one thread
//! or on one thread per processor plus a device thread.
//!
//! The schedule ([`Emulator::schedule`]) lists the actions in time order; it is expanded into
//! [`Item`]s, each either processor-side (it runs as one processor: a sample, an event's effect
//! on that processor's hardware, `ENTER`/`RESUME_FROM_SYSTEM_STATE`, a hot-added processor's
//! queries, a read on the wrong processor) or device-side (the conformance probes, and
//! `PREPARE`/`REGISTER`/`DEVICE_STARTED`/`UNREGISTER` of hot-plugged processors). Items are
//! ordered by a [`Key`]: time, action, step, processor.
//!
//! With `threads = "single"` one thread runs every item in key order. With `threads =
//! "per-processor"` each worker thread runs its own processors' items in key order while the
//! calling thread runs the device-side items, concurrently. A thread waits for another only
//! where it needs the other's result, and then only until the other has finished everything
//! ordered before the waiting item (a [`Coordinator`] publishes every thread's progress): a
//! hot-added processor's queries wait for its `REGISTER_DEVICE`, `DEVICE_STARTED` for the
//! queries and the processor's first read for `DEVICE_STARTED`; `UNREGISTER_DEVICE` waits until
//! the processor's thread has stopped reading it; a read on the wrong processor waits for the
//! target processor's thread (whose earlier reads bound the handle of that moment — and which
//! records every change of its handle with the key it happened at, so that a reader sees the
//! handle of its own moment however far that thread has run ahead); and the conformance probes
//! at time 0 wait for every processor's first read while the processor threads wait for the
//! probes. Since every thread waits only for keys below its own, no cycle of waits can form.
//!
//! Every processor's time is its own ([`Machine::processor_now_ns`]) and moves only with its
//! own items, so a run's results do not depend on how the threads interleave: a threaded run
//! observes exactly what the single-threaded run of the same scenario observes.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use ppm_caller::payload::handle;

use super::nested::NestingSetup;
use super::observations::{ProcessorRecord, Tally};
use super::pep::PepUnderTest;
use super::probes::{ProbeInputs, refused_read_probe, stale_handle_probes};
use super::records::{DeviceRecord, HotplugChange, HotplugRecord, Probe, ProbeKind, SleepRecord};
use super::sample::sample_processor;
use super::startup::initialise_processor;
use super::{Action, Emulator};

mod items;

use crate::machine::{Machine, NS_PER_MS};
use crate::scenario::{EventKind, Scenario};
use items::{Item, Key, Share, Work, items};

/// A processor's live handle and the counters it described (`None`: not registered).
type Live = Option<(usize, usize)>;

/// What every thread shares and what they tell each other.
struct Coordinator {
    state: Mutex<Progress>,
    changed: Condvar,
    /// Whether waits block (threads); a single thread runs items in key order, so whatever
    /// an item waits for is done already.
    blocking: bool,
}

struct Progress {
    /// The key of the item the device side is running or runs next (everything below is done).
    device_next: Key,
    /// The same per processor worker.
    worker_next: Vec<Key>,
    /// Per processor: the handle of its latest `REGISTER_DEVICE` (`None`: declined).
    registered: Vec<Option<usize>>,
    /// Per processor: its live handle and the counters it described, as they changed (the key
    /// of the item that changed them, oldest first), so that a reader sees them as of its own
    /// key however far the processor's thread has run ahead.
    live: Vec<Vec<(Key, Live)>>,
    /// A thread panicked: nobody waits any more.
    failed: bool,
}

impl Coordinator {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns the state once `ready` holds (at once without threads, or after a panic).
    fn wait_until(&self, ready: impl Fn(&Progress) -> bool) -> MutexGuard<'_, Progress> {
        let mut progress = self.lock();
        while self.blocking && !progress.failed && !ready(&progress) {
            progress = self.changed.wait(progress).unwrap_or_else(PoisonError::into_inner);
        }
        progress
    }

    fn publish(&self, change: impl FnOnce(&mut Progress)) {
        change(&mut self.lock());
        self.changed.notify_all();
    }
}

/// Marks the run failed if the thread unwinds, so that no other thread waits for it forever.
struct FailOnPanic<'c>(&'c Coordinator);

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.publish(|progress| progress.failed = true);
        }
    }
}

/// What every processor worker reads.
struct Run<'r> {
    pep: &'r PepUnderTest,
    machine: &'r Machine,
    scenario: &'r Scenario,
    /// Clock time of runtime time 0.
    origin: u64,
    /// Processor workers (1 without threads).
    workers: usize,
    coordinator: &'r Coordinator,
    /// Per processor, with nested notifications: how to nest.
    nesting: Vec<Option<NestingSetup>>,
}

/// One processor worker: the records of the processors `i` with `i % workers == worker`.
struct Worker<'r> {
    run: &'r Run<'r>,
    number: usize,
    records: Vec<ProcessorRecord>,
    tally: Tally,
    probes: Vec<(Key, Probe)>,
    /// `wrong-processor-read` events' reads: (key, the processor whose handle was read, when
    /// in runtime ms, on which processor, returned).
    foreign_reads: Vec<(Key, u32, f64, u32, bool)>,
    /// (sleep event, processor, resume, returned).
    system_states: Vec<(usize, u32, bool, bool)>,
}

impl Worker<'_> {
    fn record(&mut self, index: u32) -> Option<&mut ProcessorRecord> {
        self.records.get_mut(index as usize / self.run.workers)
    }

    fn wait_for_device_side(&self, key: Key) -> MutexGuard<'_, Progress> {
        self.run.coordinator.wait_until(|progress| progress.device_next >= key)
    }

    /// Runs the worker's items in key order. Its progress is published when the time moves
    /// on, before every item that waits (so that a waiting worker never holds others up) and
    /// at the end: others may see it a little late, never ahead of the truth.
    fn run_all(&mut self, items: impl Iterator<Item = Item>) {
        let _fail = FailOnPanic(self.run.coordinator);
        let worker = self.number;
        let mut published = None;
        for item in items {
            if published != Some(item.key.at_ns) || item.work.waits() {
                self.run.coordinator.publish(|progress| progress.worker_next[worker] = item.key);
                published = Some(item.key.at_ns);
            }
            self.run_item(item);
        }
        self.run.coordinator.publish(|progress| progress.worker_next[worker] = Key::END);
    }

    fn run_item(&mut self, item: Item) {
        let run = self.run;
        let index = item.key.processor;
        run.machine.advance_processor_clock_to(index, run.origin + item.key.at_ns + after(item));
        match item.work {
            Work::Sample => {
                // A handle of another processor is bound only once that processor has read
                // it: after the first sample (the probes' barrier).
                let nesting = run.nesting.get(index as usize).copied().flatten().map(|setup| {
                    if item.key.at_ns == 0 { NestingSetup { foreign: None } } else { setup }
                });
                if let Some(record) = self.record(index) {
                    // The previous sample's reads are settled now (see `ReadDigest`).
                    record.fold_reads(run.machine);
                    let (reads, trace) = sample_processor(run.pep, run.machine, record, nesting);
                    record.digest.add(reads);
                    self.tally.absorb(&trace);
                }
            }
            Work::Barrier | Work::AwaitStart(_) => drop(self.wait_for_device_side(item.key)),
            Work::Hardware(number) => {
                apply_on_processor(run.machine, run.scenario.events[number].kind, index);
            }
            Work::EndFault(number) => match run.scenario.events[number].kind {
                EventKind::CountersZero { .. } => run.machine.expose_counters(index),
                _ => run.machine.set_msr_fault(index, false),
            },
            Work::PmuResume(_) => run.machine.resume_fixed_counters(index),
            Work::PowerOn(_) => run.machine.power_on(index),
            Work::Enter(number) | Work::Resume(number) => self.system_state(item, number),
            Work::WrongProcessorRead { event, target } => {
                // The target's handle of that moment, bound by the target's own earlier reads.
                let key = item.key;
                let target_worker = target as usize % run.workers;
                let live = run
                    .coordinator
                    .wait_until(|progress| progress.worker_next[target_worker] >= key)
                    .live
                    .get(target as usize)
                    .and_then(|changes| changes.iter().rev().find(|(at, _)| *at < key))
                    .and_then(|(_, live)| *live);
                if let Some((handle_value, counters)) = live
                    && counters > 0
                {
                    let at = run.scenario.events[event].at_ms;
                    let (probe, trace) = refused_read_probe(
                        run.pep,
                        ProbeKind::WrongProcessor,
                        index,
                        handle_value,
                        0,
                        format!(
                            "event at {at} ms: FEEDBACK_READ of processor {target}'s counter on processor {index}"
                        ),
                    );
                    self.tally.absorb(&trace);
                    #[allow(clippy::cast_precision_loss, reason = "runtime ms for the trace")]
                    let time_ms =
                        run.machine.runtime_ns(run.machine.processor_now_ns(index)) as f64 / 1e6;
                    self.foreign_reads.push((item.key, target, time_ms, index, probe.returned));
                    self.probes.push((item.key, probe));
                }
            }
            Work::Initialise(_) => {
                let registered = self.wait_for_device_side(item.key).registered[index as usize];
                let Some(handle_value) = registered else { return };
                let mut tally = Tally::default();
                let Some(record) = self.record(index) else { return };
                record.handle = Some(handle_value);
                record.issued_handles.push(handle_value);
                record.removed = false;
                initialise_processor(run.pep, record, &mut tally);
                let counters = record.described_counters().len();
                self.tally.merge(tally);
                run.coordinator.publish(|progress| {
                    progress.live[index as usize].push((item.key, Some((handle_value, counters))));
                });
            }
            Work::Quiesce(_) => {
                if let Some(record) = self.record(index) {
                    record.handle = None;
                    record.removed = true;
                }
                run.coordinator
                    .publish(|progress| progress.live[index as usize].push((item.key, None)));
            }
            Work::Probes | Work::Register(_) | Work::Start(_) | Work::Unregister(_) => {}
        }
    }

    /// `ENTER_SYSTEM_STATE` and power-off, or `RESUME_FROM_SYSTEM_STATE`, as the processor.
    fn system_state(&mut self, item: Item, number: usize) {
        let run = self.run;
        let index = item.key.processor;
        let EventKind::Sleep { state, .. } = run.scenario.events[number].kind else { return };
        let resume = matches!(item.work, Work::Resume(_));
        let live = self.record(index).and_then(|record| record.handle);
        if let Some(handle_value) = live {
            let target = state.system_power_state();
            let pep_handle = handle(handle_value);
            let (returned, trace) = if resume {
                crate::platform::while_resuming(|| {
                    run.pep.returned(index, |callbacks| callbacks.resume(pep_handle, target))
                })
            } else {
                run.pep
                    .returned(index, |callbacks| callbacks.enter_system_state(pep_handle, target))
            };
            self.tally.absorb(&trace);
            self.system_states.push((number, index, resume, returned));
        }
        if !resume {
            run.machine.power_off(index);
        }
    }
}

/// How long after its instant an item happens, ns: the events of an instant (and the ends of
/// fault windows) take effect after the reads of that instant, so they happen 1 ns later —
/// which keeps every discontinuity they cause strictly between two reads.
const fn after(item: Item) -> u64 {
    match item.key.action {
        Action::Event(_) | Action::EndFault(_) | Action::PmuResume(_) => 1,
        Action::PowerOn(_) | Action::Resume(_) | Action::Sample | Action::Probes => 0,
    }
}

/// An event's effect on one processor's hardware, at the processor's time.
fn apply_on_processor(machine: &Machine, kind: EventKind, index: u32) {
    match kind {
        EventKind::CounterReset => machine.reset_counters(index),
        EventKind::MsrFault { .. } => machine.set_msr_fault(index, true),
        EventKind::CountersZero { .. } => machine.zero_counters(index),
        EventKind::PmuReprogrammed { values, duration_ms } => {
            let window = duration_ms.map(|length| u64::from(length) * NS_PER_MS);
            machine.reprogram_fixed_counters(index, values, window);
        }
        EventKind::Smi { duration_us, period_ms } => machine.arm_smi(
            index,
            u64::from(duration_us) * 1_000,
            period_ms.map(|period| u64::from(period) * NS_PER_MS),
        ),
        EventKind::CounterNearWrap
        | EventKind::WrongProcessorRead { .. }
        | EventKind::HotAdd
        | EventKind::HotRemove
        | EventKind::Sleep { .. } => {}
    }
}

/// The device side's own state.
struct DeviceSide {
    /// Per processor: its live handle, as the device side issued it.
    handles: Vec<Option<usize>>,
    /// Per processor: the device record of its pending `hot-add`.
    pending: Vec<Option<usize>>,
    probe_inputs: ProbeInputs,
    tally: Tally,
}

impl Emulator<'_> {
    /// Runs the items, on this thread or on processor threads with this thread as the device
    /// side, and merges what every thread observed into the observations.
    pub(super) fn run_items(
        &mut self,
        pep: &PepUnderTest,
        origin: u64,
        schedule: &[(u64, Action)],
    ) {
        let scenario = self.scenario;
        let machine = Arc::clone(&self.machine);
        let processors = self.processor_count();
        let threads = scenario.pofx.threads.processor_threads(processors) as usize;
        let workers = threads.max(1);
        let records = std::mem::take(&mut self.observations.processors);
        let live: Vec<Option<(usize, usize)>> = records
            .iter()
            .map(|record| record.handle.map(|live| (live, record.described_counters().len())))
            .collect();
        let nesting = (0..records.len())
            .map(|index| {
                scenario.pofx.nested_notifications.then(|| NestingSetup {
                    foreign: (records.len() > 1)
                        .then(|| live[(index + 1) % records.len()].map(|(other, _)| other))
                        .flatten(),
                })
            })
            .collect();
        let mut device = DeviceSide {
            handles: records.iter().map(|record| record.handle).collect(),
            pending: vec![None; records.len()],
            probe_inputs: self.probe_inputs(&records),
            tally: Tally::default(),
        };
        let coordinator = Coordinator {
            state: Mutex::new(Progress {
                device_next: Key::END,
                worker_next: vec![Key::END; workers],
                registered: vec![None; records.len()],
                live: live.iter().map(|initial| vec![(Key::START, *initial)]).collect(),
                failed: false,
            }),
            changed: Condvar::new(),
            blocking: threads > 0,
        };
        let run = Run {
            pep,
            machine: &machine,
            scenario,
            origin,
            workers,
            coordinator: &coordinator,
            nesting,
        };
        let mut owners: Vec<Worker<'_>> = (0..workers)
            .map(|number| Worker {
                run: &run,
                number,
                records: Vec::new(),
                tally: Tally::default(),
                probes: Vec::new(),
                foreign_reads: Vec::new(),
                system_states: Vec::new(),
            })
            .collect();
        for record in records {
            owners[record.index as usize % workers].records.push(record);
        }
        if threads == 0 {
            for item in items(scenario, schedule, Share::All) {
                if item.work.device_side() {
                    self.device_item(&run, &mut device, item);
                } else {
                    owners[0].run_item(item);
                }
            }
        } else {
            let device_items: Vec<Item> = items(scenario, schedule, Share::Device).collect();
            let shares: Vec<Share> =
                (0..workers).map(|number| Share::Worker { number, workers }).collect();
            coordinator.publish(|progress| {
                progress.device_next = device_items.first().map_or(Key::END, |item| item.key);
                for (next, share) in progress.worker_next.iter_mut().zip(&shares) {
                    *next =
                        items(scenario, schedule, *share).next().map_or(Key::END, |item| item.key);
                }
            });
            std::thread::scope(|scope| {
                for (owner, share) in owners.iter_mut().zip(shares) {
                    let _ = std::thread::Builder::new()
                        .name(format!("ppm-sim processor worker {}", owner.number))
                        .spawn_scoped(scope, move || {
                            owner.run_all(items(scenario, schedule, share));
                        })
                        .inspect_err(|_| coordinator.publish(|progress| progress.failed = true))
                        .expect("a processor worker thread");
                }
                let _fail = FailOnPanic(&coordinator);
                for item in device_items {
                    coordinator.publish(|progress| progress.device_next = item.key);
                    self.device_item(&run, &mut device, item);
                }
                coordinator.publish(|progress| progress.device_next = Key::END);
            });
        }
        self.merge(owners, device);
    }

    /// One device-side item, on the calling thread.
    fn device_item(&mut self, run: &Run<'_>, device: &mut DeviceSide, item: Item) {
        let pep = run.pep;
        let index = item.key.processor;
        let slot = index as usize;
        let key = item.key;
        let worker = slot % run.workers;
        match item.work {
            Work::Probes => {
                drop(
                    run.coordinator.wait_until(|progress| {
                        progress.worker_next.iter().all(|next| *next >= key)
                    }),
                );
                let inputs = device.probe_inputs.clone();
                self.run_probes(pep, &inputs);
            }
            Work::Register(number) => {
                let id = self.scenario.platform.device_ids.device_id(index);
                let (returned, accepted, trace) = pep.prepare(Some(&id));
                device.tally.absorb(&trace);
                let device_number = self.observations.devices.len();
                let mut record = DeviceRecord {
                    id,
                    processor: Some(index),
                    prepare_returned: returned,
                    accepted,
                    registered: None,
                    started: None,
                };
                let live = if returned && accepted {
                    let kernel_handle = 0xFFFF_C000_0000_0000 + (device_number + 1) * 0x100;
                    let (register, trace) = pep.register(&record.id, kernel_handle);
                    device.tally.absorb(&trace);
                    record.registered = Some(register);
                    register.live_handle()
                } else {
                    None
                };
                self.observations.devices.push(record);
                device.handles[slot] = live;
                device.pending[slot] = Some(device_number);
                run.coordinator.publish(|progress| progress.registered[slot] = live);
                self.observations.hotplug.push(HotplugRecord {
                    event: number,
                    at_ms: self.scenario.events[number].at_ms,
                    processor: index,
                    change: HotplugChange::Added { device: device_number },
                });
            }
            Work::Start(_) => {
                drop(run.coordinator.wait_until(|progress| progress.worker_next[worker] >= key));
                let (Some(handle_value), Some(device_number)) =
                    (device.handles[slot], device.pending[slot].take())
                else {
                    return;
                };
                let (returned, trace) =
                    pep.returned(0, |callbacks| callbacks.device_started(handle(handle_value)));
                device.tally.absorb(&trace);
                if let Some(record) = self.observations.devices.get_mut(device_number) {
                    record.started = Some(returned);
                }
            }
            Work::Unregister(number) => {
                drop(run.coordinator.wait_until(|progress| progress.worker_next[worker] >= key));
                let handle_value = device.handles[slot].take();
                let (returned, stale_probes) = handle_value.map_or((false, Vec::new()), |live| {
                    let (returned, trace) =
                        pep.returned(0, |callbacks| callbacks.unregister(handle(live)));
                    device.tally.absorb(&trace);
                    let probes = stale_handle_probes(pep, index, live)
                        .into_iter()
                        .map(|(probe, trace)| {
                            device.tally.absorb(&trace);
                            probe
                        })
                        .collect();
                    (returned, probes)
                });
                self.observations.hotplug.push(HotplugRecord {
                    event: number,
                    at_ms: self.scenario.events[number].at_ms,
                    processor: index,
                    change: HotplugChange::Removed { handle: handle_value, returned, stale_probes },
                });
            }
            _ => {}
        }
    }

    /// Puts what the workers and the device side observed into the observations.
    fn merge(&mut self, owners: Vec<Worker<'_>>, device: DeviceSide) {
        let mut records = Vec::new();
        let mut probes = Vec::new();
        let mut foreign_reads = Vec::new();
        let mut system_states = Vec::new();
        let mut tally = device.tally;
        for owner in owners {
            records.extend(owner.records);
            probes.extend(owner.probes);
            foreign_reads.extend(owner.foreign_reads);
            system_states.extend(owner.system_states);
            tally.merge(owner.tally);
        }
        records.sort_by_key(|record| record.index);
        // A read of a processor's handle made on another processor (a `wrong-processor-read`
        // event) counts among that processor's reads as --trace, --plot and the report show
        // them: refused, its counts not the PEP's (0).
        foreign_reads.sort_by_key(|read| read.0);
        for (_, target, time_ms, _, returned) in foreign_reads {
            if let Some(record) = records.iter_mut().find(|record| record.index == target) {
                record.digest.note_foreign_read(target, time_ms, returned);
            }
        }
        self.observations.processors = records;
        probes.sort_by_key(|(key, _)| *key);
        self.observations.probes.extend(probes.into_iter().map(|(_, probe)| probe));
        system_states.sort_unstable();
        for (number, start, resume) in self.scenario.sleeps() {
            let EventKind::Sleep { state, .. } = self.scenario.events[number].kind else {
                continue;
            };
            let calls = |resumed: bool| -> Vec<(u32, bool)> {
                system_states
                    .iter()
                    .filter(|(event, _, resume, _)| *event == number && *resume == resumed)
                    .map(|(_, processor, _, returned)| (*processor, *returned))
                    .collect()
            };
            self.observations.sleeps.push(SleepRecord {
                event: number,
                state,
                window_ms: (start, resume),
                entered: calls(false),
                resumed: calls(true),
            });
        }
        tally.merge_into(&mut self.observations);
    }
}
