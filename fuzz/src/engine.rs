//! [`Engine`]: one engine instance built from a fuzzer [`Setup`], reachable by the C callbacks,
//! dropped at the end of the input.

use std::ffi::c_void;

use arbitrary::Arbitrary;
use ppm_caller::Entered;
use ppm_engine::abi::{
    PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE, PEP_DPM_UNREGISTER_DEVICE, PEPHANDLE,
    PepDeviceAccepted, TRUE, ULONG,
};
use ppm_engine::config::{CounterSourcePreference, FeedbackCounterPolicy};
use ppm_engine::device_id::DeviceIdPatterns;
use ppm_engine::perf::PerfCapabilities;
use ppm_engine::{Config, Passive, Pep, ProcessorSlot};

use crate::input::IdSpec;
use crate::platform::{CounterSetup, CpuSetup, FuzzPlatform, MsrSetup};
use crate::region::Region;
use crate::strings::DeviceString;

/// The most processor slots an engine gets.
pub const MAX_CAPACITY: usize = 16;

/// What a user can configure.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct ConfigSetup {
    /// Feedback counters disabled by policy.
    pub disabled: bool,
    /// Counter source preference (registry value; unknown values mean auto).
    pub source: u8,
    /// The PERFORMANCE view as a second counter.
    pub performance_view: bool,
    /// Nominal MHz override.
    pub nominal_mhz: Option<u32>,
    /// Perf capabilities override (highest, nominal, lowest nonlinear, lowest).
    pub perf: Option<(u32, u32, u32, u32)>,
    /// Device-id patterns replacing the defaults.
    pub patterns: Option<Vec<Vec<u16>>>,
    /// Transition latency.
    pub latency: u32,
}

impl ConfigSetup {
    /// The engine configuration.
    #[must_use]
    pub fn config(&self) -> Config {
        let mut config = Config::new();
        if self.disabled {
            config.feedback_counters = FeedbackCounterPolicy::Disabled;
        }
        config.counter_source = CounterSourcePreference::from_registry(u32::from(self.source))
            .unwrap_or(CounterSourcePreference::Auto);
        config.performance_counter_view = self.performance_view;
        config.nominal_mhz = self.nominal_mhz;
        config.perf_capabilities = self.perf.map(|(highest, nominal, lowest_nonlinear, lowest)| {
            PerfCapabilities { highest, nominal, lowest_nonlinear, lowest }
        });
        if let Some(patterns) = &self.patterns {
            let mut set = DeviceIdPatterns::empty();
            for pattern in patterns {
                let _ = set.push_utf16(pattern);
            }
            config.device_id_patterns = set;
        }
        config.transition_latency_100ns = self.latency;
        config
    }
}

/// Everything an engine instance is built from.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// CPUID.
    pub cpu: CpuSetup,
    /// The non-counter MSRs.
    pub msrs: MsrSetup,
    /// Counters and time.
    pub counters: CounterSetup,
    /// Configuration.
    pub config: ConfigSetup,
    /// Processor-table capacity (1..=16).
    pub capacity: u8,
    /// The processor `Pep::new` runs on.
    pub processor: u32,
}

/// One engine instance over a fresh processor table (as the driver's, allocated once and
/// never reused). While it lives, the C callbacks of `FuzzPlatform` reach it.
#[derive(Debug)]
pub struct Engine {
    pep: *mut Pep<FuzzPlatform>,
    slots: *mut [ProcessorSlot],
    /// The engine entered on the (single) fuzzing thread: the callbacks' `ppm_caller::ThreadHost`.
    entered: Option<Entered<'static>>,
}

impl Engine {
    /// Builds the platform and the engine (`Pep::new`: detection, calibration) and publishes it.
    ///
    /// # Panics
    /// When another engine is alive.
    #[must_use]
    pub fn new(setup: &Setup) -> Self {
        let capacity = usize::from(setup.capacity).clamp(1, MAX_CAPACITY);
        let slots: Box<[ProcessorSlot]> = (0..capacity).map(|_| ProcessorSlot::new()).collect();
        let slots = Box::into_raw(slots);
        // SAFETY: from `Box::into_raw`; freed by `drop` only after the engine that borrows it.
        let table: &'static [ProcessorSlot] = unsafe { &*slots };
        let platform = FuzzPlatform::new(setup.cpu, setup.msrs, setup.counters, setup.processor);
        // SAFETY: the harness's host thread runs at no raised IRQL, and the token lives only for
        // the construction.
        let passive = unsafe { Passive::assume() };
        let config = setup.config.config();
        let pep = Box::into_raw(Box::new(Pep::new(&passive, platform, &config, table)));
        assert!(!ppm_caller::is_entered(), "one engine at a time");
        // SAFETY: from `Box::into_raw`; freed by `drop` only after the guard is dropped.
        let entered = Some(ppm_caller::enter(unsafe { &*pep }));
        Self { pep, slots, entered }
    }

    /// The engine.
    #[must_use]
    pub const fn pep(&self) -> &Pep<FuzzPlatform> {
        // SAFETY: `pep` came from `Box::into_raw` and is freed only by `drop`.
        unsafe { &*self.pep }
    }

    /// The platform.
    #[must_use]
    pub const fn platform(&self) -> &FuzzPlatform {
        self.pep().platform()
    }

    /// Calls `AcceptDeviceNotification`.
    ///
    /// # Safety
    /// `data` is NULL or points to memory valid for the documented structure of `notification`
    /// (any bytes for an unknown notification), with valid or NULL embedded pointers.
    ///
    /// # Panics
    /// When the callback returns neither TRUE nor FALSE.
    #[must_use]
    pub unsafe fn dpm(&self, notification: ULONG, data: *mut c_void) -> bool {
        // SAFETY: the caller's contract for `data`.
        unsafe { ppm_caller::dpm::<FuzzPlatform>(notification, data) }
    }

    /// Calls `AcceptProcessorNotification`.
    ///
    /// # Safety
    /// As [`Self::dpm`]; `handle` may be anything.
    ///
    /// # Panics
    /// When the callback returns neither TRUE nor FALSE.
    #[must_use]
    pub unsafe fn ppm(&self, handle: PEPHANDLE, notification: ULONG, data: *mut c_void) -> bool {
        // SAFETY: the caller's contract for `data`.
        unsafe { ppm_caller::ppm::<FuzzPlatform>(handle, notification, data) }
    }

    /// `PEP_DPM_PREPARE_DEVICE` for a well-formed id; the `DeviceAccepted` answer.
    ///
    /// # Panics
    /// When the engine refuses a well-formed notification or answers something else than
    /// TRUE/FALSE.
    #[must_use]
    pub fn prepare(&self, id: &IdSpec) -> bool {
        let string = DeviceString::well_formed(&id.units());
        let mut data = Region::new(16, 0, &[], 0xA5);
        data.put(0, &string.pointer().addr().to_le_bytes());
        // SAFETY: a 16-byte PEP_PREPARE_DEVICE whose DeviceId is a valid UNICODE_STRING.
        let handled = unsafe { self.dpm(PEP_DPM_PREPARE_DEVICE, data.pointer().cast()) };
        assert!(handled, "PREPARE_DEVICE of a well-formed id refused");
        let accepted = data.bytes()[8];
        assert!(accepted <= 1, "DeviceAccepted = {accepted}");
        accepted == TRUE
    }

    /// `PEP_DPM_REGISTER_DEVICE` for a well-formed id; the handle (NULL when declined).
    ///
    /// # Panics
    /// When the engine refuses a well-formed notification or its answer is inconsistent.
    #[must_use]
    pub fn register(&self, id: &IdSpec) -> PEPHANDLE {
        let string = DeviceString::well_formed(&id.units());
        let mut data = Region::new(40, 0, &[], 0x5A);
        data.put(0, &string.pointer().addr().to_le_bytes());
        data.put(8, &0x1000_usize.to_le_bytes());
        data.put(16, &0_usize.to_le_bytes());
        // SAFETY: a 40-byte PEP_REGISTER_DEVICE_V2 with a valid DeviceId and a NULL Register.
        let handled = unsafe { self.dpm(PEP_DPM_REGISTER_DEVICE, data.pointer().cast()) };
        assert!(handled, "REGISTER_DEVICE of a well-formed id refused");
        registered_handle(&data)
    }

    /// Prepares and registers `id`; the handle (NULL when declined).
    #[must_use]
    pub fn add_device(&self, id: &IdSpec) -> PEPHANDLE {
        if self.prepare(id) { self.register(id) } else { std::ptr::null_mut() }
    }

    /// `PEP_DPM_UNREGISTER_DEVICE`; whether it was handled.
    #[must_use]
    pub fn unregister(&self, handle: PEPHANDLE) -> bool {
        let mut data = Region::new(8, 0, &[], 0);
        data.put(0, &handle.addr().to_le_bytes());
        // SAFETY: an 8-byte PEP_UNREGISTER_DEVICE.
        unsafe { self.dpm(PEP_DPM_UNREGISTER_DEVICE, data.pointer().cast()) }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        drop(self.entered.take());
        // SAFETY: `pep` came from `Box::into_raw`; the callbacks can no longer reach it.
        drop(unsafe { Box::from_raw(self.pep) });
        // SAFETY: `slots` came from `Box::into_raw`; the engine that borrowed it is gone.
        drop(unsafe { Box::from_raw(self.slots) });
    }
}

/// The handle a handled `PEP_DPM_REGISTER_DEVICE` returned in `data` (NULL when declined),
/// after checking `DeviceAccepted` and `DeviceHandle` agree.
///
/// # Panics
/// When they disagree.
#[must_use]
pub fn registered_handle(data: &Region) -> PEPHANDLE {
    let handle = data.u64_at(24).and_then(|value| usize::try_from(value).ok()).unwrap_or(0);
    let acceptance = data.u32_at(32).unwrap_or(u32::MAX);
    let accepted = i32::try_from(acceptance).is_ok_and(|value| value == PepDeviceAccepted);
    assert!(accepted || acceptance == 0, "DeviceAccepted = {acceptance}");
    assert_eq!(accepted, handle != 0, "DeviceAccepted {acceptance} with handle {handle:#x}");
    std::ptr::without_provenance_mut(handle)
}
