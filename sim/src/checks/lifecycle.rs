//! The checks of the runtime's lifecycle events and of re-entrancy: `dpm.hotplug`,
//! `ppm.system_state` and `feedback.reentrancy`.

use std::collections::HashMap;

use crate::pofx::{HotplugChange, ProcessorRecord};
use crate::verdict::Findings;

use super::{CheckResult, Context};

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
        // Each registered handle and the first device it was returned for.
        let mut first_with: HashMap<usize, usize> = HashMap::new();
        for (number, device) in devices.iter().enumerate() {
            if let Some(register) = device.registered {
                first_with.entry(register.handle).or_insert(number);
            }
        }
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
                    if first_with.get(&handle).is_some_and(|first| first < device) {
                        failures.push(format!(
                            "{name}: REGISTER_DEVICE returned handle {handle:#x}, issued before"
                        ));
                    }
                    if offered.started != Some(true) {
                        failures.push(offered.started.map_or_else(
                            || format!("{name}: DEVICE_STARTED was not sent"),
                            |started| {
                                format!(
                                    "{name}: DEVICE_STARTED returned {}",
                                    if started { "TRUE" } else { "FALSE" }
                                )
                            },
                        ));
                    }
                    let processor = self.processor(record.processor);
                    if !processor
                        .is_some_and(|processor| matches!(processor.capabilities, Some((true, _))))
                    {
                        failures.push(format!("{name}: QUERY_CAPABILITIES refused after hot-add"));
                    }
                    let read = processor.is_some_and(|processor| processor.digest.served(handle));
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
        let mut failures = Findings::new();
        let mut across = 0;
        let mut processors = 0;
        // The scenario's sleeps, in order: the digests hold one entry per sleep likewise.
        for (position, sleep) in sleeps.iter().enumerate() {
            let window = sleep.window_ms;
            let name = format!("{} at {} ms", sleep.state.name().to_uppercase(), window.0);
            for (notification, calls) in
                [("ENTER", &sleep.entered), ("RESUME_FROM", &sleep.resumed)]
            {
                for (processor, _) in calls.iter().filter(|(_, returned)| !returned) {
                    failures.push(format!(
                        "{name}: {notification}_SYSTEM_STATE on processor {processor} returned FALSE"
                    ));
                }
            }
            processors = processors.max(sleep.entered.len());
            let resumed: Vec<u32> = sleep.resumed.iter().map(|(processor, _)| *processor).collect();
            for record in
                self.observations.processors.iter().filter(|record| resumed.contains(&record.index))
            {
                let Some(digest) = record.digest.sleeps.get(position) else { continue };
                // Reads the OS made after the resume on working counters (none if the
                // processor left before the next sample).
                if digest.working_after && !digest.served_after {
                    failures.push(format!(
                        "{name}: processor {}: no read served after the resume",
                        record.index
                    ));
                }
                across += digest.across;
                failures.absorb(&digest.failures, |failure| format!("{name}: {failure}"));
            }
        }
        CheckResult::from_findings(
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
        let mut failures = Findings::new();
        let mut masked = Findings::new();
        let (mut points, mut calls, mut outer, mut nested) = (0, 0, 0, 0);
        for record in &self.observations.processors {
            let Some(digest) = &record.digest.nested else { continue };
            outer += digest.outer;
            calls += digest.calls;
            points += digest.points;
            nested += digest.nested;
            failures.absorb(&digest.failures, str::to_owned);
            masked.absorb(&digest.masked, str::to_owned);
            if let Some(problem) = record.digest.exactness_problem(&record.issued_handles) {
                failures.push(problem);
            }
        }
        failures.absorb(&masked, str::to_owned);
        if outer == 0 {
            return CheckResult::not_applicable(id, "no read was served");
        }
        if points == 0 {
            failures.push(format!(
                "{outer} reads served, but no nested notification was delivered during any"
            ));
        }
        CheckResult::from_findings(
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
}
