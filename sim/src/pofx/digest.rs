//! The runtime's reads, digested as they are made.
//!
//! The digest keeps what `feedback.*`, `dpm.hotplug`, `ppm.system_state` and
//! `feedback.reentrancy` need of the reads, so that a run's memory is bounded by its processor
//! count, not by its read count (2048 processors for 60 s make 8 million reads). It measures
//! every interval between served reads and, since it keeps no read past its interval, applies
//! the per-interval rules of [`crate::verdict`] there, recording what breaks them as
//! [`Findings`]; the checks judge the findings.
//!
//! A sample's reads are folded into the digest one sample later — at the processor's next
//! sample, after its clock was advanced there, or at the end of the run — never at once: by
//! then every counter discontinuity at or before them has been recorded (a processor's hardware
//! events run in time order on the processor's own worker, and an overflow is recorded when the
//! clock passes it), and a discontinuity recorded later lies after them, so each finding is the
//! one the complete list of reads gives. A window still open (counters reading zero) is open
//! past every folded read, which is all the checks ask of it.

use std::collections::BTreeSet;

use crate::machine::{Activity, DiscontinuityKind, Machine, NS_PER_MS};
use crate::scenario::Scenario;
use crate::verdict::Findings;

use ppm_engine::counters::PAIR_BOUND_NS;

use super::records::{PairAccess, RawRead, ReadRecord};

mod events;
mod interval;

use interval::{Interval, interval, interval_accuracy, traced_interval};

/// One runtime read as `--trace` and `--plot` see it, when it is digested.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TracedRead {
    /// When the read took its nominal count (or returned), runtime ms.
    pub time_ms: f64,
    /// The processor.
    pub processor: u32,
    /// `CounterIndex`.
    pub counter_index: u32,
    /// `NominalCount` returned.
    pub nominal: u64,
    /// `ActualCount` returned.
    pub actual: u64,
    /// Whether the PEP served it (TRUE).
    pub served: bool,
    /// Whether an MSR read faulted during the call.
    pub faulted: bool,
    /// Whether the read was made on another processor than the handle's (a
    /// `wrong-processor-read` event): it must be refused.
    pub foreign: bool,
    /// Since the previous served read of the counter on the same handle: what Windows
    /// differences (none for the first read, a refused one, or a new handle).
    pub interval: Option<TracedInterval>,
}

/// The interval a served read closes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TracedInterval {
    /// `ΔNominalCount` (negative when the PEP went backwards).
    pub delta_nominal: i128,
    /// `ΔActualCount`.
    pub delta_actual: i128,
    /// `NominalRate × ΔActual / ΔNominal` with the FREQUENCY counter's rate, MHz (`None` when
    /// `ΔNominal` is not positive).
    pub measured_mhz: Option<f64>,
    /// The processor's true delivered MHz over the interval, C0-weighted (`None`: idle).
    pub true_mhz: Option<f64>,
    /// Whether the counters jumped during it (a reset, a wrap, a sleep, counters stopped).
    pub discontinuity: bool,
}

/// Sees every runtime read as it is digested (from any processor worker thread).
#[derive(Clone)]
pub struct ReadObserver(pub std::sync::Arc<dyn Fn(&TracedRead) + Send + Sync>);

impl std::fmt::Debug for ReadObserver {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("ReadObserver")
    }
}

/// The most counters per processor the OS reads (`QUERY_FEEDBACK_COUNTERS` describes at most
/// 64); reads of a higher index are counted, not measured.
const MAX_COUNTERS: usize = 64;

/// One processor's reads, digested.
#[derive(Clone, Debug, Default)]
pub struct ReadDigest {
    /// The latest sample's reads, folded at the next one.
    pending: Vec<ReadRecord>,
    /// Where this processor's counters jumped, as far as the last fold saw.
    jumps: Jumps,
    /// Runtime reads issued.
    pub reads: usize,
    /// Runtime reads refused (FALSE).
    pub refused: usize,
    /// Reads on working counters (no MSR read faulted during the call).
    pub working: usize,
    /// Reads refused although the counters worked.
    pub refused_working: Findings,
    /// Reads served (TRUE).
    pub served: usize,
    /// Served reads that did not read the counter pair back to back with interrupts masked.
    pub access_problems: Findings,
    /// Served reads of a pair back to back, masked: (actual MSR, nominal MSR), how many.
    pub msr_pairs: Vec<((u32, u32), usize)>,
    /// Reads during which an MSR read faulted.
    pub faulted: usize,
    /// Reads served although an MSR read faulted.
    pub faulted_served: Findings,
    /// Every handle with a served read.
    served_handles: BTreeSet<usize>,
    /// Per counter index: the measurements over consecutive served reads.
    counters: Vec<CounterDigest>,
    /// Per `sleep` of the scenario, in order.
    pub sleeps: Vec<SleepDigest>,
    /// `feedback.reentrancy`, when nested notifications are modelled.
    pub nested: Option<NestedDigest>,
    /// What `feedback.interval_accuracy` allows an interval.
    interval_bound: IntervalBound,
    /// Sees every read as it is digested.
    observer: Option<ReadObserver>,
}

/// The skew part of what one interval's rate may miss its truth by
/// ([`crate::verdict::interval_allowance`]): the cycles the processor truly made in the time a
/// pair's actual read may precede its nominal read, at each end of the interval — at most one
/// `RDMSR` plus the engine's pair bound ([`PAIR_BOUND_NS`]).
#[derive(Clone, Copy, Debug, Default)]
struct IntervalBound {
    /// The most time between a served pair's two reads, ns.
    skew_ns: u64,
}

/// A counter's measurements and its latest served read.
#[derive(Clone, Debug)]
struct CounterDigest {
    last: Option<ReadRecord>,
    metrics: CounterMetrics,
    /// Where in the processor's timeline the counter's last interval ended (see
    /// [`Machine::interval_truth`]).
    segment_hint: usize,
    /// The cycles the processor truly made in the skew window before `last`'s nominal read
    /// (see [`IntervalBound`]).
    last_window_cycles: u128,
    /// [`Self::segment_hint`] for the skew windows.
    window_hint: usize,
}

/// What one processor's reads showed of one `sleep`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SleepDigest {
    /// The sleep's resume, runtime ns.
    resume_ns: u64,
    /// A read after the resume found working counters.
    pub working_after: bool,
    /// A read after the resume was served.
    pub served_after: bool,
    /// Intervals from before the sleep to after the resume.
    pub across: usize,
    /// Intervals across the sleep that counted more than the processor made since its reset.
    pub failures: Findings,
}

/// What `feedback.reentrancy` needs of one processor's reads.
#[derive(Clone, Debug, Default)]
pub struct NestedDigest {
    /// Outer reads served.
    pub outer: usize,
    /// Nested notifications delivered.
    pub calls: usize,
    /// Nested reads of the interrupted read's own counter (injection points).
    pub points: usize,
    /// Nested reads served.
    pub nested: usize,
    /// Nested notifications answered wrongly.
    pub failures: Findings,
    /// Nested notifications delivered inside a masked section.
    pub masked: Findings,
    /// Per handle, whether its totals track the hardware exactly (`None`: not checked, as
    /// with the fixed counters).
    exactness: Option<Vec<HandleExactness>>,
}

/// One served read of a handle's counters, outer or nested.
#[derive(Clone, Copy, Debug)]
struct Served {
    raw: RawRead,
    nominal: u64,
    actual: u64,
    what: &'static str,
}

/// A handle's run of served reads, for `feedback.reentrancy`'s exactness.
#[derive(Clone, Debug)]
struct HandleExactness {
    handle: usize,
    previous: Option<Served>,
    /// The read that began the current run without a discontinuity.
    base: Option<Served>,
    /// The first problem.
    problem: Option<String>,
    /// A problem after which the handle's reads say nothing more.
    stopped: bool,
}

/// A closed range of clock time, ns.
type Window = (u64, u64);

/// The machine's facts a fold needs about one processor.
struct Facts<'m> {
    machine: &'m Machine,
    index: u32,
    nominal_mhz: f64,
    /// The FREQUENCY counter's `NominalRate`, as the PEP described it (MHz): what Windows
    /// multiplies the ratio by.
    frequency_rate_mhz: u32,
    /// ARM64: the constant counter's rate (`cntfrq_hz`), which the PEP scales to
    /// `NominalRate`.
    constant_hz: Option<u64>,
    /// Where the counters jumped, as the interval checks ask it.
    jumps: &'m Jumps,
}

impl Facts<'_> {
    fn runtime_ms(&self, at_ns: u64) -> u64 {
        self.machine.runtime_ns(at_ns) / NS_PER_MS
    }

    /// How far `NominalCount` moves per tick of the nominal counter: 1 on x86 (MPERF and the
    /// fixed counters count at the nominal rate), `NominalRate` / `CNTFRQ_EL0` on ARM64 (the
    /// PEP scales the constant counter's ticks to `NominalRate`).
    #[allow(clippy::cast_precision_loss, reason = "a rate's ratio; f64 keeps 15 digits")]
    fn nominal_step(&self) -> f64 {
        self.constant_hz.map_or(1.0, |constant_hz| {
            (f64::from(self.frequency_rate_mhz) * 1e6 / constant_hz.max(1) as f64).max(1.0)
        })
    }

    /// ARM64: `constant` ticks of the constant counter in cycles of `NominalRate`, rounded down
    /// (the PEP reports the constant count so scaled); `None` on x86, where counts are reported
    /// as they are.
    fn scaled_nominal(&self, constant: u64) -> Option<u64> {
        let constant_hz = self.constant_hz?;
        let scaled = u128::from(constant) * u128::from(self.frequency_rate_mhz) * 1_000_000
            / u128::from(constant_hz.max(1));
        Some(u64::try_from(scaled).unwrap_or(u64::MAX))
    }
}

/// Where a processor's counters jumped, kept up to date as the machine records discontinuities
/// (its list only grows) and queried in O(log n) per interval — every discontinuity but a
/// near-wrap set before the first read: an interval touching one may be lost by a correct PEP
/// (a fixed counter's wrap modulo its width is no discontinuity) — and, among them, the windows
/// in which the counters read zero (`counters-zero`, open until the counters are exposed):
/// nothing can be measured then, so there is no expectation for that time, and no counts may
/// be reported for it. Rebuilding this at every sample made a run cost samples × events.
#[derive(Clone, Debug, Default)]
pub struct Jumps {
    /// How many of the machine's discontinuities are in.
    known: usize,
    /// Every discontinuity but a near-wrap, clock ns, sorted.
    times: Vec<u64>,
    /// The instantaneous ones (every one but a near-wrap, a zeroing and a PMU stop), sorted.
    points: Vec<u64>,
    /// The ones that last: PMU stops `(at, until)` and zero windows `(zeroed, exposed)` (open:
    /// `u64::MAX`), sorted by start: (window, whether a zero window, the running maximum of
    /// the ends so far).
    spans: Vec<(Window, bool, u64)>,
    /// The zero windows, in order (they do not overlap: the counters are zeroed only while
    /// exposed).
    zero: Vec<Window>,
}

impl Jumps {
    /// Takes in the discontinuities of processor `index` recorded since the last call.
    fn update(&mut self, machine: &Machine, index: u32) {
        let new = machine.discontinuities_since(index, self.known);
        self.known += new.len();
        for jump in new {
            if jump.kind == DiscontinuityKind::NearWrap {
                continue;
            }
            insert_sorted(&mut self.times, jump.at_ns);
            match jump.kind {
                DiscontinuityKind::Zeroed => {
                    self.zero.push((jump.at_ns, u64::MAX));
                    self.add_span((jump.at_ns, u64::MAX), true);
                }
                DiscontinuityKind::PmuStopped { until_ns } => {
                    self.add_span((jump.at_ns, until_ns), false);
                }
                DiscontinuityKind::Exposed => {
                    insert_sorted(&mut self.points, jump.at_ns);
                    // The first exposure after a zeroing closes its window: the last one, the
                    // only one open (the counters are zeroed only while exposed).
                    if let Some(window) = self.zero.last_mut()
                        && window.1 == u64::MAX
                        && window.0 <= jump.at_ns
                    {
                        window.1 = jump.at_ns;
                        let start = window.0;
                        let first = self.spans.partition_point(|((from, _), _, _)| *from < start);
                        let open = self.spans[first..].iter().position(|((from, to), zero, _)| {
                            *zero && *from == start && *to == u64::MAX
                        });
                        if let Some(offset) = open {
                            self.spans[first + offset].0.1 = jump.at_ns;
                            self.refresh_ends(first + offset);
                        }
                    }
                }
                _ => insert_sorted(&mut self.points, jump.at_ns),
            }
        }
    }

    fn add_span(&mut self, window: Window, zero: bool) {
        let position = self.spans.partition_point(|((from, _), _, _)| *from <= window.0);
        self.spans.insert(position, (window, zero, 0));
        self.refresh_ends(position);
    }

    /// Recomputes the running maximum of the ends from span `from` on (usually the last).
    fn refresh_ends(&mut self, from: usize) {
        let mut end =
            from.checked_sub(1).and_then(|last| self.spans.get(last)).map_or(0, |span| span.2);
        for (window, _, running) in self.spans.iter_mut().skip(from) {
            end = end.max(window.1);
            *running = end;
        }
    }

    /// Whether a jump lies within the closed window `[from, to]` (an interval touching it).
    fn touches(&self, from: u64, to: u64) -> bool {
        let point = self.points.partition_point(|at| *at < from);
        if self.points.get(point).is_some_and(|at| *at <= to) {
            return true;
        }
        // Spans starting at or before `to` whose end reaches `from`.
        let started = self.spans.partition_point(|((start, _), _, _)| *start <= to);
        started
            .checked_sub(1)
            .and_then(|last| self.spans.get(last))
            .is_some_and(|(_, _, end)| *end >= from)
    }

    /// Whether a jump lies in `(after, until]`.
    fn jumped(&self, after: u64, until: u64) -> bool {
        let next = self.times.partition_point(|at| *at <= after);
        self.times.get(next).is_some_and(|at| *at <= until)
    }

    /// Whether `[from, to]` lies within one zero window.
    fn within_zero(&self, from: u64, to: u64) -> bool {
        let started = self.zero.partition_point(|(start, _)| *start <= from);
        started
            .checked_sub(1)
            .and_then(|last| self.zero.get(last))
            .is_some_and(|(_, end)| to <= *end)
    }
}

/// Inserts `value` into the sorted `list` (at the end when it is the latest, as usual).
fn insert_sorted(list: &mut Vec<u64>, value: u64) {
    let position = list.partition_point(|at| *at <= value);
    list.insert(position, value);
}

impl ReadDigest {
    /// A read of this processor's handle made on another processor (a `wrong-processor-read`
    /// event) at `time_ms` runtime ms, which the PEP `returned`: counted among the reads (and
    /// the refused ones when refused) and passed to the observer as a read of counter 0 with
    /// counts 0, no interval. The digest's served intervals are not affected.
    pub fn note_foreign_read(&mut self, processor: u32, time_ms: f64, returned: bool) {
        self.reads += 1;
        self.refused += usize::from(!returned);
        if let Some(observer) = &self.observer {
            (observer.0)(&TracedRead {
                time_ms,
                processor,
                counter_index: 0,
                nominal: 0,
                actual: 0,
                served: returned,
                faulted: false,
                foreign: true,
                interval: None,
            });
        }
    }

    /// An empty digest for a processor of `scenario`.
    #[must_use]
    pub fn new(scenario: &Scenario, observer: Option<ReadObserver>) -> Self {
        let nested = scenario.pofx.nested_notifications.then(|| NestedDigest {
            exactness: (!scenario.uses_fixed_counters()).then(Vec::new),
            ..NestedDigest::default()
        });
        Self {
            observer,
            interval_bound: IntervalBound {
                skew_ns: u64::from(scenario.platform.msr_read_ns) + PAIR_BOUND_NS,
            },
            sleeps: scenario
                .sleeps()
                .into_iter()
                .map(|(_, _, resume_ms)| SleepDigest {
                    resume_ns: u64::from(resume_ms) * NS_PER_MS,
                    ..SleepDigest::default()
                })
                .collect(),
            nested,
            ..Self::default()
        }
    }

    /// Adds a sample's reads; they are folded at the next [`Self::fold`].
    pub fn add(&mut self, reads: impl IntoIterator<Item = ReadRecord>) {
        self.pending.extend(reads);
    }

    /// Folds the reads added so far, of processor `index` whose `QUERY_CAPABILITIES` answered
    /// `capabilities` (`FeedbackCounterCount`, `IdleStateCount`) and whose FREQUENCY counter
    /// has `NominalRate` `frequency_rate`: call it at the processor's next sample, after its
    /// clock was advanced there, and at the end of the run.
    pub fn fold(
        &mut self,
        machine: &Machine,
        index: u32,
        capabilities: Option<(u32, u32)>,
        frequency_rate: Option<u32>,
    ) {
        if self.pending.is_empty() {
            return;
        }
        self.jumps.update(machine, index);
        // Out of `self` while the reads are folded into it.
        let jumps = std::mem::take(&mut self.jumps);
        let facts = Facts {
            machine,
            index,
            nominal_mhz: f64::from(machine.nominal_mhz()),
            frequency_rate_mhz: frequency_rate.unwrap_or_else(|| machine.nominal_mhz()),
            constant_hz: machine.cpu().arm.map(|arm| u64::from(arm.cntfrq_hz)),
            jumps: &jumps,
        };
        let pending = std::mem::take(&mut self.pending);
        for read in pending {
            self.fold_read(&facts, capabilities, read);
        }
        self.jumps = jumps;
    }

    #[allow(clippy::cast_precision_loss)] // A time in milliseconds, for the trace.
    fn fold_read(&mut self, facts: &Facts<'_>, capabilities: Option<(u32, u32)>, read: ReadRecord) {
        self.reads += 1;
        self.refused += usize::from(!read.returned);
        if !read.faulted {
            self.working += 1;
            if !read.returned {
                self.refused_working.push_with(|| {
                    format!(
                        "processor {} counter {} at {} ms: refused on its own processor with working counters",
                        facts.index,
                        read.counter_index,
                        facts.runtime_ms(read.at_ns)
                    )
                });
            }
        }
        self.note_access(facts, &read);
        let runtime_ns = facts.machine.runtime_ns(read.at_ns);
        for sleep in &mut self.sleeps {
            if runtime_ns >= sleep.resume_ns {
                sleep.working_after |= !read.faulted;
                sleep.served_after |= read.returned;
            }
        }
        if let Some(nested) = &mut self.nested {
            nested.fold(facts, capabilities, &read);
        }
        let observed = self.observer.is_some().then(|| TracedRead {
            time_ms: facts.machine.runtime_ns(read.at_ns) as f64 / 1e6,
            processor: facts.index,
            counter_index: read.counter_index,
            nominal: read.nominal,
            actual: read.actual,
            served: read.returned,
            faulted: read.faulted,
            foreign: false,
            interval: None,
        });
        let interval = self.fold_served(facts, read);
        if let (Some(observer), Some(mut observed)) = (&self.observer, observed) {
            observed.interval = interval;
            (observer.0)(&observed);
        }
    }

    /// The measurements of a served read's counter: the interval it closes. Returns the
    /// interval as traced, when there is an observer.
    fn fold_served(&mut self, facts: &Facts<'_>, read: ReadRecord) -> Option<TracedInterval> {
        let Ok(slot) = usize::try_from(read.counter_index) else { return None };
        if !read.returned || slot >= MAX_COUNTERS {
            return None;
        }
        while self.counters.len() <= slot {
            let counter_index = u32::try_from(self.counters.len()).unwrap_or(u32::MAX);
            self.counters.push(CounterDigest {
                last: None,
                metrics: CounterMetrics::new(counter_index, 0),
                segment_hint: 0,
                last_window_cycles: 0,
                window_hint: 0,
            });
        }
        let counter = self.counters.get_mut(slot)?;
        counter.metrics.served += 1;
        let mut after = read;
        after.nested = Vec::new();
        // The cycles made in the skew window before this read's nominal read: what the actual
        // read, up to the bound earlier, may have missed or caught.
        let window_cycles = facts
            .machine
            .interval_truth(
                facts.index,
                after.at_ns.saturating_sub(self.interval_bound.skew_ns),
                after.at_ns,
                &mut counter.window_hint,
            )
            .0
            .cycles;
        let mut traced = None;
        if let Some(before) = counter.last.take() {
            // A processor registered again (hot-added after a hot-remove) is a new device with
            // new counters: the OS does not difference across handles.
            if before.handle == after.handle {
                let (activity, range) = facts.machine.interval_truth(
                    facts.index,
                    before.at_ns,
                    after.at_ns,
                    &mut counter.segment_hint,
                );
                let pair = Interval::new(facts, &before, &after, activity, range);
                interval(facts, &mut counter.metrics, &pair);
                interval_accuracy(
                    facts,
                    counter.last_window_cycles + window_cycles,
                    &mut counter.metrics,
                    &pair,
                );
                traced = self.observer.is_some().then(|| traced_interval(facts, &pair));
                for sleep in &mut self.sleeps {
                    sleep.interval(facts, after.counter_index, &before, &after);
                }
            }
        }
        counter.last = Some(after);
        counter.last_window_cycles = window_cycles;
        traced
    }

    /// What `feedback.fault_refused`, `feedback.read_masked`, `feedback.counter_msrs` and
    /// `dpm.hotplug` need of one read.
    fn note_access(&mut self, facts: &Facts<'_>, read: &ReadRecord) {
        if read.faulted {
            self.faulted += 1;
            if read.returned {
                self.faulted_served.push_with(|| {
                    format!(
                        "processor {} counter {}: an MSR read faulted but the read returned TRUE",
                        facts.index, read.counter_index
                    )
                });
            }
        }
        if read.returned {
            self.served += 1;
            match &read.access {
                PairAccess::BackToBackMasked { actual_msr, nominal_msr } => {
                    let pair = (*actual_msr, *nominal_msr);
                    match self.msr_pairs.iter_mut().find(|(seen, _)| *seen == pair) {
                        Some((_, count)) => *count += 1,
                        None => self.msr_pairs.push((pair, 1)),
                    }
                }
                PairAccess::Problem(problem) => self.access_problems.push_with(|| {
                    format!("processor {} counter {}: {problem}", facts.index, read.counter_index)
                }),
                PairAccess::NoRead => self.access_problems.push_with(|| {
                    format!(
                        "processor {} counter {}: served without reading the counters",
                        facts.index, read.counter_index
                    )
                }),
            }
            self.served_handles.insert(read.handle);
        }
    }

    /// How many reads the digest holds in full: the latest sample's and each counter's latest
    /// served read — never more than that, however long the run.
    #[must_use]
    pub fn held_reads(&self) -> usize {
        self.pending.len() + self.counters.iter().filter(|counter| counter.last.is_some()).count()
    }

    /// Whether a read of `handle` was served.
    #[must_use]
    pub fn served(&self, handle: usize) -> bool {
        self.served_handles.contains(&handle)
    }

    /// The measurements of each counter `described` (index, `NominalRate`), after the last
    /// [`Self::fold`].
    #[must_use]
    pub fn metrics(&self, described: impl Iterator<Item = (u32, u32)>) -> Vec<CounterMetrics> {
        described
            .map(|(counter_index, nominal_rate)| {
                let mut metrics = usize::try_from(counter_index)
                    .ok()
                    .and_then(|slot| self.counters.get(slot))
                    .map_or_else(
                        || CounterMetrics::new(counter_index, nominal_rate),
                        |counter| counter.metrics.clone(),
                    );
                metrics.nominal_rate = nominal_rate;
                metrics
            })
            .collect()
    }

    /// The first exactness problem of `feedback.reentrancy` among `handles` (in that order).
    #[must_use]
    pub fn exactness_problem(&self, handles: &[usize]) -> Option<String> {
        let states = self.nested.as_ref()?.exactness.as_ref()?;
        handles
            .iter()
            .find_map(|handle| states.iter().find(|state| state.handle == *handle)?.problem.clone())
    }
}

/// One counter's measurements on one processor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterMetrics {
    /// `CounterIndex`.
    pub counter_index: u32,
    /// The descriptor's `NominalRate`.
    pub nominal_rate: u32,
    /// Reads the PEP served (TRUE).
    pub served: usize,
    /// Every served read's counts were at least the previous ones.
    pub monotonic: bool,
    /// `ΣΔNominal`, `ΣΔActual` over the served reads (may be negative when not monotonic).
    pub delta_nominal: i128,
    /// `ΣΔActual`.
    pub delta_actual: i128,
    /// The true activity over the intervals between served reads without a counter
    /// discontinuity (the intervals a correct PEP accounts).
    pub expected: Activity,
    /// Intervals whose rate was outside the true frequency range (descriptions).
    pub spikes: Findings,
    /// Intervals without a counter discontinuity whose `ΔNominal` is not the nominal counts
    /// the processor made (descriptions): an interval dropped (a wrap taken for a reset) or
    /// counts invented.
    pub dropped: Findings,
    /// Intervals touching a counter discontinuity (a correct PEP may lose them).
    pub exempt: usize,
    /// Intervals whose own rate was compared with the truth of that interval.
    pub intervals_checked: usize,
    /// Intervals whose rate missed the truth by more than their tolerance (descriptions).
    pub interval_errors: Findings,
    /// The interval closest to its tolerance: (error, tolerance), in parts per million.
    pub worst_interval_ppm: (u64, u64),
}

impl CounterMetrics {
    /// No intervals yet.
    #[must_use]
    pub const fn new(counter_index: u32, nominal_rate: u32) -> Self {
        Self {
            counter_index,
            nominal_rate,
            served: 0,
            monotonic: true,
            delta_nominal: 0,
            delta_actual: 0,
            expected: Activity { c0: 0, cycles: 0 },
            spikes: Findings::new(),
            dropped: Findings::new(),
            exempt: 0,
            intervals_checked: 0,
            interval_errors: Findings::new(),
            worst_interval_ppm: (0, 1),
        }
    }

    /// `NominalRate × ΣΔActual / ΣΔNominal`, as Windows computes it (`None` when `ΣΔNominal` is
    /// not positive).
    #[must_use]
    #[allow(clippy::cast_precision_loss)] // Reported rates; f64 keeps 15 digits.
    pub fn measured(&self) -> Option<f64> {
        (self.delta_nominal > 0).then(|| {
            f64::from(self.nominal_rate) * self.delta_actual as f64 / self.delta_nominal as f64
        })
    }
}

#[cfg(test)]
mod tests;
