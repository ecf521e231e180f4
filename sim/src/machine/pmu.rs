//! The architectural PMU behind the `fixed-pmc` counter source, the time-stamp counter.
//!
//! The simulated processors' architectural performance monitoring unit (Intel SDM Vol. 3B,
//! "Architectural Performance Monitoring"), their time-stamp counters, the HAL's arbitration
//! of the PMU, and a log of what software did with PMU registers. Per processor: the three fixed counters — `IA32_FIXED_CTR0` (instructions retired, modelled
//! as one per core cycle), `IA32_FIXED_CTR1` (unhalted core cycles), `IA32_FIXED_CTR2`
//! (unhalted reference cycles) — with `IA32_FIXED_CTR_CTRL`, `IA32_PERF_GLOBAL_CTRL` and
//! `IA32_PERF_GLOBAL_STATUS`, and the general-purpose counters and event selects as plain
//! registers (no events are modelled). A fixed counter counts while its `IA32_FIXED_CTR_CTRL`
//! field enables ring 0 (the simulated load runs in ring 0 as far as the PMU is concerned) and
//! its `IA32_PERF_GLOBAL_CTRL` bit 32 + i is set: core cycles at the delivered frequency,
//! reference cycles at the nominal rate, both only in C0 — the very cycles APERF and MPERF
//! count — modulo 2^width. A wrap sets the counter's overflow bit in `IA32_PERF_GLOBAL_STATUS`
//! and is not a discontinuity. Writes with reserved bits set fault, as on hardware.
//!
//! Machine-wide: whether another owner holds the PMU (the HAL then refuses a reservation), the
//! reservation the driver obtained, whether the driver enabled the counters on every processor
//! (what `fixed_counters_reserved` reports), and a log of PMU register accesses and MSR writes
//! with the context they were made in, for the `pmc.reservation_respected` check.
//!
//! The time-stamp counter counts at the nominal rate at all times (invariant TSC), from a
//! per-processor offset.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use ppm_engine::abi::{NTSTATUS, STATUS_INSUFFICIENT_RESOURCES, STATUS_SUCCESS};
use ppm_engine::platform::MsrFault;

use super::{COUNT_SCALE, Discontinuity, DiscontinuityKind, Machine, ProcessorState};
use crate::cpu::msr;

const FIXED: usize = 3;
const GENERAL: usize = 8;
/// `IA32_FIXED_CTR_CTRL` bits a write may set: a 4-bit field per fixed counter.
const FIXED_CTR_CTRL_VALID: u64 = (1 << (4 * FIXED)) - 1;
/// The fields of fixed counters 1 and 2 in `IA32_FIXED_CTR_CTRL`.
const FIXED_CTR_CTRL_COUNTERS_1_2: u64 = 0xFF0;
/// `IA32_PERF_GLOBAL_CTRL` bits a write may set: general counters 0..8, fixed counters 0..3.
const PERF_GLOBAL_CTRL_VALID: u64 = 0xFF | (0b111 << 32);
/// The `IA32_PERF_GLOBAL_CTRL` bits of fixed counters 1 and 2.
const PERF_GLOBAL_CTRL_COUNTERS_1_2: u64 = 0b110 << 32;
/// The general-purpose counters' width.
const GENERAL_MASK: u64 = (1 << 48) - 1;
/// What firmware left in `IA32_PERF_GLOBAL_CTRL`: the general counters globally enabled, the
/// fixed counters not (their `IA32_FIXED_CTR_CTRL` fields are clear anyway).
const PERF_GLOBAL_CTRL_FROM_FIRMWARE: u64 = 0xFF;
/// The most MSR writes the log keeps.
const MAX_LOGGED_WRITES: usize = 65_536;
/// The most unreserved PMU reads the log keeps.
const MAX_LOGGED_READS: usize = 32;

/// `2^width - 1`.
const fn mask(width: u32) -> u64 {
    if width >= 64 { u64::MAX } else { (1 << width) - 1 }
}

/// One processor's PMU registers.
#[derive(Clone, Debug)]
pub(super) struct ProcessorPmu {
    fixed: [u64; FIXED],
    fixed_ctr_ctrl: u64,
    perf_global_ctrl: u64,
    global_status: u64,
    general: [u64; GENERAL],
    event_select: [u64; GENERAL],
    /// The processor's (core, reference) cycle totals the fixed counters are up to date for.
    synced: [u64; 2],
    /// Wraps per fixed counter so far.
    wraps: [u64; FIXED],
    /// The enable bits another owner cleared and will restore (`pmu-reprogrammed` with a
    /// window): `IA32_FIXED_CTR_CTRL` and `IA32_PERF_GLOBAL_CTRL` bits of counters 1 and 2.
    paused: Option<(u64, u64)>,
}

impl ProcessorPmu {
    /// Processor `index`'s PMU at power-on: the fixed counters at distinct, arbitrary values
    /// (they keep whatever they held), none of them enabled.
    pub(super) fn new(index: usize, width: Option<u32>) -> Self {
        let mask = mask(width.unwrap_or(64));
        let seed = u64::try_from(index).unwrap_or(0).wrapping_add(1);
        let value = |salt: u64| seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(salt) & mask;
        Self {
            fixed: [value(0x1234_5678), value(0x0BAD_CAFE_F00D), value(0x7_0000_0001)],
            fixed_ctr_ctrl: 0,
            perf_global_ctrl: PERF_GLOBAL_CTRL_FROM_FIRMWARE,
            global_status: 0,
            general: [0; GENERAL],
            event_select: [0; GENERAL],
            synced: [0; 2],
            wraps: [0; FIXED],
            paused: None,
        }
    }

    /// Whether fixed counter `counter` counts now.
    const fn counting(&self, counter: usize) -> bool {
        let field = self.fixed_ctr_ctrl >> (4 * counter);
        field & 1 != 0 && (self.perf_global_ctrl >> (32 + counter)) & 1 != 0
    }

    /// Brings the fixed counters up to the processor's cycle totals.
    fn sync(&mut self, totals: [u64; 2], width: u32) {
        let core = totals[0].wrapping_sub(self.synced[0]);
        let reference = totals[1].wrapping_sub(self.synced[1]);
        for counter in 0..FIXED {
            if !self.counting(counter) {
                continue;
            }
            let delta = if counter == 2 { reference } else { core };
            let sum = u128::from(self.fixed[counter]) + u128::from(delta);
            let wraps = u64::try_from(sum >> width).unwrap_or(u64::MAX);
            if wraps > 0 {
                self.wraps[counter] = self.wraps[counter].saturating_add(wraps);
                self.global_status |= 1 << (32 + counter);
            }
            self.fixed[counter] = u64::try_from(sum & u128::from(mask(width))).unwrap_or(0);
        }
        self.synced = totals;
    }

    fn read(&self, number: u32) -> Option<u64> {
        let general = |base: u32| usize::try_from(number.checked_sub(base)?).ok();
        match number {
            msr::IA32_FIXED_CTR0..=msr::IA32_FIXED_CTR2 => {
                self.fixed.get(general(msr::IA32_FIXED_CTR0)?).copied()
            }
            msr::IA32_FIXED_CTR_CTRL => Some(self.fixed_ctr_ctrl),
            msr::IA32_PERF_GLOBAL_CTRL => Some(self.perf_global_ctrl),
            msr::IA32_PERF_GLOBAL_STATUS => Some(self.global_status),
            _ => self
                .general
                .get(general(msr::IA32_PMC0)?)
                .or_else(|| self.event_select.get(general(msr::IA32_PERFEVTSEL0)?))
                .copied(),
        }
    }

    /// Writes a register; `Err` for a register the model does not have or reserved bits set.
    fn write(&mut self, number: u32, value: u64, width: u32) -> Result<(), MsrFault> {
        let offset = |base: u32| number.checked_sub(base).and_then(|n| usize::try_from(n).ok());
        match number {
            msr::IA32_FIXED_CTR0..=msr::IA32_FIXED_CTR2 if value & !mask(width) == 0 => {
                let counter = offset(msr::IA32_FIXED_CTR0).ok_or(MsrFault)?;
                *self.fixed.get_mut(counter).ok_or(MsrFault)? = value;
            }
            msr::IA32_FIXED_CTR_CTRL if value & !FIXED_CTR_CTRL_VALID == 0 => {
                self.fixed_ctr_ctrl = value;
            }
            msr::IA32_PERF_GLOBAL_CTRL if value & !PERF_GLOBAL_CTRL_VALID == 0 => {
                self.perf_global_ctrl = value;
            }
            _ => {
                let general = offset(msr::IA32_PMC0).filter(|n| *n < GENERAL);
                let select = offset(msr::IA32_PERFEVTSEL0).filter(|n| *n < GENERAL);
                match (general, select) {
                    (Some(n), _) => self.general[n] = value & GENERAL_MASK,
                    (_, Some(n)) => self.event_select[n] = value,
                    _ => return Err(MsrFault),
                }
            }
        }
        Ok(())
    }
}

/// What the emulated `HalAllocateHardwareCounters` was asked and answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservationRecord {
    /// The resource list, described (`NULL` or its descriptors).
    pub request: String,
    /// The status returned.
    pub status: NTSTATUS,
    /// Whether the reservation was given back (`HalFreeHardwareCounters`).
    pub freed: bool,
}

/// Where software touched a PMU register or wrote an MSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessContext {
    /// The driver reserving the PMU and enabling the fixed counters, before the PEP exists.
    DriverSetup,
    /// Outside every PEP callback: the PEP's initialisation (`Pep::new`).
    Initialisation,
    /// Inside a PEP callback (a DPM or PPM notification).
    Callback,
    /// Inside `RESUME_FROM_SYSTEM_STATE`, where a PEP that holds the PMU reservation enables
    /// its fixed counters again after the sleep reset them.
    Resume,
}

/// One logged MSR access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrAccess {
    /// The processor it executed on.
    pub processor: u32,
    /// The MSR.
    pub msr: u32,
    /// The value written (`None`: a read).
    pub written: Option<u64>,
    /// A write's register value before it (`None` for reads and registers the model lacks).
    pub previous: Option<u64>,
    /// Whether the access succeeded.
    pub ok: bool,
    /// Whether a PMU reservation was held at the time.
    pub reserved: bool,
    /// Where it was made.
    pub context: AccessContext,
    /// Clock time, ns.
    pub at_ns: u64,
}

/// What software did with PMU registers and MSR writes (kept by the machine).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessLog {
    /// MSR writes (every one up to 65 536).
    pub writes: Vec<MsrAccess>,
    /// MSR writes in all.
    pub write_count: u64,
    /// PMU register reads made without a reservation (the first 32).
    pub unreserved_reads: Vec<MsrAccess>,
    /// PMU register reads made without a reservation, in all.
    pub unreserved_read_count: u64,
    /// PMU register reads in all.
    pub pmu_reads: u64,
}

/// One processor's fixed counters, for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedCounterState {
    /// `IA32_FIXED_CTR0..2`.
    pub values: [u64; FIXED],
    /// Whether each counts now.
    pub counting: [bool; FIXED],
    /// Wraps of each so far.
    pub wraps: [u64; FIXED],
    /// `IA32_FIXED_CTR_CTRL`.
    pub fixed_ctr_ctrl: u64,
    /// `IA32_PERF_GLOBAL_CTRL`.
    pub perf_global_ctrl: u64,
}

/// The machine-wide PMU state.
#[derive(Debug)]
pub(super) struct MachinePmu {
    /// The fixed counters' width, when the CPU has the architectural PMU.
    width: Option<u32>,
    /// Another owner holds the PMU.
    busy: AtomicBool,
    /// A reservation is held.
    reserved: AtomicBool,
    /// The driver reserved the PMU and enabled the counters on every processor.
    ready: AtomicBool,
    reservation: Mutex<Option<ReservationRecord>>,
    log: Mutex<AccessLog>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MachinePmu {
    pub(super) const fn new(width: Option<u32>) -> Self {
        Self {
            width,
            busy: AtomicBool::new(false),
            reserved: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            reservation: Mutex::new(None),
            log: Mutex::new(AccessLog {
                writes: Vec::new(),
                write_count: 0,
                unreserved_reads: Vec::new(),
                unreserved_read_count: 0,
                pmu_reads: 0,
            }),
        }
    }
}

impl ProcessorState {
    /// The PMU brought up to the processor's cycle totals (the caller synced the processor).
    fn pmu_now(&mut self, width: u32) -> &mut ProcessorPmu {
        let totals = [self.core_cycles, self.reference_cycles];
        self.pmu.sync(totals, width);
        &mut self.pmu
    }

    /// A processor reset (power-on after a system sleep): the PMU's control registers return
    /// to their reset values — every fixed counter disabled, as firmware leaves them — and the
    /// fixed counters to zero. Whatever another owner had paused is gone too.
    pub(super) fn reset_pmu(&mut self, width: u32) {
        let pmu = self.pmu_now(width);
        pmu.fixed = [0; FIXED];
        pmu.fixed_ctr_ctrl = 0;
        pmu.perf_global_ctrl = PERF_GLOBAL_CTRL_FROM_FIRMWARE;
        pmu.global_status = 0;
        pmu.paused = None;
    }
}

impl Machine {
    /// The fixed counters' width, when the CPU has the architectural PMU (`fixed-pmc`).
    #[must_use]
    pub const fn fixed_counter_width(&self) -> Option<u32> {
        self.pmu.width
    }

    /// Sets whether another owner holds the PMU (the HAL then refuses reservations).
    pub fn set_pmu_busy(&self, busy: bool) {
        self.pmu.busy.store(busy, Ordering::Release);
    }

    /// The emulated `HalAllocateHardwareCounters` for every processor: refused with
    /// `STATUS_INSUFFICIENT_RESOURCES` while another owner (or an earlier reservation) holds
    /// the PMU, or when the CPU has no PMU; otherwise the PMU is reserved. `request` describes
    /// the resource list, for the record.
    pub fn allocate_hardware_counters(&self, request: String) -> NTSTATUS {
        let refused = self.pmu.width.is_none()
            || self.pmu.busy.load(Ordering::Acquire)
            || self.pmu.reserved.swap(true, Ordering::AcqRel);
        let status = if refused { STATUS_INSUFFICIENT_RESOURCES } else { STATUS_SUCCESS };
        *locked(&self.pmu.reservation) = Some(ReservationRecord { request, status, freed: false });
        status
    }

    /// The emulated `HalFreeHardwareCounters`.
    pub fn free_hardware_counters(&self) {
        if self.pmu.reserved.swap(false, Ordering::AcqRel)
            && let Some(record) = locked(&self.pmu.reservation).as_mut()
        {
            record.freed = true;
        }
    }

    /// The last reservation request and its answer.
    #[must_use]
    pub fn reservation(&self) -> Option<ReservationRecord> {
        locked(&self.pmu.reservation).clone()
    }

    /// Whether a PMU reservation is held.
    #[must_use]
    pub fn pmu_reserved(&self) -> bool {
        self.pmu.reserved.load(Ordering::Acquire)
    }

    /// Marks whether the driver reserved the PMU and enabled the fixed counters everywhere.
    pub fn set_fixed_counters_ready(&self, ready: bool) {
        self.pmu.ready.store(ready, Ordering::Release);
    }

    /// Whether the driver reserved the PMU and enabled the fixed counters everywhere (what the
    /// platform's `fixed_counters_reserved` reports).
    #[must_use]
    pub fn fixed_counters_ready(&self) -> bool {
        self.pmu.ready.load(Ordering::Acquire)
    }

    /// Reads PMU register `number` on processor `index`: `None` when the CPU has no PMU or the
    /// register is not one of the PMU's (the CPU model answers those).
    #[must_use]
    pub fn read_pmu_msr(&self, index: u32, number: u32) -> Option<Result<u64, MsrFault>> {
        let width = self.pmu.width?;
        if !crate::cpu::is_pmu_msr(number) {
            return None;
        }
        self.with_state(index, |state| state.pmu_now(width).read(number).ok_or(MsrFault))
    }

    /// Writes MSR `number` on processor `index` (only PMU registers are writable in this
    /// model); returns the result and the register's previous value.
    pub fn write_msr(
        &self,
        index: u32,
        number: u32,
        value: u64,
    ) -> (Result<(), MsrFault>, Option<u64>) {
        let Some(width) = self.pmu.width else { return (Err(MsrFault), None) };
        if !crate::cpu::is_pmu_msr(number) {
            return (Err(MsrFault), None);
        }
        self.with_state(index, |state| {
            let pmu = state.pmu_now(width);
            let previous = pmu.read(number);
            (pmu.write(number, value, width), previous)
        })
        .unwrap_or((Err(MsrFault), None))
    }

    /// Processor `index`'s time-stamp counter: the nominal rate since power-on, from a
    /// per-processor offset; it never stops (invariant TSC).
    #[must_use]
    pub fn timestamp(&self, index: u32) -> u64 {
        self.timestamp_at(index, self.processor_now_ns(index))
    }

    /// Processor `index`'s time-stamp counter when its clock reads `at_ns`.
    #[must_use]
    pub fn timestamp_at(&self, index: u32, at_ns: u64) -> u64 {
        let offset = u128::from(index).wrapping_add(1) * 3_000_000_019;
        // ARM64: the virtual count (`CNTVCT_EL0`) at the generic timer's rate.
        let rate_hz = self
            .cpu()
            .arm
            .map_or_else(|| u128::from(self.nominal_hz), |arm| u128::from(arm.cntfrq_hz));
        let counts = u128::from(at_ns) * rate_hz / 1_000_000_000;
        u64::try_from((offset + counts) & u128::from(u64::MAX)).unwrap_or(0)
    }

    /// Logs an MSR access software made (PMU register reads and every write).
    pub fn log_msr_access(&self, access: MsrAccess) {
        let mut log = locked(&self.pmu.log);
        if access.written.is_some() {
            log.write_count += 1;
            if log.writes.len() < MAX_LOGGED_WRITES {
                log.writes.push(access);
            }
        } else {
            log.pmu_reads += 1;
            if !access.reserved {
                log.unreserved_read_count += 1;
                if log.unreserved_reads.len() < MAX_LOGGED_READS {
                    log.unreserved_reads.push(access);
                }
            }
        }
    }

    /// What software did with PMU registers and MSR writes so far.
    #[must_use]
    pub fn msr_access_log(&self) -> AccessLog {
        locked(&self.pmu.log).clone()
    }

    /// Processor `index`'s fixed counters now (`None` without a PMU).
    #[must_use]
    pub fn fixed_counters(&self, index: u32) -> Option<FixedCounterState> {
        let width = self.pmu.width?;
        self.with_state(index, |state| {
            let pmu = state.pmu_now(width);
            FixedCounterState {
                values: pmu.fixed,
                counting: [pmu.counting(0), pmu.counting(1), pmu.counting(2)],
                wraps: pmu.wraps,
                fixed_ctr_ctrl: pmu.fixed_ctr_ctrl,
                perf_global_ctrl: pmu.perf_global_ctrl,
            }
        })
    }

    /// Sets processor `index`'s fixed counters just below 2^width (a `counter-near-wrap` event
    /// on a `fixed-pmc` machine): `IA32_FIXED_CTR1` wraps exactly `wrap_after_ns` from now and
    /// `IA32_FIXED_CTR2` after 1.5 × that, given the processor's load (2^32 below when it does
    /// not run in C0 meanwhile). Records a `NearWrap` (not a break); returns the values set.
    pub fn set_fixed_near_wrap(&self, index: u32, wrap_after_ns: u64) -> Option<[u64; 2]> {
        let width = self.pmu.width?;
        let slot = usize::try_from(index).ok()?;
        let now = self.processor_now_ns(index);
        let scaled = |length: u64, reference: bool| {
            let (mut total, mut at) = (0_u128, now);
            let end = now.saturating_add(length);
            while at < end {
                let (load, change) = self.load_at(slot, at);
                let until = change.min(end);
                // Hz, as the counters are kept (see `COUNT_SCALE`).
                let rate = if reference {
                    u128::from(self.nominal_hz)
                } else {
                    u128::from(load.frequency_mhz) * 1_000_000
                };
                total += rate * u128::from(load.busy_percent) * u128::from(until - at);
                at = until;
            }
            total
        };
        let core = scaled(wrap_after_ns, false);
        let reference = scaled(wrap_after_ns.saturating_add(wrap_after_ns / 2), true);
        let modulus = u128::from(mask(width)) + 1;
        self.with_state(index, |state| {
            state.pmu_now(width);
            // Whole counts to come, given the fractions carried now (the cycle totals share
            // APERF's and MPERF's remainders).
            let counts = [
                (state.aperf_remainder + core) / COUNT_SCALE,
                (state.mperf_remainder + reference) / COUNT_SCALE,
            ];
            let below = |count: u128| {
                let distance = if count == 0 { 1 << 32 } else { count.min(modulus - 1) };
                u64::try_from(modulus - distance).unwrap_or(0)
            };
            let values = [below(counts[0]), below(counts[1])];
            let pmu = &mut state.pmu;
            pmu.fixed[1] = values[0];
            pmu.fixed[2] = values[1];
            state
                .discontinuities
                .push(Discontinuity { at_ns: now, kind: DiscontinuityKind::NearWrap });
            values
        })
    }

    /// Another PMU owner reprograms processor `index`'s fixed counters 1 and 2 (a
    /// `pmu-reprogrammed` event): disables them, writes `values` (core, reference) and, without
    /// `disabled_for_ns`, re-enables them at once; otherwise they stay disabled until
    /// [`Self::resume_fixed_counters`]. Records the discontinuity.
    pub fn reprogram_fixed_counters(
        &self,
        index: u32,
        values: [u64; 2],
        disabled_for_ns: Option<u64>,
    ) {
        let Some(width) = self.pmu.width else { return };
        let now = self.processor_now_ns(index);
        self.with_state(index, |state| {
            let pmu = state.pmu_now(width);
            pmu.fixed[1] = values[0] & mask(width);
            pmu.fixed[2] = values[1] & mask(width);
            let kind = match disabled_for_ns {
                Some(length) => {
                    let saved = (
                        pmu.fixed_ctr_ctrl & FIXED_CTR_CTRL_COUNTERS_1_2,
                        pmu.perf_global_ctrl & PERF_GLOBAL_CTRL_COUNTERS_1_2,
                    );
                    pmu.paused.get_or_insert(saved);
                    pmu.fixed_ctr_ctrl &= !FIXED_CTR_CTRL_COUNTERS_1_2;
                    pmu.perf_global_ctrl &= !PERF_GLOBAL_CTRL_COUNTERS_1_2;
                    DiscontinuityKind::PmuStopped { until_ns: now.saturating_add(length) }
                }
                None => DiscontinuityKind::PmuReprogrammed,
            };
            state.discontinuities.push(Discontinuity { at_ns: now, kind });
        });
    }

    /// The other owner re-enables processor `index`'s fixed counters 1 and 2 as they were before
    /// [`Self::reprogram_fixed_counters`] disabled them.
    pub fn resume_fixed_counters(&self, index: u32) {
        let Some(width) = self.pmu.width else { return };
        self.with_state(index, |state| {
            let pmu = state.pmu_now(width);
            if let Some((control, global)) = pmu.paused.take() {
                pmu.fixed_ctr_ctrl |= control;
                pmu.perf_global_ctrl |= global;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::NS_PER_MS;
    use crate::scenario::Scenario;

    fn machine(width: u32) -> Machine {
        let text = format!(
            "name = \"t\"\n[platform]\nprocessors = 2\nnominal_mhz = 2000\ncounter_source = \"fixed-pmc\"\npmc_width = {width}\n[pofx]\nduration_ms = 1000\n[[phase]]\nstart_ms = 0\nprocessors = \"all\"\nfrequency_mhz = 3000\nbusy_percent = 50\n"
        );
        let machine = Machine::new(&Scenario::from_toml_str(&text).expect("valid"));
        machine.start_runtime();
        machine
    }

    #[test]
    fn fixed_counters_count_only_while_enabled_and_wrap_modulo_the_width() {
        let machine = machine(32);
        let before = machine.fixed_counters(0).expect("a PMU");
        assert_eq!(before.counting, [false; 3]);
        machine.advance_clock_to(100 * NS_PER_MS);
        assert_eq!(machine.fixed_counters(0).expect("a PMU").values, before.values);
        // Counters 1 and 2 in all rings, globally enabled.
        assert_eq!(machine.write_msr(0, msr::IA32_FIXED_CTR_CTRL, 0x330).0, Ok(()));
        let global = PERF_GLOBAL_CTRL_FROM_FIRMWARE | PERF_GLOBAL_CTRL_COUNTERS_1_2;
        assert_eq!(
            machine.write_msr(0, msr::IA32_PERF_GLOBAL_CTRL, global),
            (Ok(()), Some(PERF_GLOBAL_CTRL_FROM_FIRMWARE))
        );
        assert_eq!(machine.write_msr(0, msr::IA32_FIXED_CTR1, 0), (Ok(()), Some(before.values[1])));
        assert_eq!(machine.write_msr(0, msr::IA32_FIXED_CTR2, u64::from(u32::MAX) - 999).0, Ok(()));
        // Reserved bits fault.
        assert_eq!(machine.write_msr(0, msr::IA32_FIXED_CTR_CTRL, 1 << 12).0, Err(MsrFault));
        assert_eq!(machine.write_msr(0, msr::IA32_FIXED_CTR1, 1 << 32).0, Err(MsrFault));
        machine.advance_clock_to(200 * NS_PER_MS);
        // 100 ms at 3000 MHz, 50 % in C0: 1.5e8 core cycles; 1e8 reference cycles, which wrap.
        let after = machine.fixed_counters(0).expect("a PMU");
        assert_eq!(after.values[1], 150_000_000);
        assert_eq!(after.values[2], 100_000_000 - 1000);
        assert_eq!(after.wraps, [0, 0, 1]);
        assert_eq!(machine.read_pmu_msr(0, msr::IA32_PERF_GLOBAL_STATUS), Some(Ok(1 << 34)));
        // Processor 1 was never enabled.
        assert_eq!(machine.fixed_counters(1).expect("a PMU").counting, [false; 3]);
        assert_eq!(machine.read_pmu_msr(0, 0x10), None);
    }

    #[test]
    fn near_wrap_and_reprogramming() {
        let machine = machine(48);
        for index in 0..2 {
            let _ = machine.write_msr(index, msr::IA32_FIXED_CTR_CTRL, 0x330);
            let _ = machine.write_msr(index, msr::IA32_PERF_GLOBAL_CTRL, 0x6_0000_00FF);
        }
        let set = machine.set_fixed_near_wrap(0, 20 * NS_PER_MS).expect("a PMU");
        // 20 ms at 3000 MHz, 50 %: 3e7 core cycles to go; 30 ms × 2000 MHz × 50 % reference.
        assert_eq!(set, [(1 << 48) - 30_000_000, (1 << 48) - 30_000_000]);
        machine.advance_clock_to(20 * NS_PER_MS);
        let at = machine.fixed_counters(0).expect("a PMU");
        assert_eq!((at.values[1], at.wraps[1]), (0, 1));
        machine.reprogram_fixed_counters(0, [5, 7], Some(NS_PER_MS * 10));
        machine.advance_clock_to(25 * NS_PER_MS);
        assert_eq!(machine.fixed_counters(0).expect("a PMU").values[1..], [5, 7]);
        machine.resume_fixed_counters(0);
        machine.advance_clock_to(26 * NS_PER_MS);
        let resumed = machine.fixed_counters(0).expect("a PMU");
        assert_eq!(resumed.values[1..], [5 + 1_500_000, 7 + 1_000_000]);
        assert!(matches!(
            machine.discontinuities(0).last(),
            Some(Discontinuity { kind: DiscontinuityKind::PmuStopped { .. }, .. })
        ));
        // The TSC counts at the nominal rate whatever the load.
        let tsc = machine.timestamp(1);
        machine.advance_clock_to(27 * NS_PER_MS);
        assert_eq!(machine.timestamp(1) - tsc, 2_000_000);
    }
}
