//! PoFx's start-up once the PEP registered: every device offered, the processors accepted
//! initialised, the start-up queries (the PPM queries with a NULL handle, sent once), the
//! devices started.

use ppm_caller::names;
use ppm_caller::payload::{CountPayload, MAX_QUERIED_COUNTERS, handle};
use ppm_engine::abi::{
    PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, PEP_NOTIFY_PPM_QUERY_VETO_REASONS,
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_PERF_CAPABILITIES,
};

use super::Emulator;
use super::digest::ReadDigest;
use super::observations::{ProcessorRecord, Tally, absorb_into};
use super::pep::PepUnderTest;
use super::records::{DeviceRecord, StartupQuery};
use crate::scenario::CpuKind;

/// The device ids of a flavour's non-processor devices, in ACPI-namespace-like order.
#[must_use]
pub const fn default_other_devices(cpu: CpuKind) -> &'static [&'static str] {
    match cpu {
        // Ice Lake and later firmware names the PCI root `\_SB.PC00`.
        CpuKind::IntelHwp => &[
            "\\_SB.PC00",
            "\\_SB.PC00.GFX0",
            "\\_SB.PC00.XHCI",
            "\\_SB.PC00.I2C0",
            "\\_SB.PC00.UA00",
            "\\_SB.PC00.RP01.PXSX",
            "\\_SB.PEPD",
            "\\_SB.PWRB",
            "\\_SB.LID0",
            "\\_SB.BAT0",
            "ACPI\\PNP0C0C",
            "\\_TZ.TZ00",
        ],
        CpuKind::AmdCppc => &[
            "\\_SB.PCI0",
            "\\_SB.PCI0.GP17.VGA",
            "\\_SB.PCI0.GP17.XHC0",
            "\\_SB.I2CA",
            "\\_SB.FUR0",
            "\\_SB.PEP",
            "\\_SB.PWRB",
            "\\_SB.LID",
            "\\_SB.BAT1",
            "\\_TZ.THRM",
        ],
        // Snapdragon-like ACPI tables.
        CpuKind::Arm64 => &[
            "\\_SB.PEP0",
            "\\_SB.GIO0",
            "\\_SB.UFS0",
            "\\_SB.ADSP",
            "\\_SB.GPU0",
            "\\_SB.URS0.USB0",
            "\\_SB.PMIC",
            "\\_SB.PWRB",
            "\\_SB.BAT1",
            "\\_TZ.TZ98",
        ],
        CpuKind::IntelLegacy => &[
            "\\_SB.PCI0",
            "\\_SB.PCI0.GFX0",
            "\\_SB.PCI0.XHC",
            "\\_SB.PCI0.SAT0",
            "\\_SB.PCI0.LPCB.EC0",
            "\\_SB.PCI0.RP01.PXSX",
            "\\_SB.I2C1",
            "\\_SB.UAR1",
            "\\_SB.PWRB",
            "ACPI\\PNP0C0C",
        ],
    }
}

impl Emulator<'_> {
    /// PREPARE every device, processors interleaved with the others, then REGISTER the ones
    /// accepted.
    pub(super) fn offer_devices(&mut self, pep: &PepUnderTest) {
        let processors = self.processor_count();
        let others: Vec<String> =
            self.scenario.platform.other_devices.clone().unwrap_or_else(|| {
                default_other_devices(self.scenario.platform.cpu)
                    .iter()
                    .map(|id| (*id).to_owned())
                    .collect()
            });
        let ids = &self.scenario.platform.device_ids;
        // Other device k goes before processor ⌊(k+1)(n+1)/(m+1)⌋ (after the last when = n).
        let slot_of = |k: usize| (k + 1) * (processors as usize + 1) / (others.len() + 1);
        let mut order: Vec<(String, Option<u32>)> = Vec::new();
        let mut next_other = 0;
        for index in 0..=processors {
            while next_other < others.len() && slot_of(next_other) <= index as usize {
                order.push((others[next_other].clone(), None));
                next_other += 1;
            }
            // Processors hot-added later are not offered at start-up.
            if index < processors && self.scenario.initially_present(index) {
                order.push((ids.device_id(index), Some(index)));
            }
        }
        self.observations.processors = (0..processors)
            .map(|index| ProcessorRecord {
                index,
                device_id: ids.device_id(index),
                handle: None,
                capabilities: None,
                counters: None,
                perf: None,
                domain: None,
                digest: ReadDigest::new(self.scenario, self.read_observer.clone()),
                issued_handles: Vec::new(),
                removed: false,
            })
            .collect();
        for (id, processor) in order {
            let (returned, accepted, trace) = pep.prepare(Some(&id));
            self.observations.absorb(&trace);
            self.observations.devices.push(DeviceRecord {
                id,
                processor,
                prepare_returned: returned,
                accepted,
                registered: None,
                started: None,
            });
        }
        for (number, device) in self.observations.devices.iter_mut().enumerate() {
            if !(device.prepare_returned && device.accepted) {
                continue;
            }
            let kernel_handle = 0xFFFF_C000_0000_0000 + (number + 1) * 0x100;
            let (record, trace) = pep.register(&device.id, kernel_handle);
            device.registered = Some(record);
            if let (Some(index), Some(live)) = (device.processor, record.live_handle())
                && let Some(processor) = self.observations.processors.get_mut(index as usize)
            {
                processor.handle = Some(live);
                processor.issued_handles.push(live);
            }
            absorb_into(
                &mut self.observations.msr_reads,
                &mut self.observations.unannounced_msr_reads,
                &mut self.observations.unannounced_msr_read_count,
                &trace,
            );
        }
    }

    /// Per registered processor, as that processor: `QUERY_CAPABILITIES`, `QUERY_FEEDBACK_COUNTERS`
    /// (when counters are announced), `QUERY_PERF_CAPABILITIES`, `QUERY_DOMAIN_INFO`.
    pub(super) fn initialise_processors(&mut self, pep: &PepUnderTest) {
        let mut tally = Tally::default();
        for record in &mut self.observations.processors {
            if record.handle.is_some() {
                initialise_processor(pep, record, &mut tally);
            }
        }
        tally.merge_into(&mut self.observations);
    }

    /// The queries PoFx documents once all processors registered, before their devices
    /// start, with a NULL handle: `QUERY_PLATFORM_STATES` ("sent once upon boot"),
    /// `QUERY_VETO_REASONS` (at processor initialisation) and `ENUMERATE_BOOT_VETOES` (no
    /// payload; before the first idle entry). Count buffers start at a sentinel, so an
    /// untouched one shows.
    pub(super) fn startup_queries(&mut self, pep: &PepUnderTest) {
        let mut count = |notification| {
            let (sent, trace) = pep.on(0, |callbacks| callbacks.query_count(notification));
            self.observations.absorb(&trace);
            self.observations.startup_queries.push(StartupQuery {
                notification,
                name: names::ppm(notification).unwrap_or("?"),
                returned: sent.handled(),
                count: (!sent.untouched).then_some(sent.payload.count),
            });
        };
        count(PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES);
        count(PEP_NOTIFY_PPM_QUERY_VETO_REASONS);
        let vetoes = PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES;
        let (returned, trace) =
            pep.returned(0, |callbacks| callbacks.ppm::<CountPayload>(handle(0), vetoes, None));
        self.observations.absorb(&trace);
        self.observations.startup_queries.push(StartupQuery {
            notification: vetoes,
            name: names::ppm(vetoes).unwrap_or("?"),
            returned,
            count: None,
        });
    }

    /// `DEVICE_STARTED` for every registered device.
    pub(super) fn start_devices(&mut self, pep: &PepUnderTest) {
        for number in 0..self.observations.devices.len() {
            let Some(handle_value) = self.observations.devices[number]
                .registered
                .and_then(|record| record.live_handle())
            else {
                continue;
            };
            let (returned, trace) =
                pep.returned(0, |callbacks| callbacks.device_started(handle(handle_value)));
            self.observations.absorb(&trace);
            self.observations.devices[number].started = Some(returned);
        }
    }
}

/// As processor `record.index`, with its live handle: `QUERY_CAPABILITIES`,
/// `QUERY_FEEDBACK_COUNTERS` (when counters are announced), `QUERY_PERF_CAPABILITIES`,
/// `QUERY_DOMAIN_INFO` — at start-up and when the processor is hot-added.
pub(super) fn initialise_processor(
    pep: &PepUnderTest,
    record: &mut ProcessorRecord,
    tally: &mut Tally,
) {
    let Some(handle_value) = record.handle else { return };
    let (index, pep_handle) = (record.index, handle(handle_value));
    let mut capabilities = PEP_PPM_QUERY_CAPABILITIES::zeroed();
    let (returned, trace) = pep.returned(index, |callbacks| {
        callbacks.ppm(pep_handle, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, Some(&mut capabilities))
    });
    tally.absorb(&trace);
    let count = capabilities.FeedbackCounterCount;
    let counters = if returned && (1..=MAX_QUERIED_COUNTERS).contains(&(count as usize)) {
        let (sent, trace) =
            pep.on(index, |callbacks| callbacks.query_feedback_counters(pep_handle, count));
        tally.absorb(&trace);
        sent.map(|sent| (sent.handled(), sent.payload.counters[..count as usize].to_vec()))
    } else {
        None
    };
    let mut perf = PEP_PPM_QUERY_PERF_CAPABILITIES::zeroed();
    let (perf_returned, trace) = pep.returned(index, |callbacks| {
        callbacks.ppm(pep_handle, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, Some(&mut perf))
    });
    tally.absorb(&trace);
    let mut domain = PEP_PPM_QUERY_DOMAIN_INFO::zeroed();
    domain.DomainId = if perf_returned { perf.DomainId } else { index };
    let (domain_returned, trace) = pep.returned(index, |callbacks| {
        callbacks.ppm(pep_handle, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, Some(&mut domain))
    });
    tally.absorb(&trace);
    record.capabilities = Some((returned, capabilities));
    record.counters = counters;
    record.perf = Some((perf_returned, perf));
    record.domain = Some((domain_returned, domain));
}
