//! The PMU reservation for the fixed-counter source.
//!
//! The HAL's hardware-counter arbitration (`HalAllocateHardwareCounters`, `ntddk.h`) and
//! enabling the architectural fixed counters on every active processor. `PASSIVE_LEVEL`, from
//! `DriverEntry`, before the PEP is built.
//!
//! Rule: no PMU register is touched without a reservation. The engine decides whether one is
//! wanted ([`pmc::counters_to_reserve`]: only where the configuration may use the fixed
//! counters, CPUID announces them, and — by default — APERF/MPERF are missing) and builds the
//! resource list ([`pmc::reservation`]: `NULL` for exclusive ownership by default). The request
//! covers every processor of every group. If the HAL refuses (`STATUS_INSUFFICIENT_RESOURCES`:
//! a profiler or another driver owns the PMU) the fixed-counter source is unavailable and the
//! PEP serves what remains. Otherwise each active processor gets counters 1 and 2 enabled, on
//! that processor; the values found are kept until the PEP is registered, so that any failure
//! before then restores every processor and gives the PMU back. After registration the
//! reservation is kept for good: a PEP never unloads.
//!
//! Limitation: processors hot-added after boot do not get the counters enabled; their reads
//! then report no progress (as if idle).

use core::mem::{align_of, size_of};
use core::ptr::NonNull;

use crate::Config;
use crate::cpu::CpuFeatures;
use crate::driver::services::{KernelServices, LogLevel, PoolBlock};
use crate::pmc::{self, Reservation, SavedPmuControl};

/// The outcome of [`reserve_and_enable`]; held until the PEP's registration is decided.
pub enum PmuReservation<H> {
    /// No reservation was wanted.
    NotNeeded,
    /// The HAL refused the reservation.
    Refused,
    /// Enabling the counters failed; everything was restored and the PMU given back.
    ProgrammingFailed,
    /// Reserved and enabled; the values found on each processor, for [`Self::release`].
    Reserved {
        /// The HAL's handle for the reservation.
        handle: H,
        /// The saved control values, one per active processor (non-paged pool).
        saved: NonNull<SavedPmuControl>,
        /// How many processors were enabled (the entries of `saved`).
        processors: u32,
    },
}

/// Reserves the PMU and enables the fixed counters on every active processor, if the
/// configuration and CPUID call for it. `PASSIVE_LEVEL`, from `DriverEntry`.
pub fn reserve_and_enable<K: KernelServices>(
    kernel: &K,
    config: &Config,
) -> PmuReservation<K::CounterReservation> {
    let platform = kernel.platform();
    let cpu = kernel.run_on_current_processor(|| CpuFeatures::detect(&platform));
    let Some(counters) = pmc::counters_to_reserve(config, &cpu) else {
        return PmuReservation::NotNeeded;
    };
    let mut reservation = pmc::reservation(config.pmu_reservation, &counters);
    let list = match &mut reservation {
        Reservation::ExclusivePmu => None,
        Reservation::List(list) => Some(list),
    };
    let handle = match kernel.allocate_hardware_counters(list) {
        Ok(handle) => handle,
        Err(status) => {
            kernel.log(
                LogLevel::Info,
                format_args!(
                    "PMU reservation refused ({status:#010X}): another owner holds the \
                     performance counters; the fixed-counter source is unavailable"
                ),
            );
            return PmuReservation::Refused;
        }
    };
    let Some((saved, processors)) = enable_everywhere(kernel) else {
        free_reservation(kernel, handle);
        return PmuReservation::ProgrammingFailed;
    };
    kernel.set_fixed_counters_reserved(true);
    PmuReservation::Reserved { handle, saved, processors }
}

/// Enables the counters on every active processor, saving what each had; on any failure
/// restores the processors done so far and returns `None`. `PASSIVE_LEVEL`.
fn enable_everywhere<K: KernelServices>(kernel: &K) -> Option<(NonNull<SavedPmuControl>, u32)> {
    let active = kernel.active_processor_count();
    let count = usize::try_from(active).ok().filter(|&count| count > 0)?;
    let bytes = count.checked_mul(size_of::<SavedPmuControl>())?;
    let allocation = kernel.allocate_non_paged(PoolBlock::SavedPmuControl, bytes)?;
    if allocation.as_ptr().align_offset(align_of::<SavedPmuControl>()) != 0 {
        // SAFETY: `allocation` came from allocate_non_paged above and is not used again.
        unsafe { kernel.free_non_paged(PoolBlock::SavedPmuControl, allocation) };
        return None;
    }
    let saved = allocation.cast::<SavedPmuControl>();
    let platform = kernel.platform();
    for (index, offset) in (0..active).zip(0..count) {
        let enabled =
            kernel.run_on_processor(index, || pmc::enable_fixed_counters(&platform).ok()).flatten();
        let Some(found) = enabled else {
            kernel.log(
                LogLevel::Error,
                format_args!("enabling the fixed counters failed on processor {index}; restoring"),
            );
            restore(kernel, saved, index);
            // SAFETY: `allocation` came from allocate_non_paged above and is not used again.
            unsafe { kernel.free_non_paged(PoolBlock::SavedPmuControl, allocation) };
            return None;
        };
        // SAFETY: `offset < count`, so the entry is inside the allocation of `count` entries.
        let entry = unsafe { saved.as_ptr().add(offset) };
        // SAFETY: `entry` is in bounds and aligned for `SavedPmuControl` (checked above).
        unsafe { entry.write(found) };
    }
    kernel.log(
        LogLevel::Info,
        format_args!("PMU reserved; fixed counters 1 and 2 enabled on {active} processors"),
    );
    Some((saved, active))
}

/// Restores the first `processors` entries of `saved` on their processors. `PASSIVE_LEVEL`.
fn restore<K: KernelServices>(kernel: &K, saved: NonNull<SavedPmuControl>, processors: u32) {
    let platform = kernel.platform();
    for (index, offset) in (0..processors).zip(0usize..) {
        // SAFETY: `offset < processors`, within the allocation `enable_everywhere` made.
        let entry = unsafe { saved.as_ptr().add(offset) };
        // SAFETY: entries `0..processors` were written by `enable_everywhere`.
        let found = unsafe { entry.read() };
        let restored = kernel
            .run_on_processor(index, || pmc::restore_fixed_counters(&platform, found).is_ok());
        if restored != Some(true) {
            kernel.log(
                LogLevel::Error,
                format_args!("restoring the PMU control failed on processor {index}"),
            );
        }
    }
}

/// Gives the reservation back. `PASSIVE_LEVEL`.
fn free_reservation<K: KernelServices>(kernel: &K, handle: K::CounterReservation) {
    let status = kernel.free_hardware_counters(handle);
    if status < 0 {
        kernel
            .log(LogLevel::Error, format_args!("HalFreeHardwareCounters failed ({status:#010X})"));
    }
}

impl<H> PmuReservation<H> {
    /// The outcome's name for the log and the `Boot` key's `PmuReservation`.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::NotNeeded => "not-needed",
            Self::Refused => "refused",
            Self::ProgrammingFailed => "programming-failed",
            Self::Reserved { .. } => "reserved",
        }
    }

    /// The PEP is registered: keeps the reservation for good (a PEP never unloads), frees the
    /// saved values, and names the outcome. `PASSIVE_LEVEL`.
    pub fn keep<K: KernelServices<CounterReservation = H>>(self, kernel: &K) -> &'static str {
        let name = self.name();
        if let Self::Reserved { saved, .. } = self {
            // SAFETY: `saved` came from allocate_non_paged and nothing reads it afterwards.
            unsafe { kernel.free_non_paged(PoolBlock::SavedPmuControl, saved.cast()) };
        }
        name
    }

    /// The PEP did not register (the driver will fail to load): restores every processor and
    /// gives the PMU back. `PASSIVE_LEVEL`.
    pub fn release<K: KernelServices<CounterReservation = H>>(self, kernel: &K) {
        if let Self::Reserved { handle, saved, processors } = self {
            kernel.set_fixed_counters_reserved(false);
            restore(kernel, saved, processors);
            // SAFETY: `saved` came from allocate_non_paged and nothing reads it afterwards.
            unsafe { kernel.free_non_paged(PoolBlock::SavedPmuControl, saved.cast()) };
            free_reservation(kernel, handle);
        }
    }
}
