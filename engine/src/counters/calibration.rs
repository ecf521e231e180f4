//! The nominal rate: configured, stated by the hardware (CPUID, `MSR_PLATFORM_INFO`) or
//! measured against the platform's time source during initialisation.

use super::setup::{CALIBRATION_MICROSECONDS, NoCountersReason, NominalRateSource};
use crate::arm64::SystemRegister;
use crate::config::{Config, MAX_NOMINAL_MHZ};
use crate::cpu::CpuFeatures;
use crate::platform::{InterruptsMasked, MsrFault, Passive, Platform};
use crate::x86::{bits, msr};

/// Reads the Activity Monitors' cycle counters, busy-waits [`CALIBRATION_MICROSECONDS`] and
/// reads them again: fails when a read faults or either counter did not advance; otherwise
/// returns the processor's delivered frequency over the wait in MHz (processor cycles per
/// constant-frequency tick × `constant_hz`), the nominal rate when none is configured — any
/// rate serves Windows' `NominalRate × ΔActual / ΔNominal`, since `NominalCount` is scaled to
/// it. `PASSIVE_LEVEL` (`passive`).
pub(super) fn calibrate_amu<P: Platform>(
    passive: &Passive,
    platform: &P,
    constant_hz: u64,
) -> Result<u32, NoCountersReason> {
    let read = || platform.with_interrupts_masked(|masked| read_amu_pair(masked, platform));
    let (start_actual, start_constant) =
        read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    platform.stall_microseconds(passive, CALIBRATION_MICROSECONDS);
    let (end_actual, end_constant) = read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    let actual = end_actual.saturating_sub(start_actual);
    let constant = end_constant.saturating_sub(start_constant);
    if actual == 0 || constant == 0 {
        return Err(NoCountersReason::NotAdvancing);
    }
    // MHz = actual / (constant / constant_hz) / 1e6, rounded.
    let numerator = u128::from(actual).saturating_mul(u128::from(constant_hz));
    Ok(rounded_mhz(numerator, u128::from(constant).saturating_mul(1_000_000)))
}

/// The Activity Monitors' processor and constant-frequency cycle counts, back to back in one
/// masked section (`masked`).
fn read_amu_pair<P: Platform>(
    _masked: &InterruptsMasked,
    platform: &P,
) -> Result<(u64, u64), MsrFault> {
    let actual = platform.read_system_register(SystemRegister::Amevcntr00El0)?;
    let constant = platform.read_system_register(SystemRegister::Amevcntr01El0)?;
    Ok((actual, constant))
}

/// The first read of each counter MSR, at `PASSIVE_LEVEL` (`passive`) with interrupts enabled,
/// before any masked section reads it: on Windows x64 the first read of an MSR is the one made
/// under SEH (`src/msr_guard.rs`), and an MSR that faults must fault here — where the shim's
/// `__except` can catch the #GP — not with interrupts masked. A fault means no counters.
fn probe_unmasked<P: Platform>(
    _passive: &Passive,
    platform: &P,
    actual_msr: u32,
    nominal_msr: u32,
) -> Result<(), NoCountersReason> {
    for number in [actual_msr, nominal_msr] {
        platform.read_msr(number).map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    }
    Ok(())
}

/// MSRs `actual_msr` then `nominal_msr`, back to back in one masked section (`masked`).
fn read_msr_pair<P: Platform>(
    _masked: &InterruptsMasked,
    platform: &P,
    actual_msr: u32,
    nominal_msr: u32,
) -> Result<(u64, u64), MsrFault> {
    let actual = platform.read_msr(actual_msr)?;
    let nominal = platform.read_msr(nominal_msr)?;
    Ok((actual, nominal))
}

/// `numerator / denominator` rounded to the nearest MHz, at most [`MAX_NOMINAL_MHZ`] (0 when
/// the denominator is 0).
fn rounded_mhz(numerator: u128, denominator: u128) -> u32 {
    let mhz = numerator.saturating_add(denominator / 2).checked_div(denominator).unwrap_or(0);
    u32::try_from(mhz).unwrap_or(0).min(MAX_NOMINAL_MHZ)
}

pub(super) fn configured_nominal(config: &Config) -> (u32, NominalRateSource) {
    match config.nominal_mhz {
        Some(mhz) if (1..=MAX_NOMINAL_MHZ).contains(&mhz) => {
            (mhz, NominalRateSource::Configuration)
        }
        _ => (0, NominalRateSource::Unknown),
    }
}

pub(super) fn hardware_nominal<P: Platform>(
    platform: &P,
    cpu: &CpuFeatures,
) -> Option<(u32, NominalRateSource)> {
    if cpu.is_intel && cpu.base_mhz != 0 {
        return Some((cpu.base_mhz, NominalRateSource::CpuidBaseFrequency));
    }
    if cpu.has_intel_platform_msrs() {
        let info = platform.read_msr(msr::MSR_PLATFORM_INFO).ok()?;
        let ratio = u32::try_from(bits(info, 8, 15)).ok()?;
        let mhz = ratio.checked_mul(100).filter(|&mhz| mhz != 0)?;
        return Some((mhz, NominalRateSource::PlatformInfo));
    }
    None
}

/// Reads the pair, busy-waits [`CALIBRATION_MICROSECONDS`] and reads it again: fails when the
/// reads fault or either counter did not advance; otherwise returns the nominal counter's rate
/// in MHz measured against the platform's time source (0 when the time source did not advance).
/// `PASSIVE_LEVEL` (`passive`).
pub(super) fn calibrate<P: Platform>(
    passive: &Passive,
    platform: &P,
    actual_msr: u32,
    nominal_msr: u32,
    mask: u64,
) -> Result<u32, NoCountersReason> {
    probe_unmasked(passive, platform, actual_msr, nominal_msr)?;
    let read = || {
        platform.with_interrupts_masked(|masked| {
            read_msr_pair(masked, platform, actual_msr, nominal_msr)
        })
    };
    // Each pair is bracketed by the time source and placed at the bracket's midpoint: the
    // nominal count is sampled at the same point of both pairs, so the time the reads take
    // (1–2 µs each on a hypervisor that intercepts them) cancels instead of lengthening the
    // time window by a pair (0.03 % of 10 ms, enough to round 2000 MHz down to 1999).
    let start_before = platform.performance_counter(passive);
    let (start_actual, start_nominal) = read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    let start_after = platform.performance_counter(passive);
    platform.stall_microseconds(passive, CALIBRATION_MICROSECONDS);
    let end_before = platform.performance_counter(passive);
    let (end_actual, end_nominal) = read().map_err(|MsrFault| NoCountersReason::ReadFaulted)?;
    let end_after = platform.performance_counter(passive);
    let start_time = start_before;
    let (actual, nominal) = if mask == u64::MAX {
        (end_actual.saturating_sub(start_actual), end_nominal.saturating_sub(start_nominal))
    } else {
        (
            end_actual.wrapping_sub(start_actual) & mask,
            end_nominal.wrapping_sub(start_nominal) & mask,
        )
    };
    if actual == 0 || nominal == 0 {
        return Err(NoCountersReason::NotAdvancing);
    }
    // Twice the ticks between the brackets' midpoints.
    let twice_ticks =
        u128::from(end_before.ticks).saturating_add(u128::from(end_after.ticks)).saturating_sub(
            u128::from(start_before.ticks).saturating_add(u128::from(start_after.ticks)),
        );
    if twice_ticks == 0 || start_time.frequency == 0 {
        return Ok(0);
    }
    // MHz = nominal counts / seconds / 1e6 = nominal × frequency / ticks / 1e6, rounded.
    let numerator =
        u128::from(nominal).saturating_mul(u128::from(start_time.frequency)).saturating_mul(2);
    Ok(rounded_mhz(numerator, twice_ticks.saturating_mul(1_000_000)))
}
