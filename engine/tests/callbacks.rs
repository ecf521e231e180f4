//! The engine through its C callbacks (sent by `ppm-caller`), on a scripted platform.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::missing_panics_doc,
    clippy::too_many_lines,
    clippy::unused_self,
    clippy::items_after_statements,
    clippy::struct_excessive_bools,
    clippy::panic
)]

use core::cell::Cell;
use core::ffi::c_void;

use ppm_engine::abi::*;
use ppm_engine::config::{Config, FeedbackCounterPolicy};
use ppm_engine::counters::{CounterSource, NoCountersReason, NominalRateSource};
use ppm_engine::device_id::DeviceIdPatterns;
use ppm_engine::perf::PerfCapabilities;
use ppm_engine::platform::{
    CpuidResult, InterruptsMasked, MsrFault, Passive, PerformanceCounter, Platform,
};
use ppm_engine::x86::{cpuid, msr};
use ppm_engine::{Pep, ProcessorSlot};

std::thread_local! {
    static CURRENT: Cell<u32> = const { Cell::new(0) };
    static MASKED: Cell<u32> = const { Cell::new(0) };
}

/// A scripted Intel HWP processor whose APERF/MPERF values are set by the test.
struct Scripted {
    aperf: Cell<u64>,
    mperf: Cell<u64>,
    fault: Cell<bool>,
    unmasked_counter_reads: Cell<u32>,
    has_counters: bool,
    time: Cell<u64>,
    /// CPUID leaf 0Ah announces a version-4 PMU with three 48-bit fixed counters.
    fixed: bool,
    /// The host reserved the PMU.
    reserved: bool,
    /// Offer a time stamp (counting with MPERF).
    timestamp: bool,
    /// SMIs to land right after the next APERF reads: (µs held in SMM) each.
    smis: std::cell::RefCell<Vec<u64>>,
    tsc: Cell<u64>,
    writes: std::cell::RefCell<Vec<(u32, u64)>>,
    failing_write: Cell<Option<u32>>,
}

// SAFETY: the tests use one thread per engine instance.
unsafe impl Sync for Scripted {}

impl Scripted {
    const fn new(has_counters: bool) -> Self {
        Self {
            aperf: Cell::new(1_000),
            mperf: Cell::new(1_000),
            fault: Cell::new(false),
            unmasked_counter_reads: Cell::new(0),
            has_counters,
            time: Cell::new(0),
            fixed: false,
            reserved: false,
            timestamp: false,
            smis: std::cell::RefCell::new(Vec::new()),
            tsc: Cell::new(0),
            writes: std::cell::RefCell::new(Vec::new()),
            failing_write: Cell::new(None),
        }
    }
}

impl Platform for Scripted {
    fn current_processor_index(&self) -> u32 {
        CURRENT.with(Cell::get)
    }
    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        match leaf {
            0 => CpuidResult {
                eax: 0x16,
                ebx: cpuid::VENDOR_INTEL[0],
                edx: cpuid::VENDOR_INTEL[1],
                ecx: cpuid::VENDOR_INTEL[2],
            },
            1 => CpuidResult { eax: 0x000A_0655, ..CpuidResult::default() },
            6 => CpuidResult {
                eax: cpuid::POWER_EAX_TURBO | cpuid::POWER_EAX_HWP,
                ecx: u32::from(self.has_counters),
                ..CpuidResult::default()
            },
            0x16 => CpuidResult { eax: 2_000, ..CpuidResult::default() },
            // Version 4, 8 general counters; 3 fixed counters of 48 bits.
            0x0A if self.fixed => {
                CpuidResult { eax: 0x0730_0804, edx: 3 | (48 << 5), ..CpuidResult::default() }
            }
            _ => CpuidResult::default(),
        }
    }
    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        let counter = number == msr::IA32_APERF || number == msr::IA32_MPERF;
        if counter && (!self.has_counters || self.fault.get()) {
            return Err(MsrFault);
        }
        if counter && MASKED.with(Cell::get) == 0 {
            self.unmasked_counter_reads.set(self.unmasked_counter_reads.get() + 1);
        }
        if number == msr::IA32_APERF {
            let value = self.aperf.get();
            let smi = {
                let mut smis = self.smis.borrow_mut();
                (!smis.is_empty()).then(|| smis.remove(0))
            };
            if let Some(us) = smi {
                // Held in SMM after the read, busy at 3 GHz (MPERF at 2 GHz, TSC at 2 GHz).
                self.aperf.set(value + us * 3_000);
                self.mperf.set(self.mperf.get() + us * 2_000);
                self.tsc.set(self.tsc.get() + us * 2_000);
            }
            // Each read takes 0.1 µs of TSC.
            self.tsc.set(self.tsc.get() + 200);
            return Ok(value);
        }
        match number {
            msr::IA32_APERF => Ok(self.aperf.get()),
            msr::IA32_MPERF => Ok(self.mperf.get()),
            msr::IA32_PM_ENABLE => Ok(1),
            // highest 40, guaranteed 20, most efficient 8, lowest 4
            msr::IA32_HWP_CAPABILITIES => Ok(0x0408_1428),
            msr::IA32_FIXED_CTR1 if self.fixed => Ok(self.aperf.get() & FIXED_MASK),
            msr::IA32_FIXED_CTR2 if self.fixed => Ok(self.mperf.get() & FIXED_MASK),
            msr::IA32_FIXED_CTR_CTRL if self.fixed => Ok(0xB),
            msr::IA32_PERF_GLOBAL_CTRL if self.fixed => Ok(0xF),
            _ => Err(MsrFault),
        }
    }
    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        MASKED.with(|m| m.set(m.get() + 1));
        // SAFETY: a test thread takes no interrupt while it runs `f` (the platform models the
        // masked section), and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        let result = f(&masked);
        MASKED.with(|m| m.set(m.get() - 1));
        result
    }
    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter { ticks: self.time.get(), frequency: 10_000_000 }
    }
    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        // Busy in C0 at 3 GHz with MPERF at 2 GHz.
        let us = u64::from(microseconds);
        self.time.set(self.time.get() + us * 10);
        self.aperf.set(self.aperf.get() + us * 3_000);
        self.mperf.set(self.mperf.get() + us * 2_000);
        self.tsc.set(self.tsc.get() + us * 2_000);
    }
    fn write_msr(&self, number: u32, value: u64) -> Result<(), MsrFault> {
        if self.failing_write.get() == Some(number) {
            return Err(MsrFault);
        }
        self.writes.borrow_mut().push((number, value));
        Ok(())
    }
    fn read_timestamp(&self) -> Option<u64> {
        self.timestamp.then(|| self.tsc.get())
    }
    fn fixed_counters_reserved(&self) -> bool {
        self.reserved
    }
}

const FIXED_MASK: u64 = (1 << 48) - 1;

struct Harness {
    pep: &'static Pep<Scripted>,
    slots: &'static [ProcessorSlot],
}

impl Harness {
    fn new(config: &Config, has_counters: bool, capacity: usize) -> Self {
        Self::with_platform(config, Scripted::new(has_counters), capacity)
    }

    fn with_platform(config: &Config, platform: Scripted, capacity: usize) -> Self {
        let slots = ppm_caller::table(capacity);
        let pep = ppm_caller::boot_with(platform, config, slots);
        CURRENT.with(|cell| cell.set(0));
        Self { pep, slots }
    }

    fn dpm(&self, notification: ULONG, data: *mut c_void) -> bool {
        // SAFETY: data is NULL or the structure for the notification.
        unsafe { ppm_caller::dpm::<Scripted>(notification, data) }
    }

    fn ppm(&self, handle: PEPHANDLE, notification: ULONG, data: *mut c_void) -> bool {
        // SAFETY: data is NULL or the structure for the notification.
        unsafe { ppm_caller::ppm::<Scripted>(handle, notification, data) }
    }

    fn prepare(&self, id: &str) -> bool {
        ppm_caller::prepare::<Scripted>(id)
    }

    fn register(&self, id: &str) -> PEPHANDLE {
        ppm_caller::register::<Scripted>(id)
    }

    fn processor(&self, id: &str) -> PEPHANDLE {
        ppm_caller::add_processor::<Scripted>(id)
    }

    fn read(&self, handle: PEPHANDLE, index: u32) -> Option<(u64, u64)> {
        ppm_caller::read::<Scripted>(handle, index)
    }

    fn advance(&self, aperf: u64, mperf: u64) {
        let platform = self.pep.platform();
        platform.aperf.set(platform.aperf.get() + aperf);
        platform.mperf.set(platform.mperf.get() + mperf);
        platform.tsc.set(platform.tsc.get() + mperf);
    }
}

#[test]
fn detection_on_an_hwp_processor() {
    let harness = Harness::new(&Config::new(), true, 4);
    let pep = harness.pep;
    assert_eq!(pep.counter_source(), CounterSource::AperfMperf);
    assert_eq!(pep.feedback_counter_count(), 1);
    assert_eq!(pep.nominal_mhz(), 2_000);
    assert_eq!(pep.nominal_rate_source(), NominalRateSource::CpuidBaseFrequency);
    assert_eq!(pep.calibrated_mhz(), 2_000);
    assert_eq!(
        pep.perf_capabilities(),
        PerfCapabilities { highest: 0x28, nominal: 0x14, lowest_nonlinear: 0x08, lowest: 0x04 }
    );
}

#[test]
fn no_counters_without_cpuid_and_when_disabled() {
    let harness = Harness::new(&Config::new(), false, 2);
    assert_eq!(harness.pep.feedback_counter_count(), 0);
    assert_eq!(harness.pep.no_counters_reason(), Some(NoCountersReason::NotAnnounced));
    let handle = harness.processor("\\_SB.CPU0");
    assert_eq!(harness.read(handle, 0), None);

    let mut config = Config::new();
    config.feedback_counters = FeedbackCounterPolicy::Disabled;
    let harness = Harness::new(&config, true, 2);
    assert_eq!(harness.pep.feedback_counter_count(), 0);
    assert_eq!(harness.pep.no_counters_reason(), Some(NoCountersReason::DisabledByPolicy));
}

#[test]
fn devices_are_accepted_by_pattern_and_capacity() {
    let harness = Harness::new(&Config::new(), true, 2);
    assert!(!harness.prepare("\\_SB.PCI0.GFX0"));
    assert!(!harness.prepare("\\_SB.COM1"));
    assert!(harness.prepare("\\_SB.CPU0"));
    assert!(harness.prepare("\\_sb.cpu1"));
    // The table holds two processors.
    assert!(!harness.prepare("\\_SB.CPU2"));
    // Registering something never prepared is declined.
    assert!(harness.register("\\_SB.CPU7").is_null());
    let first = harness.register("\\_SB.CPU0");
    let second = harness.register("\\_SB.CPU1");
    assert!(!first.is_null() && !second.is_null() && first != second);
    assert_eq!(harness.pep.registered_count(), 2);
    let mut seen = Vec::new();
    assert!(harness.pep.device_log().for_each(|entry| {
        seen.push((String::from_utf16(entry.as_units()).unwrap(), entry.accepted));
    }));
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[0], ("\\_SB.PCI0.GFX0".into(), false));
    assert_eq!(seen[2], ("\\_SB.CPU0".into(), true));
}

#[test]
fn a_pair_stretched_by_an_smi_is_read_again() {
    let mut platform = Scripted::new(true);
    platform.timestamp = true;
    let harness = Harness::with_platform(&Config::new(), platform, 1);
    let handle = harness.processor("\\_SB.CPU0");
    CURRENT.with(|cell| cell.set(0));
    let platform = harness.pep.platform();
    assert_eq!(harness.read(handle, 0), Some((0, 0)));
    // 15 ms busy at 3 GHz (MPERF 2 GHz), then an SMI of 150 µs between APERF and MPERF: read
    // as it came, the pair would add the SMI's 300 000 reference cycles without its 450 000
    // actual ones (an interval 1 % slow, the next 1 % fast). The engine reads it again.
    harness.advance(45_000_000, 30_000_000);
    platform.smis.borrow_mut().push(150);
    assert_eq!(harness.read(handle, 0), Some((30_300_000, 45_450_000)), "the second pair");
    assert!(platform.smis.borrow().is_empty());
    // Two SMIs in a row (both attempts stretched): the closer pair of the two is kept.
    harness.advance(45_000_000, 30_000_000);
    platform.smis.borrow_mut().extend([400, 150]);
    let (nominal, actual) = harness.read(handle, 0).unwrap();
    // The second attempt (150 µs): its APERF includes the first SMI's 400 µs.
    assert_eq!(
        (nominal, actual),
        (30_300_000 + 30_000_000 + 800_000 + 300_000, 45_450_000 + 45_000_000 + 1_200_000)
    );
    // Without time stamps nothing can be bounded: the skewed pair is served as read.
    let harness = Harness::new(&Config::new(), true, 1);
    let handle = harness.processor("\\_SB.CPU0");
    assert_eq!(harness.read(handle, 0), Some((0, 0)));
    harness.advance(45_000_000, 30_000_000);
    harness.pep.platform().smis.borrow_mut().push(150);
    assert_eq!(harness.read(handle, 0), Some((30_300_000, 45_000_000)), "1 % slow");
}

#[test]
fn reads_accumulate_bind_and_survive_resets() {
    let harness = Harness::new(&Config::new(), true, 4);
    let handle = harness.processor("\\_SB.CPU0");
    CURRENT.with(|cell| cell.set(3));
    assert_eq!(harness.read(handle, 0), Some((0, 0)), "first read is the baseline");
    harness.advance(300, 200);
    assert_eq!(harness.read(handle, 0), Some((200, 300)));
    // Another processor may not read this handle.
    CURRENT.with(|cell| cell.set(1));
    assert_eq!(harness.read(handle, 0), None);
    CURRENT.with(|cell| cell.set(3));
    // Index out of range.
    assert_eq!(harness.read(handle, 1), None);
    // A reset: the raw values restart at zero; that interval adds nothing.
    harness.pep.platform().aperf.set(10);
    harness.pep.platform().mperf.set(10);
    assert_eq!(harness.read(handle, 0), Some((200, 300)));
    assert_eq!(harness.slots[0].resets(), 1);
    harness.advance(30, 20);
    assert_eq!(harness.read(handle, 0), Some((220, 330)));
    // Only one counter going backwards is a reset too, never a huge delta.
    harness.pep.platform().mperf.set(5);
    harness.advance(1_000, 0);
    assert_eq!(harness.read(handle, 0), Some((220, 330)));
    // A faulting read is refused and changes nothing.
    harness.pep.platform().fault.set(true);
    assert_eq!(harness.read(handle, 0), None);
    harness.pep.platform().fault.set(false);
    harness.advance(3, 2);
    assert_eq!(harness.read(handle, 0), Some((222, 333)));
    // Only the two first reads at initialisation (the probes, tests/first_reads.rs) were
    // made with interrupts enabled; every read of the read path was masked.
    assert_eq!(harness.pep.platform().unmasked_counter_reads.get(), 2);
}

#[test]
fn resume_rebaselines_without_counting_a_reset() {
    let harness = Harness::new(&Config::new(), true, 1);
    let handle = harness.processor("\\_SB.CPU0");
    harness.read(handle, 0).unwrap();
    harness.advance(30, 20);
    assert_eq!(harness.read(handle, 0), Some((20, 30)));
    let mut resume = PEP_PPM_RESUME_FROM_SYSTEM_STATE { TargetState: PowerSystemWorking };
    assert!(harness.ppm(handle, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, (&raw mut resume).cast()));
    harness.advance(9_999, 9_999);
    assert_eq!(harness.read(handle, 0), Some((20, 30)));
    harness.advance(3, 2);
    assert_eq!(harness.read(handle, 0), Some((22, 33)));
    assert_eq!(harness.slots[0].resets(), 0);
    let mut bad = PEP_PPM_RESUME_FROM_SYSTEM_STATE { TargetState: 42 };
    assert!(!harness.ppm(handle, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, (&raw mut bad).cast()));
}

#[test]
fn stale_forged_and_null_inputs_are_refused() {
    let harness = Harness::new(&Config::new(), true, 2);
    let handle = harness.processor("\\_SB.CPU0");
    let forged: PEPHANDLE = core::ptr::without_provenance_mut(0xFFFF_0001);
    assert_eq!(harness.read(forged, 0), None);
    assert_eq!(harness.read(core::ptr::null_mut(), 0), None);
    assert!(!harness.ppm(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, core::ptr::null_mut()));
    assert!(!harness.ppm(handle, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, core::ptr::null_mut()));
    assert!(!harness.ppm(handle, 0x7F, core::ptr::null_mut()));
    assert!(!harness.dpm(PEP_DPM_PREPARE_DEVICE, core::ptr::null_mut()));
    assert!(!harness.dpm(0x7F, core::ptr::null_mut()));
    // Unregister makes the handle stale, and a new registration of the slot does not revive it.
    let mut unregister = PEP_UNREGISTER_DEVICE { DeviceHandle: handle };
    assert!(harness.dpm(PEP_DPM_UNREGISTER_DEVICE, (&raw mut unregister).cast()));
    assert_eq!(harness.read(handle, 0), None);
    assert!(!harness.dpm(PEP_DPM_UNREGISTER_DEVICE, (&raw mut unregister).cast()));
    let again = harness.processor("\\_SB.CPU0");
    assert_ne!(again, handle);
    assert_eq!(harness.read(handle, 0), None);
    assert_eq!(harness.read(again, 0), Some((0, 0)));
}

#[test]
fn queries_answer_consistently() {
    let mut config = Config::new();
    config.performance_counter_view = true;
    let harness = Harness::new(&config, true, 2);
    let handle = harness.processor("\\_SB.PR00");
    let mut caps = PEP_PPM_QUERY_CAPABILITIES {
        FeedbackCounterCount: 99,
        IdleStateCount: 99,
        PerformanceStatesSupported: 9,
        ParkingSupported: 9,
        DiscretePerformanceStateCount: 9,
        Reserved: 9,
    };
    assert!(harness.ppm(handle, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, (&raw mut caps).cast()));
    assert_eq!(
        (caps.FeedbackCounterCount, caps.IdleStateCount, caps.PerformanceStatesSupported),
        (2, 0, FALSE)
    );
    assert_eq!(caps.Reserved, 0);

    #[repr(C, align(4))]
    struct Buffer([u32; 5]);
    let mut buffer = Buffer([2, 0, 0, 0, 0]);
    assert!(harness.ppm(handle, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, (&raw mut buffer).cast()));
    assert_eq!(buffer.0, [2, 0x83, 2_000, 0x83 | (1 << 3), 0x14]);
    let mut wrong = Buffer([1, 0, 0, 0, 0]);
    assert!(!harness.ppm(handle, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, (&raw mut wrong).cast()));
    assert_eq!(wrong.0, [1, 0, 0, 0, 0]);

    let mut perf = PEP_PPM_QUERY_PERF_CAPABILITIES {
        HighestPerformance: 0,
        NominalPerformance: 0,
        LowestNonlinearPerformance: 0,
        LowestPerformance: 0,
        DomainId: 99,
        DomainMembers: 0,
    };
    assert!(harness.ppm(handle, PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, (&raw mut perf).cast()));
    assert_eq!((perf.DomainId, perf.DomainMembers, perf.NominalPerformance), (0, 1, 0x14));
    let mut domain = PEP_PPM_QUERY_DOMAIN_INFO {
        DomainId: perf.DomainId,
        CoordinationType: 9,
        IdleProcessorsDiscounted: 9,
        SchedulerDirectedTransitionsSupported: 9,
        AffinitizePerfSet: 9,
        WorstCaseTransitionLatency: 9,
        WorstCaseTransitionOverhead: 9,
    };
    assert!(harness.ppm(
        core::ptr::null_mut(),
        PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
        (&raw mut domain).cast()
    ));
    assert_eq!(domain.CoordinationType, PROCESSOR_DOMAIN_COORDIANTION_SW_ALL);
    domain.DomainId = 1;
    assert!(!harness.ppm(
        core::ptr::null_mut(),
        PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
        (&raw mut domain).cast()
    ));
}

#[test]
fn patterns_match_as_documented() {
    let patterns = DeviceIdPatterns::defaults();
    let units = |text: &str| -> Vec<u16> { text.encode_utf16().collect() };
    for id in [
        "\\_SB.CPU0",
        "\\_SB.CPUA",
        "\\_SB.CP0A",
        "\\_SB.P127",
        "\\_SB.PR00",
        "\\_SB.P000",
        "\\_PR.CPU3",
        "\\_SB.C000",
        "\\_SB.C01F",
        "\\_SB.SCK1.CP05",
        "\\_SB.SCK0.C003",
    ] {
        assert!(patterns.matches(&units(id)), "{id}");
    }
    for id in [
        "\\_SB.COM1",
        "\\_SB.PCI0",
        "\\_SB.PCI0.GFX0",
        "\\_SB.CPUS",
        "ACPI\\PNP0C0C",
        "",
        "\\_SB.C00",
        "\\_SB.PRT0",
        "\\_SB.PC00",
        "\\_SB.PC01",
        "\\_SB.PC00.GFX0",
        "\\_SB.CPU0.XYZ0",
        "\\_SB.CPU12",
    ] {
        assert!(!patterns.matches(&units(id)), "{id}");
    }
    // AMD numbers `P` processors in hexadecimal (engine/tests/device_names.rs has the table).
    assert!(patterns.matches(&units("\\_SB.P00A")));
    assert!(patterns.matches(&units("\\_PR.P00A")));
    let mut custom = DeviceIdPatterns::empty();
    custom.push_str("ACPI\\GenuineIntel_-_*").unwrap();
    assert!(custom.matches(&units("acpi\\genuineintel_-_intel64_family_6")));
    assert!(custom.push_str(&"x".repeat(49)).is_err());
}

#[test]
fn perf_ordering_is_enforced() {
    assert_eq!(PerfCapabilities::ordered_from_raw(0, 0, 5, 1), None);
    let caps = PerfCapabilities::ordered_from_raw(10, 20, 30, 0).unwrap();
    assert!(caps.is_ordered());
    assert_eq!(
        caps,
        PerfCapabilities { highest: 20, nominal: 20, lowest_nonlinear: 20, lowest: 20 }
    );
    assert!(PerfCapabilities::flat(0).is_ordered());
}

const fn fixed_platform(reserved: bool, timestamp: bool) -> Scripted {
    let mut platform = Scripted::new(false);
    platform.fixed = true;
    platform.reserved = reserved;
    platform.timestamp = timestamp;
    platform
}

#[test]
fn fixed_counters_only_when_reserved() {
    let harness = Harness::with_platform(&Config::new(), fixed_platform(false, true), 1);
    assert_eq!(harness.pep.feedback_counter_count(), 0);
    assert_eq!(harness.pep.no_counters_reason(), Some(NoCountersReason::PmuNotReserved));
    let harness = Harness::with_platform(&Config::new(), fixed_platform(true, true), 1);
    assert_eq!(harness.pep.counter_source(), CounterSource::FixedPmc { width: 48 });
    assert_eq!(harness.pep.feedback_counter_count(), 1);
    assert_eq!(harness.pep.calibrated_mhz(), 2_000);
    let mut config = Config::new();
    config.counter_source = ppm_engine::config::CounterSourcePreference::AperfMperf;
    let harness = Harness::with_platform(&config, fixed_platform(true, true), 1);
    assert_eq!(harness.pep.no_counters_reason(), Some(NoCountersReason::NotAnnounced));
}

#[test]
fn fixed_counters_wrap_modulo_their_width() {
    for timestamp in [true, false] {
        let harness = Harness::with_platform(&Config::new(), fixed_platform(true, timestamp), 1);
        let handle = harness.processor("\\_SB.CPU0");
        let platform = harness.pep.platform();
        // Just below 2^48: the next interval crosses the wrap.
        platform.aperf.set(FIXED_MASK - 100);
        platform.mperf.set(FIXED_MASK - 50);
        assert_eq!(harness.read(handle, 0), Some((0, 0)));
        harness.advance(3_000, 2_000);
        assert_eq!(harness.read(handle, 0), Some((2_000, 3_000)), "timestamp {timestamp}");
        assert_eq!(harness.slots[0].resets(), 0);
    }
}

#[test]
fn fixed_counters_cleared_by_another_owner_rebaseline() {
    for timestamp in [true, false] {
        let harness = Harness::with_platform(&Config::new(), fixed_platform(true, timestamp), 1);
        let handle = harness.processor("\\_SB.CPU0");
        let platform = harness.pep.platform();
        platform.aperf.set(1 << 40);
        platform.mperf.set(1 << 40);
        harness.read(handle, 0).unwrap();
        harness.advance(300, 200);
        assert_eq!(harness.read(handle, 0), Some((200, 300)));
        // Another PMU owner writes zeros: modulo 2^48 that is a delta of ~2^48 - 2^40.
        platform.aperf.set(5);
        platform.mperf.set(5);
        harness.advance(30, 20);
        assert_eq!(harness.read(handle, 0), Some((200, 300)), "timestamp {timestamp}");
        assert_eq!(harness.slots[0].resets(), 1);
        harness.advance(30, 20);
        assert_eq!(harness.read(handle, 0), Some((220, 330)));
    }
}

#[test]
fn reservation_list_is_byte_exact() {
    use ppm_engine::pmc::{FixedCounters, Reservation, ReservationPolicy, reservation};
    let counters = FixedCounters { version: 4, general_counters: 8, fixed_counters: 3, width: 48 };
    assert!(matches!(
        reservation(ReservationPolicy::ExclusivePmu, &counters),
        Reservation::ExclusivePmu
    ));
    let Reservation::List(list) = reservation(ReservationPolicy::AllCounterIndexes, &counters)
    else {
        panic!("expected a list");
    };
    assert_eq!(core::mem::size_of_val(&list), 32);
    // SAFETY: the list is plain data of 32 bytes; padding bytes are read as whatever they hold,
    // so compare only the defined ones.
    let bytes: [u8; 32] = unsafe { core::mem::transmute(list) };
    assert_eq!(bytes[0..4], 1u32.to_le_bytes(), "Count");
    assert_eq!(bytes[8..12], 1u32.to_le_bytes(), "Descriptors[0].Type = ResourceTypeRange");
    assert_eq!(bytes[12..16], 0u32.to_le_bytes(), "Flags");
    assert_eq!(bytes[16..20], 0u32.to_le_bytes(), "u.Range.Begin");
    assert_eq!(bytes[20..24], 10u32.to_le_bytes(), "u.Range.End = 8 general + 3 fixed - 1");
}

#[test]
fn fixed_counter_detection_follows_cpuid() {
    use ppm_engine::cpu::CpuFeatures;
    use ppm_engine::pmc::FixedCounters;
    let intel = CpuFeatures {
        is_intel: true,
        pmu_eax: 0x0730_0804,
        pmu_edx: 3 | (48 << 5),
        ..CpuFeatures::default()
    };
    assert_eq!(FixedCounters::detect(&intel).map(|c| c.mask()), Some(FIXED_MASK));
    for broken in [
        CpuFeatures { pmu_eax: 0x0730_0801, ..intel }, // version 1: no PERF_GLOBAL_CTRL
        CpuFeatures { pmu_edx: 2 | (48 << 5), ..intel }, // only two fixed counters
        CpuFeatures { pmu_edx: 3 | (16 << 5), ..intel }, // implausible width
        CpuFeatures { is_intel: false, is_amd: true, ..intel }, // leaf 0Ah is Intel's
    ] {
        assert_eq!(FixedCounters::detect(&broken), None, "{broken:?}");
    }
    // Version 5 may announce counters 1 and 2 in the ECX bitmask.
    let v5 = CpuFeatures { pmu_eax: 0x0730_0805, pmu_ecx: 0b111, pmu_edx: 48 << 5, ..intel };
    assert!(FixedCounters::detect(&v5).is_some());
}

#[test]
fn enabling_fixed_counters_preserves_others_and_restores_on_failure() {
    use ppm_engine::pmc::{
        SavedPmuControl, enable_fixed_counters, enabled_control, restore_fixed_counters,
    };
    let found = SavedPmuControl { fixed_ctr_ctrl: 0xFFFF_F00B, perf_global_ctrl: 0xF };
    let enabled = enabled_control(found);
    assert_eq!(enabled.fixed_ctr_ctrl, 0xFFFF_F33B);
    assert_eq!(enabled.perf_global_ctrl, 0x6_0000_000F);

    let platform = fixed_platform(true, true);
    let saved = enable_fixed_counters(&platform).unwrap();
    assert_eq!(saved, SavedPmuControl { fixed_ctr_ctrl: 0xB, perf_global_ctrl: 0xF });
    assert_eq!(
        *platform.writes.borrow(),
        [(msr::IA32_FIXED_CTR_CTRL, 0x33B), (msr::IA32_PERF_GLOBAL_CTRL, 0x6_0000_000F)]
    );
    restore_fixed_counters(&platform, saved).unwrap();
    assert_eq!(
        platform.writes.borrow()[2..],
        [(msr::IA32_PERF_GLOBAL_CTRL, 0xF), (msr::IA32_FIXED_CTR_CTRL, 0xB)]
    );

    let platform = fixed_platform(true, true);
    platform.failing_write.set(Some(msr::IA32_PERF_GLOBAL_CTRL));
    assert!(enable_fixed_counters(&platform).is_err());
    assert_eq!(
        *platform.writes.borrow(),
        [(msr::IA32_FIXED_CTR_CTRL, 0x33B), (msr::IA32_FIXED_CTR_CTRL, 0xB)]
    );
}

#[test]
fn the_pmu_is_reserved_only_where_the_fixed_counters_would_be_used() {
    use ppm_engine::config::CounterSourcePreference;
    use ppm_engine::cpu::CpuFeatures;
    use ppm_engine::pmc::counters_to_reserve;
    let vm = CpuFeatures {
        is_intel: true,
        pmu_eax: 0x0730_0804,
        pmu_edx: 3 | (48 << 5),
        ..CpuFeatures::default()
    };
    let bare_metal = CpuFeatures { power_ecx: cpuid::POWER_ECX_APERFMPERF, ..vm };
    let mut config = Config::new();
    assert!(counters_to_reserve(&config, &vm).is_some());
    assert!(counters_to_reserve(&config, &bare_metal).is_none(), "APERF/MPERF win in auto");
    config.counter_source = CounterSourcePreference::PreferFixedPmc;
    assert!(counters_to_reserve(&config, &bare_metal).is_some());
    config.counter_source = CounterSourcePreference::AperfMperf;
    assert!(counters_to_reserve(&config, &vm).is_none());
    config.counter_source = CounterSourcePreference::FixedPmc;
    config.feedback_counters = FeedbackCounterPolicy::Disabled;
    assert!(counters_to_reserve(&config, &vm).is_none());
    config.feedback_counters = FeedbackCounterPolicy::Enabled;
    let no_pmu = CpuFeatures { pmu_eax: 0, ..vm };
    assert!(counters_to_reserve(&config, &no_pmu).is_none());
}

#[test]
fn zero_readings_are_no_readings() {
    let harness = Harness::new(&Config::new(), true, 1);
    let handle = harness.processor("\\_SB.CPU0");
    harness.read(handle, 0).unwrap();
    harness.advance(300, 200);
    assert_eq!(harness.read(handle, 0), Some((200, 300)));
    // The hypervisor hides the counters (reads zero) while they keep counting underneath.
    let platform = harness.pep.platform();
    let (hidden_a, hidden_m) = (platform.aperf.get(), platform.mperf.get());
    assert!(hidden_a > 0 && hidden_m > 0);
    platform.aperf.set(0);
    platform.mperf.set(0);
    assert_eq!(harness.read(handle, 0), Some((200, 300)));
    assert_eq!(harness.read(handle, 0), Some((200, 300)));
    // They come back: the first real reading is a new baseline (the hidden period is dropped,
    // never credited to one interval, let alone as the raw value since power-on).
    platform.aperf.set(hidden_a + 90);
    platform.mperf.set(hidden_m + 60);
    assert_eq!(harness.read(handle, 0), Some((200, 300)));
    harness.advance(30, 20);
    assert_eq!(harness.read(handle, 0), Some((220, 330)));
    // Counters that really restarted while hidden behave the same, and no reset is counted.
    platform.aperf.set(0);
    platform.mperf.set(0);
    assert_eq!(harness.read(handle, 0), Some((220, 330)));
    platform.aperf.set(15);
    platform.mperf.set(10);
    assert_eq!(harness.read(handle, 0), Some((220, 330)));
    harness.advance(3, 2);
    assert_eq!(harness.read(handle, 0), Some((222, 333)));
    assert_eq!(harness.slots[0].resets(), 0);
}

#[test]
fn fixed_counter_deltas_are_bounded_by_time_and_turbo_ratio() {
    let harness = Harness::with_platform(&Config::new(), fixed_platform(true, true), 1);
    let handle = harness.processor("\\_SB.CPU0");
    let platform = harness.pep.platform();
    platform.aperf.set(1 << 30);
    platform.mperf.set(1 << 30);
    harness.read(handle, 0).unwrap();
    harness.advance(3_000_000, 2_000_000);
    assert_eq!(harness.read(handle, 0), Some((2_000_000, 3_000_000)));
    // Another owner moves the core counter forward by far more than the reference cycles can
    // explain at any turbo ratio: dropped, not credited.
    platform.aperf.set(platform.aperf.get() + 500_000_000);
    harness.advance(3_000_000, 2_000_000);
    assert_eq!(harness.read(handle, 0), Some((2_000_000, 3_000_000)));
    assert_eq!(harness.slots[0].resets(), 1);
    // More reference cycles than time stamps elapsed: dropped too.
    platform.mperf.set(platform.mperf.get() + 50_000_000);
    harness.advance(3_000_000, 2_000_000);
    assert_eq!(harness.read(handle, 0), Some((2_000_000, 3_000_000)));
    harness.advance(3_000_000, 2_000_000);
    assert_eq!(harness.read(handle, 0), Some((4_000_000, 6_000_000)));
}

#[test]
fn a_device_that_holds_a_slot_keeps_it() {
    let harness = Harness::new(&Config::new(), true, 3);
    let first = harness.processor("\\_SB.CPU0");
    let _second = harness.processor("\\_SB.CPU1");
    let mut unregister = PEP_UNREGISTER_DEVICE { DeviceHandle: first };
    assert!(harness.dpm(PEP_DPM_UNREGISTER_DEVICE, (&raw mut unregister).cast()));
    // CPU1 holds slot 1 while slot 0 is free again: a repeated PREPARE of CPU1 must not take
    // slot 0 as a second slot (a REGISTER would then hand CPU1 a second handle).
    assert!(harness.prepare("\\_SB.CPU1"));
    assert!(harness.register("\\_SB.CPU1").is_null());
    assert_eq!(harness.pep.registered_count(), 1);
    // Slot 0 is still free for another device, and so is slot 2.
    assert!(!harness.processor("\\_SB.CPU2").is_null());
    assert!(!harness.processor("\\_SB.CPU3").is_null());
    assert!(!harness.prepare("\\_SB.CPU4"), "the table holds three");
}

#[test]
fn a_reused_table_starts_free() {
    let harness = Harness::new(&Config::new(), true, 1);
    let old = harness.processor("\\_SB.CPU0");
    // A second engine over the same (leaked, 'static) table: nothing of the first survives.
    let pep = ppm_caller::boot_with(Scripted::new(true), &Config::new(), harness.slots);
    assert_eq!(pep.registered_count(), 0);
    assert_eq!(harness.read(old, 0), None, "an old handle is refused");
    assert!(harness.prepare("\\_SB.CPU1"), "the slot is free for a new device");
}

/// A host that records what the engine tells it of each `PREPARE_DEVICE` decision, as the
/// driver's host turns each into an ETW event.
struct RecordingHost;

std::thread_local! {
    static RECORDING_PEP: Cell<Option<&'static Pep<Scripted>>> = const { Cell::new(None) };
    static PREPARED: std::cell::RefCell<Vec<(String, bool)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl ppm_engine::PepHost for RecordingHost {
    type Platform = Scripted;

    fn instance() -> Option<&'static Pep<Scripted>> {
        RECORDING_PEP.with(Cell::get)
    }

    fn device_prepared(device_id: &[u16], accepted: bool) {
        let id = String::from_utf16(device_id).unwrap_or_default();
        PREPARED.with(|prepared| prepared.borrow_mut().push((id, accepted)));
    }
}

/// Offers `id` through the C callback of [`RecordingHost`]; returns (returned, accepted).
fn prepare_through_recording_host(id: Option<&str>) -> (bool, bool) {
    let mut units: Vec<u16> = id.unwrap_or_default().encode_utf16().collect();
    let mut string = ppm_caller::payload::unicode_string(&mut units);
    let mut request = PEP_PREPARE_DEVICE::zeroed();
    if id.is_some() {
        request.DeviceId = &raw mut string;
    }
    // SAFETY: `request` is a PEP_PREPARE_DEVICE whose DeviceId is NULL or points to `string`,
    // whose buffer `units` outlives the call.
    let returned = unsafe {
        ppm_engine::callbacks::accept_device_notification::<RecordingHost>(
            PEP_DPM_PREPARE_DEVICE,
            (&raw mut request).cast(),
        )
    };
    (returned == TRUE, request.DeviceAccepted == TRUE)
}

#[test]
fn the_host_hears_every_prepare_decision_with_the_device_id() {
    let harness = Harness::new(&Config::new(), true, 1);
    RECORDING_PEP.with(|pep| pep.set(Some(harness.pep)));
    assert_eq!(prepare_through_recording_host(Some("\\_SB.PCI0")), (true, false));
    assert_eq!(prepare_through_recording_host(Some("\\_SB.CPU0")), (true, true));
    // The table holds one processor: the second is declined, and the host is told so.
    assert_eq!(prepare_through_recording_host(Some("\\_SB.CPU1")), (true, false));
    // A NULL device id is refused before any decision: the host hears nothing of it.
    assert_eq!(prepare_through_recording_host(None), (false, false));
    let prepared = PREPARED.with(std::cell::RefCell::take);
    assert_eq!(
        prepared,
        [
            ("\\_SB.PCI0".to_owned(), false),
            ("\\_SB.CPU0".to_owned(), true),
            ("\\_SB.CPU1".to_owned(), false),
        ]
    );
    RECORDING_PEP.with(|pep| pep.set(None));
}
