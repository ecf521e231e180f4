//! The runtime's items: the schedule expanded, one entry at a time, into the processor-side
//! and device-side work each thread takes, ordered by [`Key`].

use crate::pofx::Action;
use crate::scenario::{EventKind, Scenario};

/// The order of items: time, action (the schedule's order at one instant), step (within an
/// action), processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    pub(super) at_ns: u64,
    pub(super) action: Action,
    pub(super) step: u32,
    pub(super) processor: u32,
}

impl Key {
    /// Before every item.
    pub(super) const START: Self =
        Self { at_ns: 0, action: Action::PowerOn(0), step: 0, processor: 0 };
    /// After every item.
    pub(super) const END: Self =
        Self { at_ns: u64::MAX, action: Action::Sample, step: 0, processor: 0 };
}

/// What an item does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Work {
    /// Processor side: `FEEDBACK_READ` of every counter the processor described.
    Sample,
    /// Processor side: wait for the conformance probes.
    Barrier,
    /// Processor side: event `n`'s effect on the processor's hardware.
    Hardware(usize),
    /// Processor side: the end of `msr-fault` or `counters-zero` `n`.
    EndFault(usize),
    /// Processor side: the end of `pmu-reprogrammed` `n` (the other owner re-enables).
    PmuResume(usize),
    /// Processor side: power-on after `sleep` `n`.
    PowerOn(usize),
    /// Processor side: `ENTER_SYSTEM_STATE` of `sleep` `n`, then power-off.
    Enter(usize),
    /// Processor side: `RESUME_FROM_SYSTEM_STATE` of `sleep` `n`.
    Resume(usize),
    /// Processor side: event `n` reads `target`'s counter on this processor.
    WrongProcessorRead {
        /// The event.
        event: usize,
        /// The processor whose handle is read.
        target: u32,
    },
    /// Processor side: `hot-add` `n`'s queries, as the processor.
    Initialise(usize),
    /// Processor side: wait for `hot-add` `n`'s `DEVICE_STARTED` before reading.
    AwaitStart(usize),
    /// Processor side: `hot-remove` `n`: stop reading the processor.
    Quiesce(usize),
    /// Device side: the conformance probes.
    Probes,
    /// Device side: `hot-add` `n`'s `PREPARE_DEVICE` and `REGISTER_DEVICE`.
    Register(usize),
    /// Device side: `hot-add` `n`'s `DEVICE_STARTED`.
    Start(usize),
    /// Device side: `hot-remove` `n`'s `UNREGISTER_DEVICE` and stale-handle probes.
    Unregister(usize),
}

impl Work {
    pub(super) const fn device_side(self) -> bool {
        matches!(self, Self::Probes | Self::Register(_) | Self::Start(_) | Self::Unregister(_))
    }

    /// Whether a processor-side item waits for another thread.
    pub(super) const fn waits(self) -> bool {
        matches!(
            self,
            Self::Barrier
                | Self::Initialise(_)
                | Self::AwaitStart(_)
                | Self::WrongProcessorRead { .. }
        )
    }
}

/// One unit of the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Item {
    pub(super) key: Key,
    pub(super) work: Work,
}

/// Which items a consumer takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Share {
    /// Every item (the single-threaded run).
    All,
    /// The device side's.
    Device,
    /// Processor worker `number`'s (of `workers`): the processor-side items of the processors
    /// `i` with `i % workers == number`.
    Worker { number: usize, workers: usize },
}

impl Share {
    /// Whether this share takes `work` on `processor`.
    fn takes(self, processor: u32, work: Work) -> bool {
        match self {
            Self::All => true,
            Self::Device => work.device_side(),
            Self::Worker { number, workers } => {
                !work.device_side() && processor as usize % workers.max(1) == number
            }
        }
    }

    /// The processors whose processor-side work on every processor this share takes.
    pub(super) fn processors(self, processors: u32) -> std::iter::StepBy<std::ops::Range<u32>> {
        let (first, step) = match self {
            Self::All => (0, 1),
            Self::Device => (processors, 1),
            Self::Worker { number, workers } => {
                (u32::try_from(number).unwrap_or(u32::MAX), workers.max(1))
            }
        };
        (first.min(processors)..processors).step_by(step)
    }
}

/// The items `share` takes, in key order, expanded from `schedule` (sorted by time, then
/// action, with one entry per time and action) one entry at a time: a run holds one sample's
/// items, not the whole run's.
pub(super) fn items<'s>(
    scenario: &'s Scenario,
    schedule: &'s [(u64, Action)],
    share: Share,
) -> impl Iterator<Item = Item> + 's {
    schedule.iter().flat_map(move |&(at_ns, action)| entry_items(scenario, at_ns, action, share))
}

/// The items of one schedule entry that `share` takes, in key order.
fn entry_items(scenario: &Scenario, at_ns: u64, action: Action, share: Share) -> Vec<Item> {
    let processors = scenario.platform.processors;
    let mut items = Vec::new();
    {
        let mut push = |step: u32, processor: u32, work: Work| {
            if share.takes(processor, work) {
                items.push(Item { key: Key { at_ns, action, step, processor }, work });
            }
        };
        let every = share.processors(processors);
        match action {
            Action::Sample => every.for_each(|index| push(0, index, Work::Sample)),
            Action::Probes => {
                push(0, 0, Work::Probes);
                every.for_each(|index| push(1, index, Work::Barrier));
            }
            Action::Event(number) => {
                let event = &scenario.events[number];
                let targets = event.processors.indexes(processors);
                match event.kind {
                    EventKind::CounterReset
                    | EventKind::MsrFault { .. }
                    | EventKind::CountersZero { .. }
                    | EventKind::PmuReprogrammed { .. }
                    | EventKind::Smi { .. } => {
                        for index in targets {
                            push(0, index, Work::Hardware(number));
                        }
                    }
                    EventKind::CounterNearWrap => {}
                    EventKind::WrongProcessorRead { on_processor } => {
                        for target in targets {
                            let on = on_processor.or_else(|| {
                                (1..processors)
                                    .map(|step| (target + step) % processors)
                                    .find(|&other| scenario.present_at(other, event.at_ms, number))
                            });
                            if let Some(on) = on {
                                push(
                                    target,
                                    on,
                                    Work::WrongProcessorRead { event: number, target },
                                );
                            }
                        }
                    }
                    EventKind::HotAdd => {
                        for index in targets {
                            push(0, index, Work::Register(number));
                            push(1, index, Work::Initialise(number));
                            push(2, index, Work::Start(number));
                            push(3, index, Work::AwaitStart(number));
                        }
                    }
                    EventKind::HotRemove => {
                        for index in targets {
                            push(0, index, Work::Quiesce(number));
                            push(1, index, Work::Unregister(number));
                        }
                    }
                    EventKind::Sleep { .. } => {
                        every.for_each(|index| push(0, index, Work::Enter(number)));
                    }
                }
            }
            Action::EndFault(number) | Action::PmuResume(number) => {
                let work = if matches!(action, Action::EndFault(_)) {
                    Work::EndFault(number)
                } else {
                    Work::PmuResume(number)
                };
                for index in scenario.events[number].processors.indexes(processors) {
                    push(0, index, work);
                }
            }
            Action::PowerOn(number) => {
                every.for_each(|index| push(0, index, Work::PowerOn(number)));
            }
            Action::Resume(number) => {
                every.for_each(|index| push(0, index, Work::Resume(number)));
            }
        }
    }
    items.sort_by_key(|item| item.key);
    items
}
