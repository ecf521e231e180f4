//! The PEP instance: configuration, detected hardware facts and the processor table.
//!
//! One [`Pep`] exists per registration. The C callbacks ([`crate::callbacks`]) find it through
//! their host ([`crate::host::PepHost`]), decode the notification and hand it to [`crate::dpm`]
//! or [`crate::ppm`].

use core::sync::atomic::Ordering;

use crate::abi::PEPHANDLE;
use crate::config::Config;
use crate::counters::{CounterSource, FeedbackSetup, NoCountersReason, NominalRateSource};
use crate::cpu::CpuFeatures;
use crate::device_id::{DeviceIdLog, DeviceIdPatterns};
use crate::perf::{self, PerfCapabilities, PerfSource};
use crate::platform::{Passive, Platform};
use crate::processor::{ProcessorSlot, slot_index};

/// The PEP: configuration, detected hardware facts and the processor table.
///
/// Created once at `PASSIVE_LEVEL` by [`Pep::new`]; afterwards only its atomics change, so the
/// callbacks share it by reference at any IRQL.
pub struct Pep<P: Platform> {
    platform: P,
    pub(crate) feedback: FeedbackSetup,
    pub(crate) perf: PerfCapabilities,
    perf_source: PerfSource,
    pub(crate) cpu: CpuFeatures,
    pub(crate) patterns: DeviceIdPatterns,
    pub(crate) transition_latency_100ns: u32,
    pub(crate) slots: &'static [ProcessorSlot],
    pub(crate) device_log: DeviceIdLog,
}

impl<P: Platform> Pep<P> {
    /// Detects the hardware, decides the counter setup and takes `slots` as the processor
    /// table (one slot per processor device the PEP may accept; size it for the maximum
    /// processor count of all groups).
    ///
    /// `PASSIVE_LEVEL`, which `passive` proves. The caller keeps the thread on one processor
    /// for the whole call (set its affinity): the nominal-rate calibration reads the counters
    /// twice, ~10 ms apart, and both reads must come from the same processor.
    pub fn new(
        passive: &Passive,
        platform: P,
        config: &Config,
        slots: &'static [ProcessorSlot],
    ) -> Self {
        let cpu = CpuFeatures::detect(&platform);
        let mut perf_source = PerfSource::Flat;
        let (feedback, perf) =
            FeedbackSetup::detect(passive, &platform, &cpu, config, |nominal_mhz| {
                let (caps, source) =
                    perf::detect(&platform, &cpu, config.perf_capabilities, nominal_mhz);
                perf_source = source;
                caps
            });
        // The table may be reused (an emulator, a test): every slot starts free, with no live
        // handle and no device holding it.
        for slot in slots {
            slot.lifecycle.store(0, Ordering::Relaxed);
            slot.live_handle.store(0, Ordering::Relaxed);
            slot.device_id_hash.store(0, Ordering::Relaxed);
            slot.reset_counters();
        }
        Self {
            platform,
            feedback,
            perf,
            perf_source,
            cpu,
            patterns: config.device_id_patterns.clone(),
            transition_latency_100ns: config.transition_latency_100ns,
            slots,
            device_log: DeviceIdLog::new(),
        }
    }

    /// The platform.
    pub const fn platform(&self) -> &P {
        &self.platform
    }

    /// Feedback counters described per processor (0 without a usable source).
    #[must_use]
    pub const fn feedback_counter_count(&self) -> u32 {
        self.feedback.count
    }

    /// The counter source in use.
    #[must_use]
    pub const fn counter_source(&self) -> CounterSource {
        self.feedback.source
    }

    /// Why no counters are reported, when [`Self::feedback_counter_count`] is 0.
    #[must_use]
    pub const fn no_counters_reason(&self) -> Option<NoCountersReason> {
        self.feedback.reason
    }

    /// The nominal rate in MHz (0 when unknown).
    #[must_use]
    pub const fn nominal_mhz(&self) -> u32 {
        self.feedback.nominal_mhz
    }

    /// Where the nominal rate came from.
    #[must_use]
    pub const fn nominal_rate_source(&self) -> NominalRateSource {
        self.feedback.nominal_source
    }

    /// The nominal rate measured at initialisation, in MHz (0 when not measured).
    #[must_use]
    pub const fn calibrated_mhz(&self) -> u32 {
        self.feedback.calibrated_mhz
    }

    /// The perf capabilities served.
    #[must_use]
    pub const fn perf_capabilities(&self) -> PerfCapabilities {
        self.perf
    }

    /// Where the perf capabilities came from.
    #[must_use]
    pub const fn perf_source(&self) -> PerfSource {
        self.perf_source
    }

    /// The CPUID facts read at initialisation.
    #[must_use]
    pub const fn cpu_features(&self) -> &CpuFeatures {
        &self.cpu
    }

    /// The processor table's capacity.
    #[must_use]
    pub const fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Processor devices currently registered (registered or started). `PASSIVE_LEVEL`.
    #[must_use]
    pub fn registered_count(&self) -> usize {
        self.slots.iter().filter(|slot| slot.is_live()).count()
    }

    /// The device ids PoFx offered and the decisions taken.
    #[must_use]
    pub const fn device_log(&self) -> &DeviceIdLog {
        &self.device_log
    }

    /// The live slot a handle names: registered or started, and of the handle's generation
    /// (the slot's `live_handle` is exactly this value). Any IRQL; touches only the table.
    #[inline]
    pub(crate) fn slot_for_handle(&self, handle: PEPHANDLE) -> Option<(usize, &ProcessorSlot)> {
        let value = handle.addr();
        let index = slot_index(value);
        let slot = self.slots.get(index)?;
        (slot.live_handle.load(Ordering::Acquire) == value).then_some((index, slot))
    }
}
