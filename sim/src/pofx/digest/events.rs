//! The digests of sleeps, nested notifications and handle exactness.

use super::{Facts, HandleExactness, NestedDigest, Served, SleepDigest};
use crate::pofx::records::{NestedNotification, ReadRecord};

impl SleepDigest {
    /// An interval between served reads of `counter` on one handle: when it spans the sleep
    /// (from before its start to after the resume), it must not report more than the counts
    /// the processor made since it was powered on again (the raw values the second read saw).
    pub(super) fn interval(
        &mut self,
        facts: &Facts<'_>,
        counter: u32,
        first: &ReadRecord,
        second: &ReadRecord,
    ) {
        // The OS does not read while the system sleeps: a pair with its first read before
        // the resume (the last sample, at or just after the sleep's start, comes before
        // ENTER_SYSTEM_STATE) and its second after it spans the sleep.
        let resume_ns = self.resume_ns;
        if facts.machine.runtime_ns(first.at_ns) >= resume_ns
            || facts.machine.runtime_ns(second.at_ns) < resume_ns
        {
            return;
        }
        self.across += 1;
        let mut since = second.raw.map_or((0, 0), |raw| (raw.nominal, raw.actual));
        // ARM64: the reported constant count is scaled to NominalRate (and rounded, one more).
        if let Some(scaled) = facts.scaled_nominal(since.0) {
            since.0 = scaled.saturating_add(1);
        }
        let delta =
            (second.nominal.wrapping_sub(first.nominal), second.actual.wrapping_sub(first.actual));
        if delta.0 > since.0 || delta.1 > since.1 {
            self.failures.push_with(|| {
                format!(
                    "processor {} counter {counter}: ΔNominal {}, ΔActual {} across the sleep, more than the {}/{} counts since the processor was powered on again",
                    facts.index, delta.0, delta.1, since.0, since.1
                )
            });
        }
    }
}

impl NestedDigest {
    pub(super) fn fold(
        &mut self,
        facts: &Facts<'_>,
        capabilities: Option<(u32, u32)>,
        read: &ReadRecord,
    ) {
        self.outer += usize::from(read.returned);
        for call in &read.nested {
            self.calls += 1;
            let name = || {
                format!(
                    "processor {} at {} ms, nested {:?} at {:?}",
                    facts.index,
                    facts.runtime_ms(read.at_ns),
                    call.notification,
                    call.point
                )
            };
            if call.masked {
                self.masked.push_with(|| format!("{}: delivered inside a masked section", name()));
            }
            let problem = match call.notification {
                NestedNotification::OwnRead => {
                    self.points += 1;
                    self.nested += usize::from(call.returned);
                    (!call.returned && !call.faulted).then_some("refused with working counters")
                }
                NestedNotification::ForeignRead => (call.returned || !call.untouched)
                    .then_some("a handle bound to another processor was served"),
                NestedNotification::QueryCapabilities => (!call.returned
                    || call.capabilities != capabilities)
                    .then_some("answered other than at initialisation"),
                NestedNotification::PerfCheckComplete => (!call.returned).then_some("refused"),
            };
            if let Some(problem) = problem {
                self.failures.push_with(|| format!("{}: {problem}", name()));
            }
        }
        let Some(states) = &mut self.exactness else { return };
        // The call's own read and its nested reads of the same counters, in the order they
        // accumulated (every call's reads lie between the previous call's and the next's).
        let mut served: Vec<Served> = Vec::new();
        if let (true, Some(raw)) = (read.returned, read.raw) {
            served.push(Served { raw, nominal: read.nominal, actual: read.actual, what: "read" });
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
        if served.is_empty() {
            return;
        }
        served.sort_by_key(|read| read.raw.at_ns);
        let position =
            states.iter().position(|state| state.handle == read.handle).unwrap_or_else(|| {
                states.push(HandleExactness {
                    handle: read.handle,
                    previous: None,
                    base: None,
                    problem: None,
                    stopped: false,
                });
                states.len() - 1
            });
        let Some(state) = states.get_mut(position) else { return };
        for current in served {
            state.next(facts, current);
        }
    }
}

impl HandleExactness {
    /// Every served read of a handle, in the order they accumulated, must not go backwards,
    /// and within a run of reads without a discontinuity of the processor's counters the
    /// totals must have grown by exactly what the raw counters did since the run's first read.
    #[allow(clippy::cast_precision_loss)] // A time in milliseconds, for the message.
    pub(super) fn next(&mut self, facts: &Facts<'_>, current: Served) {
        if self.stopped {
            return;
        }
        let Some(previous) = self.previous.replace(current) else { return };
        let handle = self.handle;
        let name = || {
            let at_ms = facts.machine.runtime_ns(current.raw.at_ns) as f64 / 1e6;
            format!("processor {} handle {handle:#x}, {} at {at_ms} ms", facts.index, current.what)
        };
        if current.nominal < previous.nominal || current.actual < previous.actual {
            self.problem.get_or_insert_with(|| format!("{}: went backwards", name()));
            self.stopped = true;
            return;
        }
        let jumped = facts.jumps.jumped(previous.raw.at_ns, current.raw.at_ns);
        if jumped {
            self.base = Some(current);
            return;
        }
        let start = *self.base.get_or_insert(previous);
        if current.raw.actual < previous.raw.actual || current.raw.nominal < previous.raw.nominal {
            self.problem.get_or_insert_with(|| {
                format!(
                    "{}: the raw counters went backwards ({}/{} after {}/{}) with no reset between: a read was torn",
                    name(),
                    current.raw.actual,
                    current.raw.nominal,
                    previous.raw.actual,
                    previous.raw.nominal
                )
            });
        }
        let mut hardware = (
            current.raw.nominal.wrapping_sub(start.raw.nominal),
            current.raw.actual.wrapping_sub(start.raw.actual),
        );
        let reported = (
            current.nominal.wrapping_sub(start.nominal),
            current.actual.wrapping_sub(start.actual),
        );
        // ARM64: the constant count is reported scaled to NominalRate, each total rounded
        // down, so a difference is the scaled hardware count or one more.
        if let Some(scaled) = facts.scaled_nominal(hardware.0) {
            hardware.0 = if reported.0 == scaled.saturating_add(1) { reported.0 } else { scaled };
        }
        if hardware != reported {
            self.problem.get_or_insert_with(|| {
                format!(
                    "{}: ΔNominal/ΔActual {}/{} since the run began, but the hardware counted {}/{}",
                    name(),
                    reported.0,
                    reported.1,
                    hardware.0,
                    hardware.1
                )
            });
            self.stopped = true;
        }
    }
}
