//! The conformance probes: calls a PEP must refuse without touching their data.

use ppm_caller::names::{self, UNDEFINED_DPM, UNDEFINED_PPM};
use ppm_caller::payload::{MAX_QUERIED_COUNTERS, Sentinel, handle};
use ppm_engine::abi::{
    PEP_DPM_DEVICE_STARTED, PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE,
    PEP_DPM_UNREGISTER_DEVICE, PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, ULONG,
};

use ppm_engine::abi::PVOID;
use ppm_engine::notification::{self, Callback, Notification};

use super::Emulator;
use super::observations::ProcessorRecord;
use super::pep::PepUnderTest;
use super::records::{Probe, ProbeKind};
use crate::platform::PlatformOp;

impl Emulator<'_> {
    fn probe(
        &mut self,
        kind: ProbeKind,
        what: String,
        returned: bool,
        untouched: bool,
        trace: &[PlatformOp],
    ) {
        self.record(Probe { kind, what, returned, untouched }, trace);
    }

    /// Keeps `probe` with the platform operations its call made.
    fn record(&mut self, probe: Probe, trace: &[PlatformOp]) {
        self.observations.absorb(trace);
        self.observations.probes.push(probe);
    }

    /// A `FEEDBACK_READ` that must be refused (and, where the kind requires, leave its buffer alone).
    fn refused_read(
        &mut self,
        pep: &PepUnderTest,
        kind: ProbeKind,
        on: u32,
        handle_value: usize,
        counter_index: ULONG,
        what: String,
    ) {
        let (probe, trace) = refused_read_probe(pep, kind, on, handle_value, counter_index, what);
        self.record(probe, &trace);
    }

    /// What the conformance probes need to know: the live processors (index, handle,
    /// counters described) among `records`, every handle issued so far, and the first live
    /// processor's `FeedbackCounterCount`.
    pub(super) fn probe_inputs(&self, records: &[ProcessorRecord]) -> ProbeInputs {
        let live: Vec<(u32, usize, usize)> = records
            .iter()
            .filter_map(|record| {
                record
                    .handle
                    .map(|handle| (record.index, handle, record.described_counters().len()))
            })
            .collect();
        let issued: Vec<usize> = self
            .observations
            .devices
            .iter()
            .filter_map(|d| d.registered.map(|r| r.handle))
            .collect();
        let first_described = live
            .first()
            .and_then(|(index, _, _)| records.iter().find(|record| record.index == *index))
            .map_or(0, |record| {
                record.capabilities.map_or(0, |(_, capabilities)| capabilities.FeedbackCounterCount)
            });
        ProbeInputs { live, issued, first_described }
    }

    /// The conformance probes, run once after the first sample (every handle bound).
    pub(super) fn run_probes(&mut self, pep: &PepUnderTest, inputs: &ProbeInputs) {
        self.dpm_probes(pep);
        self.ppm_probes(pep, inputs.live.first().copied(), inputs.first_described);
        self.table_probes(pep, inputs.live.first().copied());
        self.forged_handle_probes(pep, &inputs.issued);
        self.counter_probes(pep, &inputs.live);
    }

    /// Every notification of the engine's table whose answer is fixed
    /// ([`Notification::fixed`]), sent on the first live processor with its handle (at offset 0
    /// of the structure, where every such DPM structure keeps its `DeviceHandle`) and a filled
    /// buffer: the PEP must return what the table says and write exactly the bytes of its
    /// `outputs` — nothing when it refuses or acknowledges, the documented fields when it
    /// declines in its outputs or completes `NOTIFY_COMPONENT_IDLE_STATE`.
    fn table_probes(&mut self, pep: &PepUnderTest, first: Option<(u32, usize, usize)>) {
        let Some((index, handle_value, _)) = first else { return };
        for row in notification::DPM.iter().chain(notification::PPM).filter(|row| row.fixed()) {
            let mut buffer = [TABLE_FILL; TABLE_BUFFER_WORDS];
            buffer[0] = handle_value as u64;
            let before = buffer;
            let data: PVOID = buffer.as_mut_ptr().cast();
            let (returned, trace) = pep.returned(index, |callbacks| match row.callback {
                // SAFETY: a 256-byte, 8-aligned buffer, larger than the structure of any
                // notification sent here, valid for the call.
                Callback::Dpm => unsafe { callbacks.dpm_raw(row.id, data) },
                // SAFETY: as above.
                Callback::Ppm => unsafe { callbacks.ppm_raw(handle(handle_value), row.id, data) },
            });
            self.observations.absorb(&trace);
            let problem = table_problem(row, returned, &before, &buffer);
            let what = format!("{} ({:#04x}) with a live handle", row.name, row.id);
            self.observations.documented_answers.push((what, problem));
        }
    }

    /// Undefined DPM notifications and NULL DPM data.
    fn dpm_probes(&mut self, pep: &PepUnderTest) {
        for notification in UNDEFINED_DPM {
            let (sent, trace) = pep.on(0, |callbacks| callbacks.dpm_undefined(notification));
            self.probe(
                ProbeKind::DpmUnknown,
                format!("DPM notification {notification:#x}"),
                sent.handled(),
                sent.untouched,
                &trace,
            );
        }
        for notification in [
            PEP_DPM_PREPARE_DEVICE,
            PEP_DPM_REGISTER_DEVICE,
            PEP_DPM_UNREGISTER_DEVICE,
            PEP_DPM_DEVICE_STARTED,
        ] {
            let (returned, trace) =
                pep.returned(0, |callbacks| callbacks.dpm::<Sentinel>(notification, None));
            self.probe(
                ProbeKind::DpmUnknown,
                format!("DPM notification {notification:#x} with NULL data"),
                returned,
                true,
                &trace,
            );
        }
        let (returned, accepted, trace) = pep.prepare(None);
        self.probe(
            ProbeKind::DpmUnknown,
            "PREPARE_DEVICE with a NULL DeviceId".to_owned(),
            returned && accepted,
            true,
            &trace,
        );
    }

    /// Undefined PPM notifications, NULL PPM data and a wrong `Count`, with the first live
    /// processor (index, handle, counters) and its `FeedbackCounterCount` (`described`).
    fn ppm_probes(
        &mut self,
        pep: &PepUnderTest,
        first: Option<(u32, usize, usize)>,
        described: ULONG,
    ) {
        for notification in UNDEFINED_PPM {
            let handles = [Some(0), first.map(|(_, handle, _)| handle)];
            for handle_value in handles.into_iter().flatten() {
                let on = first.map_or(0, |(index, _, _)| index);
                let (sent, trace) = pep.on(on, |callbacks| {
                    callbacks.ppm_undefined(handle(handle_value), notification)
                });
                let which = if handle_value == 0 { "NULL" } else { "a live" };
                self.probe(
                    ProbeKind::PpmUnknown,
                    format!("PPM notification {notification:#x} with {which} handle"),
                    sent.handled(),
                    sent.untouched,
                    &trace,
                );
            }
        }
        if let Some((index, handle_value, _)) = first {
            for notification in [
                PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
                PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
                PEP_NOTIFY_PPM_FEEDBACK_READ,
                PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
                PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
                PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE,
                PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE,
                PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE,
            ] {
                let name = names::ppm(notification).unwrap_or("?");
                let (returned, trace) = pep.returned(index, |callbacks| {
                    callbacks.ppm::<Sentinel>(handle(handle_value), notification, None)
                });
                self.probe(
                    ProbeKind::PpmNullData,
                    format!("{name} with NULL data"),
                    returned,
                    true,
                    &trace,
                );
            }
            // QUERY_FEEDBACK_COUNTERS with a Count other than FeedbackCounterCount.
            let wrong_counts: Vec<ULONG> =
                if described == 0 { vec![1] } else { vec![0, described.saturating_add(1)] };
            for wrong in wrong_counts
                .into_iter()
                .filter(|wrong| (*wrong as usize) <= MAX_QUERIED_COUNTERS + 1)
            {
                let (sent, trace) = pep.on(index, |callbacks| {
                    callbacks.query_feedback_counters(handle(handle_value), wrong)
                });
                let Some(sent) = sent else { continue };
                let what = format!(
                    "QUERY_FEEDBACK_COUNTERS with Count {wrong} (FeedbackCounterCount {described})"
                );
                self.probe(ProbeKind::WrongCount, what, sent.handled(), sent.untouched, &trace);
            }
        }
    }

    /// Handles the PEP never issued: near-misses of issued ones and values never issued.
    fn forged_handle_probes(&mut self, pep: &PepUnderTest, issued: &[usize]) {
        let mut forged: Vec<usize> = vec![
            1,
            0xDEAD_BEEF,
            usize::MAX,
            0x8000_0000_0000_0000,
            std::ptr::from_ref(&issued).addr(),
        ];
        for &issued_handle in issued.iter().take(4) {
            forged.extend([
                issued_handle.wrapping_add(1 << 32),
                issued_handle.wrapping_sub(1 << 32),
                issued_handle ^ (1 << 63),
                issued_handle ^ 0xFFFF_0000,
                !issued_handle,
            ]);
        }
        forged.retain(|value| *value != 0 && !issued.contains(value));
        forged.sort_unstable();
        forged.dedup();
        let processor_count = self.processor_count();
        for (number, forged_handle) in forged.into_iter().enumerate() {
            let on = u32::try_from(number).unwrap_or(0) % processor_count;
            self.refused_read(
                pep,
                ProbeKind::ForgedHandle,
                on,
                forged_handle,
                0,
                format!("FEEDBACK_READ with forged handle {forged_handle:#x}"),
            );
            let (sent, trace) =
                pep.on(on, |callbacks| callbacks.query_capabilities(handle(forged_handle)));
            self.probe(
                ProbeKind::ForgedHandle,
                format!("QUERY_CAPABILITIES with forged handle {forged_handle:#x}"),
                sent.handled(),
                sent.untouched,
                &trace,
            );
            let (sent, trace) =
                pep.on(on, |callbacks| callbacks.query_perf_capabilities(handle(forged_handle)));
            self.probe(
                ProbeKind::ForgedHandle,
                format!("QUERY_PERF_CAPABILITIES with forged handle {forged_handle:#x}"),
                sent.handled(),
                sent.untouched,
                &trace,
            );
        }
    }

    /// Per live processor: out-of-range indexes (or any index without counters) and a read on
    /// the wrong processor.
    fn counter_probes(&mut self, pep: &PepUnderTest, live: &[(u32, usize, usize)]) {
        let processor_count = self.processor_count();
        for (index, handle_value, count) in live {
            let (index, handle_value, count) =
                (*index, *handle_value, u32::try_from(*count).unwrap_or(u32::MAX));
            if count == 0 {
                self.refused_read(
                    pep,
                    ProbeKind::NoCounters,
                    index,
                    handle_value,
                    0,
                    format!(
                        "FEEDBACK_READ of counter 0 of processor {index}, which describes none"
                    ),
                );
                continue;
            }
            for counter_index in [count, count.saturating_add(7), u32::MAX] {
                self.refused_read(pep, ProbeKind::IndexOutOfRange, index, handle_value, counter_index, format!("FEEDBACK_READ of counter {counter_index} of processor {index} ({count} described)"));
            }
            if processor_count > 1 {
                let on = (index + 1) % processor_count;
                self.refused_read(
                    pep,
                    ProbeKind::WrongProcessor,
                    on,
                    handle_value,
                    0,
                    format!("FEEDBACK_READ of processor {index}'s counter on processor {on}"),
                );
            }
        }
    }

    /// Unregisters the last processor, then checks that its handle is stale.
    pub(super) fn unregister_last(&mut self, pep: &PepUnderTest) {
        let Some((index, handle_value)) = self
            .observations
            .processors
            .iter()
            .rev()
            .find_map(|record| record.handle.map(|handle| (record.index, handle)))
        else {
            return;
        };
        let (returned, trace) =
            pep.returned(0, |callbacks| callbacks.unregister(handle(handle_value)));
        self.observations.absorb(&trace);
        self.observations.unregistered = Some((index, returned));
        for (probe, trace) in stale_handle_probes(pep, index, handle_value) {
            self.record(probe, &trace);
        }
    }
}

/// What the conformance probes need (see `Emulator::probe_inputs`).
#[derive(Clone, Debug)]
pub(super) struct ProbeInputs {
    live: Vec<(u32, usize, usize)>,
    issued: Vec<usize>,
    first_described: ULONG,
}

/// A `FEEDBACK_READ` on processor `on` that must be refused (and, where the kind requires,
/// leave its buffer alone).
pub(super) fn refused_read_probe(
    pep: &PepUnderTest,
    kind: ProbeKind,
    on: u32,
    handle_value: usize,
    counter_index: ULONG,
    what: String,
) -> (Probe, Vec<PlatformOp>) {
    let (sent, trace) = pep.on(on, |callbacks| callbacks.read(handle(handle_value), counter_index));
    let untouched = sent.untouched || !kind.requires_untouched_data();
    (Probe { kind, what, returned: sent.handled(), untouched }, trace)
}

/// After processor `index`'s handle was unregistered: a `FEEDBACK_READ` and a
/// `QUERY_CAPABILITIES` with it as the processor, and a `DEVICE_STARTED` with it, each of which
/// must be refused.
pub(super) fn stale_handle_probes(
    pep: &PepUnderTest,
    index: u32,
    handle_value: usize,
) -> Vec<(Probe, Vec<PlatformOp>)> {
    let mut probes = vec![refused_read_probe(
        pep,
        ProbeKind::StaleHandle,
        index,
        handle_value,
        0,
        format!("FEEDBACK_READ with processor {index}'s handle after UNREGISTER"),
    )];
    let (sent, trace) =
        pep.on(index, |callbacks| callbacks.query_capabilities(handle(handle_value)));
    probes.push((
        Probe {
            kind: ProbeKind::StaleHandle,
            what: format!("QUERY_CAPABILITIES with processor {index}'s handle after UNREGISTER"),
            returned: sent.handled(),
            untouched: sent.untouched,
        },
        trace,
    ));
    let (returned, trace) =
        pep.returned(0, |callbacks| callbacks.device_started(handle(handle_value)));
    probes.push((
        Probe {
            kind: ProbeKind::StaleHandle,
            what: format!("DEVICE_STARTED with processor {index}'s handle after UNREGISTER"),
            returned,
            untouched: true,
        },
        trace,
    ));
    probes
}

/// The filler of [`Emulator::table_probes`]' buffers.
const TABLE_FILL: u64 = 0xA5A5_A5A5_A5A5_A5A5;
/// Their size in 8-byte words (256 bytes).
const TABLE_BUFFER_WORDS: usize = 32;

/// How an answer to `row` (returned, the buffer `before` and `after` the call) differs from
/// the table, or `None`.
fn table_problem(
    row: &Notification,
    returned: bool,
    before: &[u64; TABLE_BUFFER_WORDS],
    after: &[u64; TABLE_BUFFER_WORDS],
) -> Option<String> {
    let bytes = |words: &[u64; TABLE_BUFFER_WORDS]| -> Vec<u8> {
        words.iter().flat_map(|word| word.to_le_bytes()).collect()
    };
    let mut expected = bytes(before);
    for output in row.outputs {
        if let Some(range) = expected.get_mut(output.offset..output.offset + output.bytes.len()) {
            range.copy_from_slice(output.bytes);
        }
    }
    let got = bytes(after);
    let differing: Vec<usize> = (0..got.len()).filter(|&at| got[at] != expected[at]).collect();
    let expected_return = row.answer.returns();
    match (returned == expected_return, differing.first(), differing.last()) {
        (true, None, _) | (true, Some(_), None) => None,
        (false, _, _) => Some(format!(
            "returned {}, the table says {} ({})",
            if returned { "TRUE" } else { "FALSE" },
            if expected_return { "TRUE" } else { "FALSE" },
            row.answer.label()
        )),
        (true, Some(first), Some(last)) => Some(format!(
            "bytes {first}..={last} are not what the table says ({}: bytes {:?} written as {:?})",
            row.answer.label(),
            row.writes,
            row.outputs
        )),
    }
}
