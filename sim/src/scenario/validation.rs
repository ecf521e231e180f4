//! Cross-field checks of a scenario: what no single field can say (events against the
//! hot-plug state, sleeps, the fixed counters' width, phases against the perf levels).

use super::boot::BootFault;
use super::error::ScenarioError;
use super::spec::Scenario;
use super::timeline::{NS_PER_MS, Timeline};
use super::types::{CounterSourceKind, CpuKind, Event, EventKind, HardwarePerf, Phase};

impl Scenario {
    /// Runs every cross-field check, in order; the first failure is the scenario's error.
    pub(super) fn check(&self) -> Result<(), ScenarioError> {
        self.check_events()?;
        self.check_pmu()?;
        self.check_hotplug()?;
        self.check_boot_faults()?;
        self.check_sleeps()?;
        self.check_counters_zero()
    }

    /// `counters-zero` models APERF/MPERF that a hypervisor stops exposing: it needs them.
    fn check_counters_zero(&self) -> Result<(), ScenarioError> {
        let source = self.platform.counter_source;
        let zeroing = |event: &Event| matches!(event.kind, EventKind::CountersZero { .. });
        match self.events.iter().position(zeroing) {
            Some(number) if !source.announced() => Err(ScenarioError::field(
                format!("event[{number}].kind"),
                format!(
                    "counters-zero: the APERF/MPERF a hypervisor stops exposing; platform.counter_source \"{}\" has none",
                    source.name()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// An `enable-fixed-counters` fault names a processor present at boot (the driver enables
    /// the counters on those only).
    fn check_boot_faults(&self) -> Result<(), ScenarioError> {
        for (number, fault) in self.boot.faults.iter().enumerate() {
            if let BootFault::EnableFixedCounters { processor } = fault
                && !self.initially_present(*processor)
            {
                return Err(ScenarioError::field(
                    format!("fault[{number}].processor"),
                    format!(
                        "processor {processor} is not present at boot; DriverEntry enables the \
                         counters on the processors present then"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the `hot-add`/`hot-remove` events: a processor is hot-added only while absent
    /// and hot-removed only while present, some processor is present at boot, and an explicit
    /// `on_processor` is present when its `wrong-processor-read` happens.
    fn check_hotplug(&self) -> Result<(), ScenarioError> {
        let processors = self.platform.processors;
        let interval = self.pofx.sample_interval_ms;
        let sleeps = self.sleeps();
        let asleep = |at: u32| sleeps.iter().any(|(_, start, resume)| *start < at && at < *resume);
        let mut first_add: Option<usize> = None;
        for index in 0..processors {
            let mut present = self.initially_present(index);
            let events = self.hotplug_events(index);
            for (position, &(number, at_ms, added)) in events.iter().enumerate() {
                if added == present {
                    let (kind, state) =
                        if added { ("hot-add", "already") } else { ("hot-remove", "not") };
                    return Err(ScenarioError::field(
                        format!("event[{number}].processors"),
                        format!("{kind}: processor {index} is {state} present at {at_ms} ms"),
                    ));
                }
                if added {
                    // The OS reads it at least once: a sample after at_ms, at or before the
                    // removal (samples come before the events of their instant).
                    let end = events
                        .get(position + 1)
                        .map_or(self.pofx.duration_ms, |(_, removed_ms, _)| *removed_ms);
                    let mut sample = (at_ms / interval).saturating_add(1).saturating_mul(interval);
                    while sample <= end && asleep(sample) {
                        sample = sample.saturating_add(interval);
                    }
                    if sample > end {
                        return Err(ScenarioError::field(
                            format!("event[{number}].at_ms"),
                            format!(
                                "hot-add: processor {index} would never be read (no sample after {at_ms} ms and by {end} ms)"
                            ),
                        ));
                    }
                }
                if added && !self.initially_present(index) {
                    first_add = Some(first_add.map_or(number, |first| first.min(number)));
                }
                if !added && (0..processors).all(|other| !self.present_at(other, at_ms, number + 1))
                {
                    return Err(ScenarioError::field(
                        format!("event[{number}].processors"),
                        format!(
                            "hot-remove: no processor would be left at {at_ms} ms (the OS runs on one)"
                        ),
                    ));
                }
                present = added;
            }
        }
        if let Some(number) = first_add
            && (0..processors).all(|index| !self.initially_present(index))
        {
            return Err(ScenarioError::field(
                format!("event[{number}].processors"),
                "hot-add: every processor is hot-added, but at least one must be present at boot"
                    .to_owned(),
            ));
        }
        for (number, event) in self.events.iter().enumerate() {
            if let EventKind::WrongProcessorRead { on_processor: Some(on) } = event.kind
                && !self.present_at(on, event.at_ms, number)
            {
                return Err(ScenarioError::field(
                    format!("event[{number}].on_processor"),
                    format!(
                        "processor {on} is not present at {} ms (hot-add/hot-remove), so the OS cannot run on it",
                        event.at_ms
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the `sleep` events: nothing happens while the system sleeps (no other event
    /// after the sleep's start — at its `at_ms` only earlier in the file — and before its
    /// resume), and `counter-near-wrap` overflows come no later than the first sleep.
    fn check_sleeps(&self) -> Result<(), ScenarioError> {
        for (sleep, start, resume) in self.sleeps() {
            for (number, event) in self.events.iter().enumerate() {
                let during = (event.at_ms > start || (event.at_ms == start && number > sleep))
                    && event.at_ms < resume;
                if number != sleep && during {
                    return Err(ScenarioError::field(
                        format!("event[{number}].at_ms"),
                        format!(
                            "{}: happens while the system sleeps (event[{sleep}] sleeps from {start} ms to {resume} ms)",
                            event.kind.name()
                        ),
                    ));
                }
                if event.kind == EventKind::CounterNearWrap && event.at_ms > start {
                    return Err(ScenarioError::field(
                        format!("event[{number}].at_ms"),
                        format!(
                            "counter-near-wrap: expected the overflow no later than the sleep at {start} ms (event[{sleep}]), found {} ms",
                            event.at_ms
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks what needs the whole scenario: a `counter-near-wrap` processor must run in C0
    /// before the overflow time, or its APERF cannot overflow then.
    fn check_events(&self) -> Result<(), ScenarioError> {
        for (number, event) in self.events.iter().enumerate() {
            if event.kind != EventKind::CounterNearWrap {
                continue;
            }
            for index in event.processors.indexes(self.platform.processors) {
                let timeline = Timeline::for_processor(self, index);
                if timeline.activity(0, u64::from(event.at_ms) * NS_PER_MS).c0 == 0 {
                    return Err(ScenarioError::field(
                        format!("event[{number}].processors"),
                        format!(
                            "counter-near-wrap: processor {index} does not run in C0 before at_ms ({} ms), so its APERF cannot overflow then",
                            event.at_ms
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks what the fixed counters need: `counter-reset` zeroes APERF/MPERF, which a
    /// `fixed-pmc` platform lacks; `pmu-reprogrammed` needs the fixed counters and values below
    /// 2^`pmc_width`; and no fixed counter may be able to wrap twice between two reads the PEP
    /// serves (a sample interval plus the longest bounded `msr-fault`), which no PEP could
    /// tell from once.
    fn check_pmu(&self) -> Result<(), ScenarioError> {
        // The fixed counters matter only where the PEP reads them.
        let width = self.platform.pmc_width.filter(|_| self.uses_fixed_counters());
        let no_aperf = self.platform.counter_source == CounterSourceKind::FixedPmc;
        for (number, event) in self.events.iter().enumerate() {
            let field = |key: &str| format!("event[{number}].{key}");
            match (event.kind, width) {
                (EventKind::CounterReset, _) if no_aperf => {
                    return Err(ScenarioError::field(
                        field("kind"),
                        "counter-reset zeroes APERF/MPERF, which a fixed-pmc platform does not have; use pmu-reprogrammed".to_owned(),
                    ));
                }
                (EventKind::PmuReprogrammed { .. }, None) => {
                    return Err(ScenarioError::field(
                        field("kind"),
                        "pmu-reprogrammed needs a PEP on the fixed counters (platform.counter_source = \"fixed-pmc\", or config.counter_source = \"fixed-pmc\" / \"prefer-fixed-pmc\" with the PMU)".to_owned(),
                    ));
                }
                (EventKind::PmuReprogrammed { values, .. }, Some(width))
                    if values.iter().any(|value| value.checked_shr(width).unwrap_or(0) != 0) =>
                {
                    return Err(ScenarioError::field(
                        field("values"),
                        format!(
                            "expected values below 2^{width} (platform.pmc_width), found [{}, {}]",
                            values[0], values[1]
                        ),
                    ));
                }
                _ => {}
            }
        }
        let Some(width) = width.filter(|width| *width < 64) else { return Ok(()) };
        let fastest = self
            .phases
            .iter()
            .map(|phase| phase.frequency_mhz)
            .chain([self.platform.nominal_mhz])
            .max()
            .unwrap_or(1);
        let longest_fault = self
            .events
            .iter()
            .filter_map(|event| match event.kind {
                EventKind::MsrFault { duration_ms } => duration_ms,
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let gap_ms = u64::from(self.pofx.sample_interval_ms) + u64::from(longest_fault);
        // MHz × ms = thousands of counts.
        let period_ms = (1_u64 << width) / (u64::from(fastest) * 1000);
        if gap_ms >= period_ms {
            return Err(ScenarioError::field(
                "pofx.sample_interval_ms".to_owned(),
                format!(
                    "a {width}-bit fixed counter at {fastest} MHz wraps every {period_ms} ms: expected served reads less than that apart, found up to {gap_ms} ms (sample interval plus the longest msr-fault)"
                ),
            ));
        }
        Ok(())
    }
}

/// A phase cannot run faster than the platform's highest perf level or slower than its lowest:
/// with `[platform.perf]` given, such a phase is refused.
pub(super) fn check_phases_in_perf_range(
    phases: &[Phase],
    perf: HardwarePerf,
    cpu: CpuKind,
    nominal_mhz: u32,
) -> Result<(), ScenarioError> {
    let highest = perf.mhz(perf.highest, cpu, nominal_mhz);
    let lowest = perf.mhz(perf.lowest, cpu, nominal_mhz);
    for (number, phase) in phases.iter().enumerate() {
        let (bound, level, name) = if phase.frequency_mhz > highest {
            (highest, perf.highest, "above the highest")
        } else if phase.frequency_mhz < lowest {
            (lowest, perf.lowest, "below the lowest")
        } else {
            continue;
        };
        return Err(ScenarioError::field(
            format!("phase[{number}].frequency_mhz"),
            format!(
                "{} MHz is {name} performance level of [platform.perf] ({level} = {bound} MHz)",
                phase.frequency_mhz
            ),
        ));
    }
    Ok(())
}
