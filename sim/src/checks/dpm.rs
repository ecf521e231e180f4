//! The checks of the devices and the refusal probes: `dpm.*` (but `dpm.hotplug`),
//! `ppm.boot_queries` and the probes of `*_refused`.

use std::collections::HashMap;

use ppm_engine::abi::PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES;

use crate::pofx::ProbeKind;

use super::{CheckResult, Context};

impl Context<'_> {
    /// `ppm.boot_queries`: the start-up queries whose documented "nothing to report" is an
    /// answer are answered — `QUERY_PLATFORM_STATES` and `QUERY_VETO_REASONS` with TRUE and 0
    /// (this PEP has no platform idle state and vetoes nothing), `ENUMERATE_BOOT_VETOES`
    /// acknowledged. The start-up queries are PoFx's PPM queries with a NULL handle, sent once
    /// all processors registered (`crate::pofx`'s `startup`); the id keeps the "boot" of
    /// Windows' "sent once upon boot".
    pub(super) fn boot_queries(&self) -> CheckResult {
        let id = "ppm.boot_queries";
        let queries = &self.observations.startup_queries;
        if queries.is_empty() {
            return CheckResult::new(id, false, "the boot queries were not sent");
        }
        let failures: Vec<String> = queries
            .iter()
            .filter_map(|query| match (query.returned, query.count, query.name) {
                (true, Some(0), _) => None,
                (true, None, _) if query.notification == PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES => {
                    None
                }
                (false, _, name) => {
                    Some(format!("{name}: FALSE (a count of 0 is the documented answer)"))
                }
                (true, count, name) => Some(count.map_or_else(
                    || format!("{name}: TRUE with no count written, expected 0"),
                    |count| format!("{name}: TRUE with count {count}, expected 0"),
                )),
            })
            .collect();
        CheckResult::from_failures(
            id,
            &failures,
            "QUERY_PLATFORM_STATES and QUERY_VETO_REASONS answered 0, ENUMERATE_BOOT_VETOES acknowledged",
        )
    }

    pub(super) fn processors_accepted(&self) -> CheckResult {
        let mut failures = Vec::new();
        for device in self.observations.devices.iter().filter(|device| device.processor.is_some()) {
            let problem = if !device.prepare_returned {
                Some("PREPARE_DEVICE returned FALSE".to_owned())
            } else if !device.accepted {
                Some("declined at PREPARE_DEVICE".to_owned())
            } else {
                match device.registered {
                    None => Some("not registered".to_owned()),
                    Some(record) if record.live_handle().is_none() => Some(format!(
                        "REGISTER_DEVICE returned {}, DeviceAccepted {}, DeviceHandle {:#x}",
                        if record.returned { "TRUE" } else { "FALSE" },
                        record.acceptance,
                        record.handle
                    )),
                    Some(_) => None,
                }
            };
            if let Some(problem) = problem {
                failures.push(format!("{}: {problem}", device.id));
            }
        }
        let count = self.scenario.platform.processors;
        CheckResult::from_failures(
            "dpm.processors_accepted",
            &failures,
            format!(
                "{count} of {count} processor devices accepted at PREPARE and registered with PepDeviceAccepted"
            ),
        )
    }

    pub(super) fn others_declined(&self) -> CheckResult {
        let others: Vec<_> =
            self.observations.devices.iter().filter(|device| device.processor.is_none()).collect();
        let failures: Vec<String> = others
            .iter()
            .filter_map(|device| match (device.prepare_returned, device.accepted) {
                (true, false) => None,
                (false, _) => Some(format!(
                    "{}: PREPARE_DEVICE returned FALSE (must return TRUE and decline)",
                    device.id
                )),
                (true, true) => Some(format!("{}: accepted, but it is not a processor", device.id)),
            })
            .collect();
        CheckResult::from_failures(
            "dpm.others_declined",
            &failures,
            format!(
                "{} non-processor devices declined (PREPARE returned TRUE, DeviceAccepted FALSE)",
                others.len()
            ),
        )
    }

    pub(super) fn handles_unique_nonnull(&self) -> CheckResult {
        // Each handle and the device it was first given to: one lookup per device.
        let mut handles: HashMap<usize, &str> = HashMap::new();
        let mut failures = Vec::new();
        for device in &self.observations.devices {
            let Some(record) = device.registered else { continue };
            if record.returned && record.acceptance == ppm_engine::abi::PepDeviceAccepted {
                if record.handle == 0 {
                    failures.push(format!("{}: accepted with a NULL DeviceHandle", device.id));
                } else if let Some(other) = handles.get(&record.handle) {
                    failures.push(format!(
                        "{}: DeviceHandle {:#x} already given to {other}",
                        device.id, record.handle
                    ));
                } else {
                    handles.insert(record.handle, &device.id);
                }
            }
        }
        CheckResult::from_failures(
            "dpm.handles_unique_nonnull",
            &failures,
            format!("{} handles, all non-NULL and distinct", handles.len()),
        )
    }

    pub(super) fn lifecycle(&self) -> CheckResult {
        let mut failures: Vec<String> = self
            .observations
            .devices
            .iter()
            .filter(|device| device.started == Some(false))
            .map(|device| format!("{}: DEVICE_STARTED returned FALSE", device.id))
            .collect();
        match self.observations.unregistered {
            Some((index, false)) => {
                failures.push(format!("UNREGISTER_DEVICE of processor {index} returned FALSE"));
            }
            Some(_) => {}
            None => failures
                .push("no processor was registered, so none could be unregistered".to_owned()),
        }
        failures.extend(self.probe_failures(&[ProbeKind::StaleHandle]));
        CheckResult::from_failures(
            "dpm.lifecycle",
            &failures,
            "DEVICE_STARTED and UNREGISTER_DEVICE handled; the unregistered handle is refused afterwards",
        )
    }

    pub(super) fn probe_failures(&self, kinds: &[ProbeKind]) -> Vec<String> {
        self.observations
            .probes
            .iter()
            .filter(|probe| kinds.contains(&probe.kind) && !probe.passed())
            .map(|probe| {
                let what = if probe.returned {
                    "returned TRUE"
                } else {
                    "returned FALSE but wrote to its data"
                };
                format!("{}: {what}", probe.what)
            })
            .collect()
    }

    /// `notifications.documented_answers`: every notification of the engine's table with a
    /// fixed answer got it — the documented return value, and exactly the documented output
    /// bytes written (none for a refusal or an acknowledgement).
    pub(super) fn documented_answers(&self) -> CheckResult {
        let id = "notifications.documented_answers";
        let answers = &self.observations.documented_answers;
        if answers.is_empty() {
            return CheckResult::not_applicable(id, "no processor registered to send them with");
        }
        let failures: Vec<String> = answers
            .iter()
            .filter_map(|(what, problem)| {
                problem.as_ref().map(|problem| format!("{what}: {problem}"))
            })
            .collect();
        CheckResult::from_failures(
            id,
            &failures,
            format!(
                "{} notifications answered as docs/notifications.md says (refused, acknowledged or declined in their outputs)",
                answers.len()
            ),
        )
    }

    pub(super) fn probes(&self, id: &str, kinds: &[ProbeKind], what: &str) -> CheckResult {
        let count =
            self.observations.probes.iter().filter(|probe| kinds.contains(&probe.kind)).count();
        if count == 0 {
            return CheckResult::not_applicable(
                id,
                &format!("no {what} could be sent (no processor registered)"),
            );
        }
        CheckResult::from_failures(
            id,
            &self.probe_failures(kinds),
            format!(
                "{count} {what} refused{}",
                if kinds.iter().all(|kind| kind.requires_untouched_data()) {
                    " without touching their data"
                } else {
                    ""
                }
            ),
        )
    }

    pub(super) fn counter_probes(&self, id: &str, kind: ProbeKind, what: &str) -> CheckResult {
        if self.expected_counters() == 0
            && self.observations.probes.iter().all(|probe| probe.kind != kind)
        {
            return CheckResult::not_applicable(id, "no processor describes feedback counters");
        }
        self.probes(id, &[kind], what)
    }
}
