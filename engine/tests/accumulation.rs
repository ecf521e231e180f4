//! Property tests, through the real C callbacks on a scripted platform:
//!
//! - feedback accumulation: for any sequence of raw (APERF, MPERF) pairs — advances, resets of
//!   one or both counters, wraps, arbitrary jumps, repeated reads — the first read reports 0/0;
//!   reported values never decrease; between resets each reported delta equals the hardware
//!   delta exactly; an interval whose raw values went backwards contributes exactly zero; the
//!   engine counts exactly those intervals as resets; a reading of zero for both counters is the
//!   baseline when one is due (the first read, the first after a resume) and otherwise no
//!   reading that makes the next reading a baseline; a resume re-baselines without counting one.
//! - the device-id glob matcher (`*`, `?`, `#`, `%`, ASCII case folding) against a simple
//!   recursive reference, directly and through `PEP_DPM_PREPARE_DEVICE`.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};

use ppm_engine::config::{Config, CounterSourcePreference};
use ppm_engine::device_id::{DeviceIdPatterns, MAX_PATTERN_UNITS, PatternError};
use ppm_engine::platform::{InterruptsMasked, Passive, PerformanceCounter};
use ppm_engine::x86::msr;
use ppm_engine::{CpuidResult, MsrFault, Pep, Platform, ProcessorSlot};
use proptest::prelude::*;

/// An Intel processor under a hypervisor with APERF/MPERF (and nothing else model-specific),
/// whose raw counter values the test sets.
#[derive(Debug, Default)]
struct Scripted {
    actual: AtomicU64,
    nominal: AtomicU64,
    time: AtomicU64,
}

impl Scripted {
    fn set(&self, actual: u64, nominal: u64) {
        self.actual.store(actual, Ordering::Relaxed);
        self.nominal.store(nominal, Ordering::Relaxed);
    }

    fn get(&self) -> (u64, u64) {
        (self.actual.load(Ordering::Relaxed), self.nominal.load(Ordering::Relaxed))
    }
}

impl Platform for Scripted {
    fn current_processor_index(&self) -> u32 {
        0
    }

    fn cpuid(&self, leaf: u32, _subleaf: u32) -> CpuidResult {
        ppm_caller::fixture::intel_vm_cpuid(leaf)
    }

    fn read_msr(&self, number: u32) -> Result<u64, MsrFault> {
        match number {
            msr::IA32_APERF => Ok(self.actual.load(Ordering::Relaxed)),
            msr::IA32_MPERF => Ok(self.nominal.load(Ordering::Relaxed)),
            _ => Err(MsrFault),
        }
    }

    fn with_interrupts_masked<R>(&self, f: impl FnOnce(&InterruptsMasked) -> R) -> R {
        // SAFETY: a test thread takes no interrupt while it runs `f` (the platform models the
        // masked section), and `f` only borrows the token.
        let masked = unsafe { InterruptsMasked::assume() };
        f(&masked)
    }

    fn performance_counter(&self, _passive: &Passive) -> PerformanceCounter {
        PerformanceCounter { ticks: self.time.load(Ordering::Relaxed), frequency: 10_000_000 }
    }

    fn stall_microseconds(&self, _passive: &Passive, microseconds: u32) {
        let us = u64::from(microseconds);
        self.time.fetch_add(us * 10, Ordering::Relaxed);
        self.actual.fetch_add(us * 3_000, Ordering::Relaxed);
        self.nominal.fetch_add(us * 2_000, Ordering::Relaxed);
    }
}

/// A fresh engine with one processor slot, published for this thread's callbacks.
fn engine(config: &Config) -> (&'static Pep<Scripted>, &'static ProcessorSlot) {
    let slots = ppm_caller::table(1);
    (ppm_caller::boot_with(Scripted::default(), config, slots), &slots[0])
}

/// What happens to the raw counters before the next read.
#[derive(Clone, Debug)]
enum Step {
    /// Both advance (wrapping past 2^64: a wrap, which reads as going backwards).
    Advance(u64, u64),
    /// Both restart low (S3/S4 resume, hypervisor, overflow of either).
    ResetBoth(u32, u32),
    /// Only the actual counter restarts low.
    ResetActual(u32),
    /// Only the nominal counter restarts low.
    ResetNominal(u32),
    /// Both jump to just below 2^64 (the next advance wraps).
    NearWrap(u16, u16),
    /// Any raw values at all.
    Jump(u64, u64),
    /// Nothing: the read sees the same values.
    Same,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..1u64 << 40, 0..1u64 << 40).prop_map(|(a, n)| Step::Advance(a, n)),
        2 => (any::<u32>(), any::<u32>()).prop_map(|(a, n)| Step::ResetBoth(a, n)),
        1 => any::<u32>().prop_map(Step::ResetActual),
        1 => any::<u32>().prop_map(Step::ResetNominal),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(a, n)| Step::NearWrap(a, n)),
        1 => (any::<u64>(), any::<u64>()).prop_map(|(a, n)| Step::Jump(a, n)),
        1 => Just(Step::Same),
    ]
}

fn apply(platform: &Scripted, step: &Step) {
    let (actual, nominal) = platform.get();
    let (actual, nominal) = match *step {
        Step::Advance(a, n) => (actual.wrapping_add(a), nominal.wrapping_add(n)),
        Step::ResetBoth(a, n) => (u64::from(a), u64::from(n)),
        Step::ResetActual(a) => (u64::from(a), nominal),
        Step::ResetNominal(n) => (actual, u64::from(n)),
        Step::NearWrap(a, n) => (u64::MAX - u64::from(a), u64::MAX - u64::from(n)),
        Step::Jump(a, n) => (a, n),
        Step::Same => (actual, nominal),
    };
    platform.set(actual, nominal);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The accumulation contract, read by read.
    #[test]
    fn reported_counts_accumulate_hardware_deltas(
        start in (any::<u64>(), any::<u64>()),
        steps in prop::collection::vec(step(), 0..64),
        counter_view in any::<bool>(),
    ) {
        let mut config = Config::new();
        config.counter_source = CounterSourcePreference::AperfMperf;
        config.performance_counter_view = counter_view;
        let (pep, slot) = engine(&config);
        let platform = pep.platform();
        let handle = ppm_caller::add_processor::<Scripted>("\\_SB.CPU0");
        platform.set(start.0, start.1);

        let first = ppm_caller::read::<Scripted>(handle, 0);
        prop_assert_eq!(first, Some((0, 0)), "the first read is the baseline");
        // The baseline the next delta is taken from; None after a zero reading that was not a
        // due baseline: the next real reading is a new baseline. The first read is due, so a
        // zero start is a baseline of zero.
        let mut baseline = Some(start);
        let mut reported = (0u64, 0u64);
        // The true sums (nominal, actual), to know when the 64-bit totals may wrap.
        let mut sums = (0u128, 0u128);
        let mut resets = 0u32;
        for (index, step) in steps.iter().enumerate() {
            apply(platform, step);
            let now = platform.get();
            // Both views report the same accumulated pair.
            let view = if counter_view { u32::try_from(index % 2).unwrap_or(0) } else { 0 };
            let counts = ppm_caller::read::<Scripted>(handle, view);
            prop_assert!(counts.is_some(), "read {} refused", index);
            let counts = counts.unwrap_or_default();
            let expected_delta = match baseline {
                _ if now == (0, 0) => (0, 0),
                None => (0, 0),
                Some(raw) if now.0 >= raw.0 && now.1 >= raw.1 => (now.1 - raw.1, now.0 - raw.0),
                Some(raw) => {
                    // A raw APERF of exactly u64::MAX is the engine's "re-baseline" sentinel:
                    // going backwards from it is not counted as a reset (diagnostic only).
                    if raw.0 != u64::MAX {
                        resets += 1;
                    }
                    (0, 0)
                }
            };
            let delta = (counts.0.wrapping_sub(reported.0), counts.1.wrapping_sub(reported.1));
            prop_assert_eq!(delta, expected_delta, "step {:?}: {:?} -> {:?}", step, baseline, now);
            sums = (sums.0 + u128::from(expected_delta.0), sums.1 + u128::from(expected_delta.1));
            if sums.0 <= u128::from(u64::MAX) && sums.1 <= u128::from(u64::MAX) {
                prop_assert!(
                    counts.0 >= reported.0 && counts.1 >= reported.1,
                    "decreased: {:?} -> {:?}", reported, counts
                );
            }
            baseline = (now != (0, 0)).then_some(now);
            reported = counts;
        }
        prop_assert_eq!(slot.resets(), resets, "resets counted");
        prop_assert_eq!(slot.bound_processor(), Some(0));
    }

    /// A resume re-baselines: the interval across it contributes zero, whatever the counters
    /// did, and is not counted as a reset.
    #[test]
    fn resume_rebaselines(
        before in (0..1u64 << 40, 0..1u64 << 40),
        across in (any::<u64>(), any::<u64>()),
        after in (0..1u64 << 40, 0..1u64 << 40),
    ) {
        let (pep, slot) = engine(&Config::new());
        let platform = pep.platform();
        let handle = ppm_caller::add_processor::<Scripted>("\\_SB.CPU0");
        platform.set(1_000, 1_000);
        prop_assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((0, 0)));
        apply(platform, &Step::Advance(before.0, before.1));
        let reported = (before.1, before.0);
        prop_assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some(reported));
        prop_assert!(ppm_caller::resume::<Scripted>(handle));
        platform.set(across.0, across.1);
        prop_assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some(reported));
        apply(platform, &Step::Advance(after.0, after.1));
        let (actual, nominal) = platform.get();
        // A zero reading across the resume is the due baseline (counters restarted by the
        // sleep): the read after it counts from zero.
        let forward = actual >= across.0 && nominal >= across.1;
        let expected = if forward {
            (reported.0 + (nominal - across.1), reported.1 + (actual - across.0))
        } else {
            reported
        };
        prop_assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some(expected));
        prop_assert_eq!(
            slot.resets(),
            u32::from(!forward && across.0 != u64::MAX)
        );
    }
}

/// Counters the sleep restarted and that still read 0/0 at the first read after the resume
/// (a processor that stayed idle, a hypervisor that shows zeros) are that read's baseline:
/// the read after it counts from zero, so the interval is not lost (issue 22). Zeros when no
/// baseline is due stay no reading, however many follow.
#[test]
fn zeros_at_a_due_baseline_are_the_baseline() {
    let (pep, _) = engine(&Config::new());
    let platform = pep.platform();
    let handle = ppm_caller::add_processor::<Scripted>("\\_SB.CPU0");
    platform.set(1_000, 1_000);
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((0, 0)));
    platform.set(3_000, 2_000);
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((1_000, 2_000)));
    assert!(ppm_caller::resume::<Scripted>(handle));
    platform.set(0, 0);
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((1_000, 2_000)));
    platform.set(500, 400);
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((1_400, 2_500)));
    // Not due: zeros are no reading, the next real value a baseline, even after two zeros.
    platform.set(0, 0);
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((1_400, 2_500)));
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((1_400, 2_500)));
    platform.set(900_000, 800_000);
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((1_400, 2_500)));
    platform.set(900_100, 800_050);
    assert_eq!(ppm_caller::read::<Scripted>(handle, 0), Some((1_450, 2_600)));
}

// ---- the device-id glob matcher --------------------------------------------------------------

const STAR: u16 = b'*' as u16;
const QUESTION: u16 = b'?' as u16;
const HASH: u16 = b'#' as u16;
const PERCENT: u16 = b'%' as u16;

const fn fold(unit: u16) -> u16 {
    if unit >= b'a' as u16 && unit <= b'z' as u16 { unit - 0x20 } else { unit }
}

const fn hex(unit: u16) -> bool {
    matches!(unit, 0x30..=0x39 | 0x41..=0x46 | 0x61..=0x66)
}

/// The reference: `*` any run (possibly empty), `?` any one unit, `#` one hex digit, `%` one
/// decimal digit, anything else itself up to ASCII case.
fn reference(pattern: &[u16], id: &[u16]) -> bool {
    match pattern.split_first() {
        None => id.is_empty(),
        Some((&STAR, rest)) => (0..=id.len()).any(|skip| reference(rest, &id[skip..])),
        Some((&expected, rest)) => id.split_first().is_some_and(|(&unit, id_rest)| {
            let one = match expected {
                QUESTION => true,
                HASH => hex(unit),
                PERCENT => (0x30..=0x39).contains(&unit),
                _ => fold(expected) == fold(unit),
            };
            one && reference(rest, id_rest)
        }),
    }
}

/// A small alphabet where every rule matters: case pairs, hex and non-hex letters and digits,
/// the four wildcards (also as id characters), separators, a non-ASCII letter that must not
/// fold.
const ALPHABET: [u16; 17] = [
    0x61, 0x41, 0x62, 0x42, 0x66, 0x46, 0x67, 0x47, 0x30, 0x39, 0x2E, 0x5C, STAR, QUESTION, HASH,
    PERCENT, 0xE9,
];

fn units(range: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u16>> {
    prop::collection::vec(prop::sample::select(&ALPHABET[..]), range)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn glob_matches_the_reference(pattern in units(1..9), id in units(0..11)) {
        let mut patterns = DeviceIdPatterns::empty();
        prop_assert_eq!(patterns.push_utf16(&pattern), Ok(()));
        let expected = reference(&pattern, &id);
        prop_assert_eq!(patterns.matches(&id), expected);
        let single = patterns.iter().next().map(|stored| stored.matches(&id));
        prop_assert_eq!(single, Some(expected));
    }

    #[test]
    fn any_of_several_patterns(patterns in prop::collection::vec(units(1..6), 1..4), id in units(0..8)) {
        let mut set = DeviceIdPatterns::empty();
        for pattern in &patterns {
            prop_assert_eq!(set.push_utf16(pattern), Ok(()));
        }
        prop_assert_eq!(set.matches(&id), patterns.iter().any(|pattern| reference(pattern, &id)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Through `PEP_DPM_PREPARE_DEVICE`: a device is accepted iff the configured pattern matches
    /// its id (the table has room).
    #[test]
    fn prepare_accepts_what_the_pattern_matches(pattern in units(1..9), id in units(0..11)) {
        let mut config = Config::new();
        let mut patterns = DeviceIdPatterns::empty();
        prop_assert_eq!(patterns.push_utf16(&pattern), Ok(()));
        config.device_id_patterns = patterns;
        engine(&config);
        let id = String::from_utf16(&id).unwrap_or_default();
        let id_units: Vec<u16> = id.encode_utf16().collect();
        prop_assert_eq!(ppm_caller::prepare::<Scripted>(&id), reference(&pattern, &id_units));
    }
}

#[test]
fn reference_agrees_with_documented_examples() {
    let u = |text: &str| -> Vec<u16> { text.encode_utf16().collect() };
    assert!(reference(&u("\\_SB.CPU#*"), &u("\\_sb.cpu12")));
    assert!(!reference(&u("\\_SB.CPU#"), &u("\\_SB.CPU12")));
    assert!(reference(&u("\\_SB.P%%%"), &u("\\_SB.P012")));
    assert!(!reference(&u("\\_SB.P%%%"), &u("\\_SB.PC00")));
    assert!(reference(&u("\\_SB.C###*"), &u("\\_SB.C01F")));
    assert!(!reference(&u("\\_SB.C###*"), &u("\\_SB.C00")));
    assert!(reference(&u("*"), &u("")));
    assert!(!reference(&u("?"), &u("")));
    assert!(!reference(&u("#"), &u("g")));
    assert!(!reference(&u("\u{e9}"), &u("\u{c9}")));
}

#[test]
fn pattern_limits() {
    let mut patterns = DeviceIdPatterns::empty();
    assert_eq!(patterns.push_utf16(&[]), Err(PatternError::Empty));
    assert_eq!(patterns.push_utf16(&[STAR; MAX_PATTERN_UNITS + 1]), Err(PatternError::TooLong));
    assert_eq!(patterns.push_utf16(&[STAR; MAX_PATTERN_UNITS]), Ok(()));
    assert!(patterns.matches(&[0x41; 200]));
}
