//! The runtime's schedule: what the emulated OS does when, in time order.

use super::{Action, Emulator};
use crate::machine::NS_PER_MS;
use crate::scenario::EventKind;
use crate::scenario::timeline::SleepWindows;

impl Emulator<'_> {
    /// The runtime's actions in time order (at one instant in [`Action`] order): a sample
    /// every interval from 0 to the end (none while the system sleeps), the probes after the
    /// first, the events, the ends of fault windows, the power-ons and resumes of sleeps. The
    /// counters of `counter-near-wrap` processors are set here, before the first read.
    pub(super) fn schedule(&self) -> Vec<(u64, Action)> {
        let pofx = self.scenario.pofx;
        let interval = u64::from(pofx.sample_interval_ms) * NS_PER_MS;
        let duration = u64::from(pofx.duration_ms) * NS_PER_MS;
        // One binary search per sample over the sleeps sorted once.
        let sleeps = SleepWindows::new(self.scenario);
        // Samples fall on whole milliseconds (the interval is a number of them).
        let asleep =
            |at_ns: u64| sleeps.asleep(u32::try_from(at_ns / NS_PER_MS).unwrap_or(u32::MAX));
        let mut schedule: Vec<(u64, Action)> = Vec::new();
        let mut at = 0;
        while at <= duration {
            if !asleep(at) {
                schedule.push((at, Action::Sample));
            }
            at += interval;
        }
        schedule.push((0, Action::Probes));
        for (number, event) in self.scenario.events.iter().enumerate() {
            let at = u64::from(event.at_ms) * NS_PER_MS;
            match event.kind {
                EventKind::CounterNearWrap => {
                    // Before the first read: the counters start the runtime just below 2^64
                    // (the fixed counters, on a fixed-pmc machine, just below 2^width).
                    for index in event.processors.indexes(self.processor_count()) {
                        if self.scenario.uses_fixed_counters() {
                            let _ = self.machine.set_fixed_near_wrap(index, at);
                        } else {
                            let _ = self.machine.set_near_wrap(index, at);
                        }
                    }
                }
                EventKind::PmuReprogrammed { duration_ms, .. } => {
                    schedule.push((at, Action::Event(number)));
                    let end = duration_ms.map(|length| at + u64::from(length) * NS_PER_MS);
                    if let Some(end) = end.filter(|end| *end <= duration) {
                        schedule.push((end, Action::PmuResume(number)));
                    }
                }
                // The end of either window is an `EndFault`.
                EventKind::MsrFault { duration_ms } | EventKind::CountersZero { duration_ms } => {
                    schedule.push((at, Action::Event(number)));
                    if let Some(length) = duration_ms {
                        let end = at + u64::from(length) * NS_PER_MS;
                        if end <= duration {
                            schedule.push((end, Action::EndFault(number)));
                        }
                    }
                }
                EventKind::Sleep { state, duration_ms } => {
                    schedule.push((at, Action::Event(number)));
                    let resume = at + u64::from(duration_ms) * NS_PER_MS;
                    let lead = u64::from(state.power_on_lead_ms(duration_ms)) * NS_PER_MS;
                    schedule.push((resume - lead, Action::PowerOn(number)));
                    schedule.push((resume, Action::Resume(number)));
                }
                EventKind::CounterReset
                | EventKind::WrongProcessorRead { .. }
                | EventKind::HotAdd
                | EventKind::HotRemove
                | EventKind::Smi { .. } => schedule.push((at, Action::Event(number))),
            }
        }
        schedule.sort_unstable();
        schedule
    }
}
