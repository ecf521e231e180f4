//! Each processor's load over runtime time, expanded from the scenario's phases.
//!
//! A [`Timeline`] of piecewise-constant [`Load`]s is what the simulated machine runs and what
//! the checks take as the truth ([`Activity`] over an interval). It is still the description
//! of a machine, not the simulation: `crate::machine` builds on it, never the other way.
//!
//! From the `hot-add`/`hot-remove` and `sleep` events: which processors are present when
//! ([`Scenario::initially_present`], [`Scenario::present_at`], indexed once when the scenario
//! is read) and when the system sleeps ([`Scenario::sleeps`], [`SleepWindows`]).

use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use super::spec::Scenario;
use super::types::{EventKind, Phase, ProcessorSet};

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;

/// A load: the delivered frequency while in C0 and the C0 residency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    /// Delivered frequency in C0, MHz.
    pub frequency_mhz: u32,
    /// C0 residency, percent.
    pub busy_percent: u32,
}

/// One piece of a [`Timeline`]: `load` from `start_ns` (runtime time) to the next segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Runtime time the segment starts at, ns.
    pub start_ns: u64,
    /// The load.
    pub load: Load,
}

/// True activity over an interval, in exact integer units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// C0 time weighted by residency: Σ busy % × ns.
    pub c0: u128,
    /// Delivered cycles: Σ MHz × busy % × ns.
    pub cycles: u128,
}

impl Activity {
    /// Adds another interval's activity.
    pub const fn add(&mut self, other: Self) {
        self.c0 += other.c0;
        self.cycles += other.cycles;
    }

    /// The C0-time-weighted delivered frequency, MHz (`None` without C0 time).
    #[must_use]
    #[allow(clippy::cast_precision_loss)] // A ratio reported in MHz; f64 keeps 15 digits.
    pub fn mean_mhz(&self) -> Option<f64> {
        (self.c0 != 0).then(|| self.cycles as f64 / self.c0 as f64)
    }
}

/// A processor's load over runtime time: sorted segments, the first at 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    segments: Vec<Segment>,
}

impl Timeline {
    /// The timeline of processor `index`: at each instant the covering phase that started
    /// last (the later in the file on a tie) applies; uncovered, the processor is idle at the
    /// nominal frequency.
    #[must_use]
    pub fn for_processor(scenario: &Scenario, index: u32) -> Self {
        let phases: Vec<(usize, &Phase)> = scenario
            .phases
            .iter()
            .enumerate()
            .filter(|(_, phase)| phase.processors.contains(index))
            .collect();
        Self::from_phases(scenario.platform.nominal_mhz, &phases)
    }

    /// Every processor's timeline; one pass over the phases' processor sets, then a sweep per
    /// distinct set of phases: processors that the same phases cover share one timeline
    /// (a phase on `"all"` costs one sweep, not one per processor). O(phases · log phases)
    /// per distinct set.
    #[must_use]
    pub fn for_all_processors(scenario: &Scenario) -> Vec<Arc<Self>> {
        let processors: Vec<u32> = (0..scenario.platform.processors).collect();
        let shared = Self::shared(scenario, &processors);
        processors.iter().filter_map(|index| shared.get(index).cloned()).collect()
    }

    /// The timelines of `processors`, one per distinct set of covering phases, shared.
    fn shared(scenario: &Scenario, processors: &[u32]) -> HashMap<u32, Arc<Self>> {
        let count = usize::try_from(scenario.platform.processors).unwrap_or(0);
        let mut wanted = vec![false; count];
        for &index in processors {
            if let Some(slot) = usize::try_from(index).ok().and_then(|i| wanted.get_mut(i)) {
                *slot = true;
            }
        }
        // Per wanted processor: the file indexes of the listed phases that cover it.
        let mut listed: Vec<Vec<usize>> = vec![Vec::new(); count];
        let mut all: Vec<(usize, &Phase)> = Vec::new();
        for (file_index, phase) in scenario.phases.iter().enumerate() {
            match &phase.processors {
                ProcessorSet::All => all.push((file_index, phase)),
                ProcessorSet::List(list) => {
                    for &processor in list {
                        let slot = usize::try_from(processor).ok();
                        if slot.and_then(|i| wanted.get(i)).is_some_and(|wanted| *wanted)
                            && let Some(phases) = slot.and_then(|i| listed.get_mut(i))
                        {
                            phases.push(file_index);
                        }
                    }
                }
            }
        }
        let mut by_set: HashMap<&[usize], Arc<Self>> = HashMap::new();
        let mut timelines = HashMap::with_capacity(processors.len());
        for &index in processors {
            let Some(own) = usize::try_from(index).ok().and_then(|i| listed.get(i)) else {
                continue;
            };
            let timeline = by_set
                .entry(own.as_slice())
                .or_insert_with(|| {
                    let mut phases: Vec<(usize, &Phase)> = all.clone();
                    phases.extend(
                        own.iter().map(|&file_index| (file_index, &scenario.phases[file_index])),
                    );
                    phases.sort_unstable_by_key(|(file_index, _)| *file_index);
                    Arc::new(Self::from_phases(scenario.platform.nominal_mhz, &phases))
                })
                .clone();
            timelines.insert(index, timeline);
        }
        timelines
    }

    /// When each of `processors` first runs in C0 (runtime ns; `None`: never), from the
    /// timelines built once per distinct set of covering phases.
    #[must_use]
    pub fn first_c0_times(scenario: &Scenario, processors: &[u32]) -> Vec<(u32, Option<u64>)> {
        let shared = Self::shared(scenario, processors);
        processors
            .iter()
            .map(|index| {
                let first = shared.get(index).and_then(|timeline| {
                    timeline
                        .segments
                        .iter()
                        .find(|segment| segment.load.busy_percent > 0)
                        .map(|segment| segment.start_ns)
                });
                (*index, first)
            })
            .collect()
    }

    /// The sweep: breakpoints in time order; at each, the phases starting there join a max-heap
    /// keyed by (start, file order) and ended phases leave it lazily from the top, whose phase
    /// is the one that applies.
    fn from_phases(nominal_mhz: u32, phases: &[(usize, &Phase)]) -> Self {
        let idle = Load { frequency_mhz: nominal_mhz, busy_percent: 0 };
        let start_ns = |phase: &Phase| u64::from(phase.start_ms) * NS_PER_MS;
        let end_ns =
            |phase: &Phase| phase.end_ms.map_or(u64::MAX, |end| u64::from(end) * NS_PER_MS);
        let mut breakpoints: Vec<u64> = vec![0];
        for (_, phase) in phases {
            breakpoints.push(start_ns(phase));
            if phase.end_ms.is_some() {
                breakpoints.push(end_ns(phase));
            }
        }
        breakpoints.sort_unstable();
        breakpoints.dedup();
        let mut by_start: Vec<usize> = (0..phases.len()).collect();
        by_start.sort_unstable_by_key(|&position| start_ns(phases[position].1));
        let mut pending = by_start.into_iter().peekable();
        // Max-heap of (start_ms, file index, position in `phases`).
        let mut active: BinaryHeap<(u32, usize, usize)> = BinaryHeap::new();
        let mut segments: Vec<Segment> = Vec::with_capacity(breakpoints.len());
        for at_ns in breakpoints {
            while let Some(&position) = pending.peek() {
                let (file_index, phase) = phases[position];
                if start_ns(phase) > at_ns {
                    break;
                }
                active.push((phase.start_ms, file_index, position));
                pending.next();
            }
            while let Some(&(_, _, position)) = active.peek() {
                if end_ns(phases[position].1) > at_ns {
                    break;
                }
                active.pop();
            }
            let load = active.peek().map_or(idle, |&(_, _, position)| Load {
                frequency_mhz: phases[position].1.frequency_mhz,
                busy_percent: phases[position].1.busy_percent,
            });
            if segments.last().is_none_or(|last| last.load != load) {
                segments.push(Segment { start_ns: at_ns, load });
            }
        }
        Self { segments }
    }

    /// A timeline of one constant load.
    #[must_use]
    pub fn constant(load: Load) -> Self {
        Self { segments: vec![Segment { start_ns: 0, load }] }
    }

    /// The segments.
    #[must_use]
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The load at runtime time `at_ns` and when it next changes (`u64::MAX`: never).
    #[must_use]
    pub fn load_at(&self, at_ns: u64) -> (Load, u64) {
        let next = self.segments.partition_point(|segment| segment.start_ns <= at_ns);
        let current = next.saturating_sub(1);
        let load = self
            .segments
            .get(current)
            .map_or(Load { frequency_mhz: 1, busy_percent: 0 }, |segment| segment.load);
        let change = self.segments.get(next).map_or(u64::MAX, |segment| segment.start_ns);
        (load, change)
    }

    /// The spans of constant load within runtime times `[from_ns, to_ns)`: (start, end,
    /// load), in order — one search, then a walk along the segments.
    #[must_use]
    pub fn spans(&self, from_ns: u64, to_ns: u64) -> Spans<'_> {
        self.spans_near(from_ns, to_ns, usize::MAX)
    }

    /// [`Self::spans`], looking for `from_ns` first just after segment index `hint` (where an
    /// earlier walk ended: time moves forward), searching only when it is not there.
    #[must_use]
    pub fn spans_near(&self, from_ns: u64, to_ns: u64, hint: usize) -> Spans<'_> {
        let starts_at_or_before = |index: usize| {
            self.segments.get(index).is_some_and(|segment| segment.start_ns <= from_ns)
        };
        let mut next = hint;
        let hint_usable =
            hint <= self.segments.len() && (hint == 0 || starts_at_or_before(hint - 1));
        let mut steps = 0;
        while hint_usable && steps < 8 && starts_at_or_before(next) {
            next += 1;
            steps += 1;
        }
        if !hint_usable || starts_at_or_before(next) {
            next = self.segments.partition_point(|segment| segment.start_ns <= from_ns);
        }
        Spans { segments: &self.segments, next, at: from_ns, to_ns }
    }

    /// The true activity over runtime times `[from_ns, to_ns)`.
    #[must_use]
    pub fn activity(&self, from_ns: u64, to_ns: u64) -> Activity {
        let mut activity = Activity::default();
        for (start, end, load) in self.spans(from_ns, to_ns) {
            let dt = u128::from(end - start);
            let busy = u128::from(load.busy_percent);
            activity.c0 += busy * dt;
            activity.cycles += u128::from(load.frequency_mhz) * busy * dt;
        }
        activity
    }

    /// The slowest and fastest frequencies at which the processor is in C0 during
    /// `[from_ns, to_ns)`, or `None` when it never is.
    #[must_use]
    pub fn frequency_range(&self, from_ns: u64, to_ns: u64) -> Option<(u32, u32)> {
        self.spans(from_ns, to_ns)
            .filter(|(_, _, load)| load.busy_percent > 0)
            .map(|(_, _, load)| load.frequency_mhz)
            .fold(None, |range, f| {
                Some(range.map_or((f, f), |(low, high): (u32, u32)| (low.min(f), high.max(f))))
            })
    }
}

/// The spans of constant load of a timeline over an interval (see [`Timeline::spans`]).
#[derive(Clone, Debug)]
pub struct Spans<'t> {
    segments: &'t [Segment],
    /// The first segment starting after `at`.
    next: usize,
    at: u64,
    to_ns: u64,
}

impl Spans<'_> {
    /// The index of the first segment starting after the walk's position: a hint for the
    /// next walk.
    #[must_use]
    pub const fn position(&self) -> usize {
        self.next
    }
}

impl Iterator for Spans<'_> {
    type Item = (u64, u64, Load);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.to_ns {
            return None;
        }
        let load = self
            .next
            .checked_sub(1)
            .and_then(|current| self.segments.get(current))
            .map_or(Load { frequency_mhz: 1, busy_percent: 0 }, |segment| segment.load);
        let change = self.segments.get(self.next).map_or(u64::MAX, |segment| segment.start_ns);
        let span = (self.at, change.min(self.to_ns), load);
        self.at = span.1;
        while self.segments.get(self.next).is_some_and(|segment| segment.start_ns <= self.at) {
            self.next += 1;
        }
        Some(span)
    }
}

/// The system's sleeps as windows, sorted by start: when the OS takes no samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SleepWindows {
    /// (start ms, resume ms), sorted by start; disjoint once the scenario is validated.
    windows: Vec<(u32, u32)>,
}

impl SleepWindows {
    /// The sleeps of a scenario.
    #[must_use]
    pub fn new(scenario: &Scenario) -> Self {
        let mut windows: Vec<(u32, u32)> =
            scenario.sleeps().into_iter().map(|(_, start, resume)| (start, resume)).collect();
        windows.sort_unstable();
        Self { windows }
    }

    /// The window whose inside (start < `at_ms` < resume) holds `at_ms`, if any: one binary
    /// search, the windows being disjoint.
    #[must_use]
    pub fn containing(&self, at_ms: u32) -> Option<(u32, u32)> {
        let after = self.windows.partition_point(|(start, _)| *start < at_ms);
        after
            .checked_sub(1)
            .and_then(|last| self.windows.get(last))
            .copied()
            .filter(|(_, resume)| at_ms < *resume)
    }

    /// Whether the system sleeps at `at_ms` (strictly between a sleep's start and resume).
    #[must_use]
    pub fn asleep(&self, at_ms: u32) -> bool {
        self.containing(at_ms).is_some()
    }

    /// The first sample time (a multiple of `interval_ms`) at or after `from_ms` at which the
    /// system is awake: each step leaves one sleep behind, so at most one step per sleep.
    #[must_use]
    pub fn first_awake_sample(&self, from_ms: u32, interval_ms: u32) -> u64 {
        let interval = u64::from(interval_ms.max(1));
        let mut sample = u64::from(from_ms).div_ceil(interval) * interval;
        while let Some((_, resume)) =
            u32::try_from(sample).ok().and_then(|sample| self.containing(sample))
        {
            sample = u64::from(resume).div_ceil(interval) * interval;
        }
        sample
    }
}

impl Scenario {
    /// Whether processor `index` is offered to the PEP at boot (its first `hot-add`/`hot-remove`
    /// event, if any, is not a `hot-add`).
    #[must_use]
    pub fn initially_present(&self, index: u32) -> bool {
        self.presence.initially_present(index)
    }

    /// Whether processor `index` is registered with the PEP when event `number` (at `at_ms`)
    /// happens: after every `hot-add`/`hot-remove` that comes before it (time, then file order).
    #[must_use]
    pub fn present_at(&self, index: u32, at_ms: u32, number: usize) -> bool {
        self.presence.present_at(index, at_ms, number)
    }

    /// The `sleep` events as (event number, start ms, resume ms), in file order.
    #[must_use]
    pub fn sleeps(&self) -> Vec<(usize, u32, u32)> {
        self.events
            .iter()
            .enumerate()
            .filter_map(|(number, event)| match event.kind {
                EventKind::Sleep { duration_ms, .. } => {
                    Some((number, event.at_ms, event.at_ms.saturating_add(duration_ms)))
                }
                _ => None,
            })
            .collect()
    }
}
