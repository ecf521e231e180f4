//! Cross-field checks of a scenario: what no single field can say (events against the
//! hot-plug state, sleeps, the fixed counters' width, phases against the perf levels).

use std::collections::HashMap;

use super::error::{ScenarioError, shown};
use super::kernel::ServiceFault;
use super::spec::Scenario;
use super::timeline::{NS_PER_MS, SleepWindows, Timeline};
use super::types::{
    CounterSourceKind, CpuKind, DeviceIds, Event, EventKind, HardwarePerf, MAX_DEVICE_ID_UNITS,
    Phase,
};

impl Scenario {
    /// Runs every cross-field check, in order; the first failure is the scenario's error.
    pub(super) fn check(&self) -> Result<(), ScenarioError> {
        self.check_events()?;
        self.check_pmu()?;
        self.check_sleeps()?;
        self.check_hotplug()?;
        self.check_service_faults()?;
        self.check_device_ids()?;
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

    /// The device ids: each processor's distinct and without NUL; `other_devices` (the devices
    /// that are not processors) repeat none of them, and none matches a processor pattern of
    /// the PEP's configuration (the run would blame the PEP for accepting it).
    fn check_device_ids(&self) -> Result<(), ScenarioError> {
        let ids = &self.platform.device_ids;
        let field = |index: u32| match ids {
            DeviceIds::List(_) => format!("platform.device_ids[{index}]"),
            DeviceIds::Template { .. } => "platform.device_id_template".to_owned(),
            DeviceIds::Style { .. } => "platform.device_id_style".to_owned(),
        };
        let mut seen: HashMap<String, u32> = HashMap::new();
        for index in 0..self.platform.processors {
            let id = ids.device_id(index);
            let units = id.encode_utf16().count();
            if id.contains('\0') || units > MAX_DEVICE_ID_UNITS as usize {
                return Err(ScenarioError::field(
                    field(index),
                    format!(
                        "processor {index}'s id \"{}\": expected 1..={MAX_DEVICE_ID_UNITS} characters without NUL",
                        shown(&id)
                    ),
                ));
            }
            if let Some(first) = seen.insert(id.clone(), index) {
                return Err(ScenarioError::field(
                    field(index),
                    format!(
                        "processors {first} and {index} both get the id \"{}\"; expected one id per processor",
                        shown(&id)
                    ),
                ));
            }
        }
        let Some(others) = &self.platform.other_devices else { return Ok(()) };
        let patterns = self.config.to_engine_config().device_id_patterns;
        for (number, id) in others.iter().enumerate() {
            if let Some(processor) = seen.get(id) {
                return Err(ScenarioError::field(
                    format!("platform.other_devices[{number}]"),
                    format!("\"{}\" is processor {processor}'s id", shown(id)),
                ));
            }
            let units: Vec<u16> = id.encode_utf16().collect();
            if let Some(pattern) = patterns.iter().find(|pattern| pattern.matches(&units)) {
                return Err(ScenarioError::field(
                    format!("platform.other_devices[{number}]"),
                    format!(
                        "\"{}\" matches the PEP's processor pattern \"{}\" (config.device_id_patterns or the defaults), so the PEP would take it for a processor; list only devices that are not processors",
                        shown(id),
                        String::from_utf16_lossy(pattern.as_units())
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An `enable-fixed-counters` fault names a processor present at boot (the driver enables
    /// the counters on those only).
    fn check_service_faults(&self) -> Result<(), ScenarioError> {
        for (number, fault) in self.kernel.faults.iter().enumerate() {
            if let ServiceFault::EnableFixedCounters { processor } = fault
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
    /// and hot-removed only while present, some processor is present at boot and after every
    /// `hot-remove`, and an explicit `on_processor` is present when its `wrong-processor-read`
    /// happens. One walk over each processor's changes, then one over all of them in time
    /// order: O(Σ listed processors · log).
    fn check_hotplug(&self) -> Result<(), ScenarioError> {
        let processors = self.platform.processors;
        let interval = self.pofx.sample_interval_ms;
        let sleeps = SleepWindows::new(self);
        let mut first_add: Option<usize> = None;
        for index in 0..processors {
            let mut present = self.initially_present(index);
            let events = self.presence.changes(index);
            for (position, &(at_ms, number, added)) in events.iter().enumerate() {
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
                        .map_or(self.pofx.duration_ms, |(removed_ms, _, _)| *removed_ms);
                    let sample = sleeps.first_awake_sample(at_ms.saturating_add(1), interval);
                    if sample > u64::from(end) {
                        return Err(ScenarioError::field(
                            format!("event[{number}].at_ms"),
                            format!(
                                "hot-add: processor {index} would never be read (no sample after {at_ms} ms and by {end} ms)"
                            ),
                        ));
                    }
                    if !self.initially_present(index) {
                        first_add = Some(first_add.map_or(number, |first| first.min(number)));
                    }
                }
                present = added;
            }
        }
        let at_boot = (0..processors).filter(|&index| self.initially_present(index)).count();
        if let Some(number) = first_add
            && at_boot == 0
        {
            return Err(ScenarioError::field(
                format!("event[{number}].processors"),
                "hot-add: every processor is hot-added, but at least one must be present at boot"
                    .to_owned(),
            ));
        }
        // Every change in time order (then file order): how many are present after each
        // event's changes.
        let mut changes: Vec<(u32, usize, bool)> = (0..processors)
            .flat_map(|index| self.presence.changes(index).iter().copied())
            .collect();
        changes.sort_unstable();
        let mut present = at_boot;
        for (position, &(at_ms, number, added)) in changes.iter().enumerate() {
            present = if added { present + 1 } else { present.saturating_sub(1) };
            let last_of_event = changes.get(position + 1).is_none_or(|next| next.1 != number);
            if !added && last_of_event && present == 0 {
                return Err(ScenarioError::field(
                    format!("event[{number}].processors"),
                    format!(
                        "hot-remove: no processor would be left at {at_ms} ms (the OS runs on one)"
                    ),
                ));
            }
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
    /// resume), and `counter-near-wrap` overflows come no later than the first sleep. The
    /// sleeps sorted once, each event looks up the last sleep starting before it:
    /// O(events · log sleeps).
    fn check_sleeps(&self) -> Result<(), ScenarioError> {
        // (start, event number, resume), in the order the sleeps begin.
        let mut sleeps: Vec<(u32, usize, u32)> = self
            .sleeps()
            .into_iter()
            .map(|(number, start, resume)| (start, number, resume))
            .collect();
        sleeps.sort_unstable();
        for (number, event) in self.events.iter().enumerate() {
            // The last sleep that began before this event (time, then file order).
            let before = sleeps
                .partition_point(|(start, sleep, _)| (*start, *sleep) < (event.at_ms, number));
            if let Some(&(start, sleep, resume)) =
                before.checked_sub(1).and_then(|last| sleeps.get(last))
                && event.at_ms < resume
            {
                return Err(ScenarioError::field(
                    format!("event[{number}].at_ms"),
                    format!(
                        "{}: happens while the system sleeps (event[{sleep}] sleeps from {start} ms to {resume} ms)",
                        event.kind.name()
                    ),
                ));
            }
        }
        if let Some(&(start, sleep, _)) = sleeps.first() {
            for (number, event) in self.events.iter().enumerate() {
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

    /// Checks what needs the whole scenario: a processor takes part in at most one
    /// `counter-near-wrap` (its counters start the runtime just below the wrap once), and it
    /// must run in C0 before the overflow time, or its APERF cannot overflow then. The
    /// timelines are built once per distinct set of phases among those processors.
    fn check_events(&self) -> Result<(), ScenarioError> {
        let processors = usize::try_from(self.platform.processors).unwrap_or(0);
        // Per processor: the near-wrap event it takes part in.
        let mut wrap_of: Vec<Option<usize>> = vec![None; processors];
        for (number, event) in self.events.iter().enumerate() {
            if event.kind != EventKind::CounterNearWrap {
                continue;
            }
            for index in event.processors.indexes(self.platform.processors) {
                let Some(slot) = usize::try_from(index).ok().and_then(|i| wrap_of.get_mut(i))
                else {
                    continue;
                };
                if let Some(earlier) = slot.replace(number) {
                    return Err(ScenarioError::field(
                        format!("event[{number}].processors"),
                        format!(
                            "counter-near-wrap: processor {index} is already in event[{earlier}]; its counters start the run just below the wrap once, so at most one counter-near-wrap per processor"
                        ),
                    ));
                }
            }
        }
        let wrapping: Vec<u32> = (0..self.platform.processors)
            .filter(|&index| {
                usize::try_from(index)
                    .ok()
                    .and_then(|i| wrap_of.get(i))
                    .is_some_and(Option::is_some)
            })
            .collect();
        for (index, first_c0_ns) in Timeline::first_c0_times(self, &wrapping) {
            let Some(number) =
                usize::try_from(index).ok().and_then(|i| wrap_of.get(i)).copied().flatten()
            else {
                continue;
            };
            let at_ms = self.events[number].at_ms;
            if first_c0_ns.is_none_or(|first| first >= u64::from(at_ms) * NS_PER_MS) {
                return Err(ScenarioError::field(
                    format!("event[{number}].processors"),
                    format!(
                        "counter-near-wrap: processor {index} does not run in C0 before at_ms ({at_ms} ms), so its APERF cannot overflow then"
                    ),
                ));
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
