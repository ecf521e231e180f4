//! The checks of the runtime's lifecycle events and of re-entrancy: `dpm.hotplug`,
//! `ppm.system_state` and `feedback.reentrancy`.

use crate::machine::{DiscontinuityKind, NS_PER_MS};
use crate::pofx::{HotplugChange, NestedNotification, ProcessorRecord, RawRead, ReadRecord};

use super::{CheckResult, Context};

/// One served read of a handle's counters, outer or nested, for `feedback.reentrancy`.
struct Served<'r> {
    raw: RawRead,
    nominal: u64,
    actual: u64,
    what: &'r str,
}

impl Context<'_> {
    /// `dpm.hotplug`: every hot-added processor was accepted and registered with a handle never
    /// issued before, answered its queries, was started and then read; every hot-removed
    /// processor's `UNREGISTER_DEVICE` was handled and its stale handle refused afterwards.
    pub(super) fn hotplug(&self) -> CheckResult {
        let id = "dpm.hotplug";
        let records = &self.observations.hotplug;
        if records.is_empty() {
            return CheckResult::not_applicable(id, "no hot-add or hot-remove events");
        }
        let devices = &self.observations.devices;
        let expected = self.expected_counters();
        let mut failures = Vec::new();
        let (mut added, mut removed) = (0, 0);
        for record in records {
            let name = format!("processor {} at {} ms", record.processor, record.at_ms);
            match &record.change {
                HotplugChange::Added { device } => {
                    added += 1;
                    let Some(offered) = devices.get(*device) else { continue };
                    let Some(handle) =
                        offered.registered.and_then(|register| register.live_handle())
                    else {
                        failures.push(format!(
                            "{name}: hot-added processor not accepted and registered (PREPARE returned {}, DeviceAccepted {}, REGISTER {:?})",
                            offered.prepare_returned, offered.accepted, offered.registered
                        ));
                        continue;
                    };
                    if devices.iter().take(*device).any(|earlier| {
                        earlier.registered.is_some_and(|register| register.handle == handle)
                    }) {
                        failures.push(format!(
                            "{name}: REGISTER_DEVICE returned handle {handle:#x}, issued before"
                        ));
                    }
                    if offered.started != Some(true) {
                        failures
                            .push(format!("{name}: DEVICE_STARTED returned {:?}", offered.started));
                    }
                    let processor = self.processor(record.processor);
                    if !processor
                        .is_some_and(|processor| matches!(processor.capabilities, Some((true, _))))
                    {
                        failures.push(format!("{name}: QUERY_CAPABILITIES refused after hot-add"));
                    }
                    let read = processor.is_some_and(|processor| {
                        processor.reads.iter().any(|read| read.handle == handle && read.returned)
                    });
                    if expected > 0 && !read {
                        failures.push(format!("{name}: no read served after the hot-add"));
                    }
                }
                HotplugChange::Removed { handle, returned, stale_probes } => {
                    removed += 1;
                    if handle.is_none() {
                        continue;
                    }
                    if !returned {
                        failures.push(format!("{name}: UNREGISTER_DEVICE returned FALSE"));
                    }
                    failures.extend(stale_probes.iter().filter(|probe| !probe.passed()).map(
                        |probe| {
                            let what = if probe.returned {
                                "returned TRUE"
                            } else {
                                "returned FALSE but wrote to its data"
                            };
                            format!("{name}: {}: {what}", probe.what)
                        },
                    ));
                }
            }
        }
        CheckResult::from_failures(
            id,
            &failures,
            format!(
                "{added} hot-adds (accepted, fresh handle, queried, started, then read) and {removed} hot-removes (UNREGISTER handled, the stale handle refused)"
            ),
        )
    }

    /// `ppm.system_state`: `ENTER_SYSTEM_STATE` and `RESUME_FROM_SYSTEM_STATE` were handled on
    /// every processor, reads were served again after the resume, and no interval across a
    /// sleep reported more counts than the processor made since it was powered on again (the
    /// counts before the sleep and the processor reset are no activity).
    pub(super) fn system_state(&self) -> CheckResult {
        let id = "ppm.system_state";
        let sleeps = &self.observations.sleeps;
        if sleeps.is_empty() {
            return CheckResult::not_applicable(id, "no sleep events");
        }
        let mut failures = Vec::new();
        let mut across = 0;
        let mut processors = 0;
        for sleep in sleeps {
            let window = sleep.window_ms;
            let name = format!("{} at {} ms", sleep.state.name().to_uppercase(), window.0);
            for (notification, calls) in
                [("ENTER", &sleep.entered), ("RESUME_FROM", &sleep.resumed)]
            {
                failures.extend(calls.iter().filter(|(_, returned)| !returned).map(
                    |(processor, _)| {
                        format!(
                            "{name}: {notification}_SYSTEM_STATE on processor {processor} returned FALSE"
                        )
                    },
                ));
            }
            processors = processors.max(sleep.entered.len());
            let (start_ns, resume_ns) =
                (u64::from(window.0) * NS_PER_MS, u64::from(window.1) * NS_PER_MS);
            let resumed: Vec<u32> = sleep.resumed.iter().map(|(processor, _)| *processor).collect();
            for record in
                self.observations.processors.iter().filter(|record| resumed.contains(&record.index))
            {
                let served: Vec<&ReadRecord> =
                    record.reads.iter().filter(|read| read.returned).collect();
                let after = |read: &&ReadRecord| self.machine.runtime_ns(read.at_ns) >= resume_ns;
                let before = |read: &&ReadRecord| self.machine.runtime_ns(read.at_ns) <= start_ns;
                // Reads the OS made after the resume on working counters (none if the
                // processor left before the next sample).
                let working = record.reads.iter().any(|read| after(&read) && !read.faulted);
                if working && !served.iter().any(after) {
                    failures.push(format!(
                        "{name}: processor {}: no read served after the resume",
                        record.index
                    ));
                }
                for counter in 0..record.described_counters().len() {
                    let reads: Vec<&&ReadRecord> = served
                        .iter()
                        .filter(|read| read.counter_index as usize == counter)
                        .collect();
                    for pair in reads.windows(2) {
                        let [first, second] = pair else { continue };
                        if first.handle != second.handle || !before(first) || !after(second) {
                            continue;
                        }
                        across += 1;
                        let since = second.raw.map_or((0, 0), |raw| (raw.nominal, raw.actual));
                        let delta = (
                            second.nominal.wrapping_sub(first.nominal),
                            second.actual.wrapping_sub(first.actual),
                        );
                        if delta.0 > since.0 || delta.1 > since.1 {
                            failures.push(format!(
                                "{name}: processor {} counter {counter}: ΔNominal {}, ΔActual {} across the sleep, more than the {}/{} counts since the processor was powered on again",
                                record.index, delta.0, delta.1, since.0, since.1
                            ));
                        }
                    }
                }
            }
        }
        CheckResult::from_failures(
            id,
            &failures,
            format!(
                "{} sleeps: ENTER and RESUME_FROM_SYSTEM_STATE handled on {processors} processors, reads served after each resume, {across} intervals across a sleep counted nothing from before the processor reset",
                sleeps.len()
            ),
        )
    }

    /// `feedback.reentrancy`: with nested notifications modelled, nested notifications were
    /// delivered (never inside a masked section), each was answered correctly, and every read
    /// of a handle's counters — outer or nested, in the order they accumulated — is monotonic
    /// and reports exactly the hardware's counts since the read that began its run of reads
    /// without a counter discontinuity.
    pub(super) fn reentrancy(&self) -> CheckResult {
        let id = "feedback.reentrancy";
        if !self.scenario.pofx.nested_notifications {
            return CheckResult::not_applicable(id, "[pofx] nested_notifications is off");
        }
        // Wrong results first (they say what broke), then deliveries inside masked sections.
        let mut failures = Vec::new();
        let mut masked = Vec::new();
        let (mut points, mut calls, mut outer, mut nested) = (0, 0, 0, 0);
        for record in &self.observations.processors {
            let capabilities = record
                .capabilities
                .map(|(_, answer)| (answer.FeedbackCounterCount, answer.IdleStateCount));
            for read in &record.reads {
                outer += usize::from(read.returned);
                for call in &read.nested {
                    calls += 1;
                    let name = format!(
                        "processor {} at {} ms, nested {:?} at {:?}",
                        record.index,
                        self.machine.runtime_ns(read.at_ns) / NS_PER_MS,
                        call.notification,
                        call.point
                    );
                    if call.masked {
                        masked.push(format!("{name}: delivered inside a masked section"));
                    }
                    let problem = match call.notification {
                        NestedNotification::OwnRead => {
                            points += 1;
                            nested += usize::from(call.returned);
                            (!call.returned && !call.faulted)
                                .then_some("refused with working counters")
                        }
                        NestedNotification::ForeignRead => (call.returned || !call.untouched)
                            .then_some("a handle bound to another processor was served"),
                        NestedNotification::QueryCapabilities => (!call.returned
                            || call.capabilities != capabilities)
                            .then_some("answered other than at initialisation"),
                        NestedNotification::PerfCheckComplete => {
                            (!call.returned).then_some("refused")
                        }
                    };
                    failures.extend(problem.map(|problem| format!("{name}: {problem}")));
                }
            }
            if !self.scenario.uses_fixed_counters() {
                failures.extend(self.exactness(record));
            }
        }
        failures.extend(masked);
        if outer == 0 {
            return CheckResult::not_applicable(id, "no read was served");
        }
        if points == 0 {
            failures.push(format!(
                "{outer} reads served, but no nested notification was delivered during any"
            ));
        }
        CheckResult::from_failures(
            id,
            &failures,
            format!(
                "{points} injection points, {calls} nested notifications, none in a masked section; {outer} outer and {nested} nested reads each monotonic and exactly the hardware's counts"
            ),
        )
    }

    fn processor(&self, index: u32) -> Option<&ProcessorRecord> {
        self.observations.processors.iter().find(|record| record.index == index)
    }

    /// Per handle: every served read (outer and nested) with the raw values it read, in the
    /// order they accumulated, must not go backwards, and within a run of reads without a
    /// discontinuity of the processor's counters, the totals must have grown by exactly what
    /// the raw counters did since the run's first read. The first problem per handle.
    #[allow(clippy::cast_precision_loss)] // A time in milliseconds, for the message.
    fn exactness(&self, record: &ProcessorRecord) -> Option<String> {
        let jumps: Vec<u64> = self
            .machine
            .discontinuities(record.index)
            .into_iter()
            .filter(|jump| jump.kind != DiscontinuityKind::NearWrap)
            .map(|jump| jump.at_ns)
            .collect();
        let mut problems = Vec::new();
        for handle in &record.issued_handles {
            let mut served: Vec<Served<'_>> = Vec::new();
            for read in record.reads.iter().filter(|read| read.handle == *handle) {
                if let (true, Some(raw)) = (read.returned, read.raw) {
                    served.push(Served {
                        raw,
                        nominal: read.nominal,
                        actual: read.actual,
                        what: "read",
                    });
                }
                for call in &read.nested {
                    if let (NestedNotification::OwnRead, true, Some(raw)) =
                        (call.notification, call.returned, call.raw)
                    {
                        served.push(Served {
                            raw,
                            nominal: call.nominal,
                            actual: call.actual,
                            what: "nested read",
                        });
                    }
                }
            }
            served.sort_by_key(|read| read.raw.at_ns);
            let mut base: Option<&Served<'_>> = None;
            for pair in served.windows(2) {
                let [previous, current] = pair else { continue };
                let at_ms = self.machine.runtime_ns(current.raw.at_ns) as f64 / 1e6;
                let name = format!(
                    "processor {} handle {handle:#x}, {} at {at_ms} ms",
                    record.index, current.what
                );
                if current.nominal < previous.nominal || current.actual < previous.actual {
                    problems.push(format!("{name}: went backwards"));
                    break;
                }
                let jumped =
                    jumps.iter().any(|at| previous.raw.at_ns < *at && *at <= current.raw.at_ns);
                if jumped {
                    base = Some(current);
                    continue;
                }
                let start = *base.get_or_insert(previous);
                if current.raw.actual < previous.raw.actual
                    || current.raw.nominal < previous.raw.nominal
                {
                    problems.push(format!(
                        "{name}: the raw counters went backwards ({}/{} after {}/{}) with no reset between: a read was torn",
                        current.raw.actual, current.raw.nominal, previous.raw.actual, previous.raw.nominal
                    ));
                }
                let hardware = (
                    current.raw.nominal.wrapping_sub(start.raw.nominal),
                    current.raw.actual.wrapping_sub(start.raw.actual),
                );
                let reported = (
                    current.nominal.wrapping_sub(start.nominal),
                    current.actual.wrapping_sub(start.actual),
                );
                if hardware != reported {
                    problems.push(format!(
                        "{name}: ΔNominal/ΔActual {}/{} since the run began, but the hardware counted {}/{}",
                        reported.0, reported.1, hardware.0, hardware.1
                    ));
                    break;
                }
            }
        }
        problems.into_iter().next()
    }
}
