//! Everything a run observed: the per-processor records (with their read digests) and the
//! run's [`Observations`].

use ppm_engine::abi::{
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PROCESSOR_FEEDBACK_COUNTER,
};

use super::digest::ReadDigest;
use super::records::{
    DeviceRecord, EngineSummary, HotplugRecord, Probe, RegistrationRecord, SleepRecord,
    StartupQuery,
};
use crate::driver_entry::DriverEntryRecord;
use crate::machine::Machine;
use crate::platform::{MsrRead, PlatformOp};

/// Everything observed about one processor.
#[derive(Clone, Debug)]
pub struct ProcessorRecord {
    /// Global index.
    pub index: u32,
    /// The device id offered.
    pub device_id: String,
    /// The handle the PEP returned, if it accepted the processor.
    pub handle: Option<usize>,
    /// `QUERY_CAPABILITIES`: returned, answer.
    pub capabilities: Option<(bool, PEP_PPM_QUERY_CAPABILITIES)>,
    /// `QUERY_FEEDBACK_COUNTERS`: returned, descriptors (sent when the count is 1..=64).
    pub counters: Option<(bool, Vec<PEP_PROCESSOR_FEEDBACK_COUNTER>)>,
    /// `QUERY_PERF_CAPABILITIES`: returned, answer.
    pub perf: Option<(bool, PEP_PPM_QUERY_PERF_CAPABILITIES)>,
    /// `QUERY_DOMAIN_INFO` for the domain `QUERY_PERF_CAPABILITIES` named: returned, answer.
    pub domain: Option<(bool, PEP_PPM_QUERY_DOMAIN_INFO)>,
    /// The runtime loop's reads, digested as they are made (see [`ReadDigest`]).
    pub digest: ReadDigest,
    /// Every handle the PEP issued for the processor, in order (a processor hot-added again
    /// gets a new one).
    pub issued_handles: Vec<usize>,
    /// Whether the processor was hot-removed (and not added again).
    pub removed: bool,
}

impl ProcessorRecord {
    /// Folds the reads added to the digest so far (see [`ReadDigest::fold`]).
    pub fn fold_reads(&mut self, machine: &Machine) {
        let capabilities = self
            .capabilities
            .map(|(_, answer)| (answer.FeedbackCounterCount, answer.IdleStateCount));
        let frequency_rate = self.described_counters().first().map(|counter| counter.NominalRate);
        self.digest.fold(machine, self.index, capabilities, frequency_rate);
    }

    /// The feedback counters the OS uses: those `QUERY_FEEDBACK_COUNTERS` described.
    #[must_use]
    pub fn described_counters(&self) -> &[PEP_PROCESSOR_FEEDBACK_COUNTER] {
        match &self.counters {
            Some((true, descriptors)) => descriptors,
            _ => &[],
        }
    }
}

/// Everything a run observed.
#[derive(Clone, Debug)]
pub struct Observations {
    /// What the image did, when the image backend ran (`None`: the engine).
    pub image: Option<crate::image::ImageObservation>,
    /// Registration (`status`: what `PoFx`'s checks of the structures returned).
    pub registration: RegistrationRecord,
    /// `DriverEntry`, as the emulated kernel services saw it.
    pub driver_entry: Option<DriverEntryRecord>,
    /// Every device offered, in order.
    pub devices: Vec<DeviceRecord>,
    /// Per processor.
    pub processors: Vec<ProcessorRecord>,
    /// The conformance probes.
    pub probes: Vec<Probe>,
    /// Every notification of the engine's table with a fixed answer, sent with a live handle:
    /// what was sent and how the answer differed from the table (`None`: as documented).
    pub documented_answers: Vec<(String, Option<String>)>,
    /// `PEP_DPM_UNREGISTER_DEVICE` at the end: processor, return value.
    pub unregistered: Option<(u32, bool)>,
    /// MSR reads in all.
    pub msr_reads: usize,
    /// MSR reads CPUID did not announce (the first 32).
    pub unannounced_msr_reads: Vec<MsrRead>,
    /// How many MSR reads CPUID did not announce.
    pub unannounced_msr_read_count: usize,
    /// The engine's own account.
    pub engine: EngineSummary,
    /// Clock times of the runtime's first and last samples, ns.
    pub runtime_ns: (u64, u64),
    /// The `hot-add`/`hot-remove` events, in the order they happened.
    pub hotplug: Vec<HotplugRecord>,
    /// The `sleep` events, in the order they happened.
    pub sleeps: Vec<SleepRecord>,
    /// The processor threads the runtime used (0: one thread did everything).
    pub processor_threads: u32,
    /// The start-up queries sent once all processors registered, in order.
    pub startup_queries: Vec<StartupQuery>,
}

/// MSR reads taken note of, per thread, merged into the [`Observations`] afterwards.
#[derive(Debug, Default)]
pub(super) struct Tally {
    msr_reads: usize,
    unannounced: Vec<MsrRead>,
    unannounced_count: usize,
}

impl Tally {
    pub(super) fn absorb(&mut self, trace: &[PlatformOp]) {
        absorb_into(&mut self.msr_reads, &mut self.unannounced, &mut self.unannounced_count, trace);
    }

    pub(super) fn merge(&mut self, other: Self) {
        self.msr_reads += other.msr_reads;
        self.unannounced_count += other.unannounced_count;
        let room = 32_usize.saturating_sub(self.unannounced.len());
        self.unannounced.extend(other.unannounced.into_iter().take(room));
    }

    pub(super) fn merge_into(self, observations: &mut Observations) {
        let mut total = Self {
            msr_reads: observations.msr_reads,
            unannounced: std::mem::take(&mut observations.unannounced_msr_reads),
            unannounced_count: observations.unannounced_msr_read_count,
        };
        total.merge(self);
        observations.msr_reads = total.msr_reads;
        observations.unannounced_msr_reads = total.unannounced;
        observations.unannounced_msr_read_count = total.unannounced_count;
    }
}

impl Observations {
    /// Takes note of the MSR reads in a trace.
    pub(super) fn absorb(&mut self, trace: &[PlatformOp]) {
        absorb_into(
            &mut self.msr_reads,
            &mut self.unannounced_msr_reads,
            &mut self.unannounced_msr_read_count,
            trace,
        );
    }
}

pub(super) fn absorb_into(
    total: &mut usize,
    unannounced: &mut Vec<MsrRead>,
    unannounced_count: &mut usize,
    trace: &[PlatformOp],
) {
    for op in trace {
        if let PlatformOp::ReadMsr(read) = op {
            *total += 1;
            if !read.announced {
                *unannounced_count += 1;
                if unannounced.len() < 32 {
                    unannounced.push(*read);
                }
            }
        }
    }
}
