//! The PMU reservation for the fixed-counter source: the HAL's hardware-counter arbitration
//! (`HalAllocateHardwareCounters`, `ntddk.h`) and enabling the architectural fixed counters on
//! every active processor. `PASSIVE_LEVEL`, from `DriverEntry`, before the PEP is built.
//!
//! Rule: no PMU register is touched without a reservation. The engine decides whether one is
//! wanted ([`ppm_engine::pmc::counters_to_reserve`]: only where the configuration may use the
//! fixed counters, CPUID announces them, and — by default — APERF/MPERF are missing) and builds
//! the resource list ([`ppm_engine::pmc::reservation`]: `NULL` for exclusive ownership by
//! default). The request covers every processor of every group (`GroupAffinity` NULL). If the
//! HAL refuses (`STATUS_INSUFFICIENT_RESOURCES`: a profiler or another driver owns the PMU) the
//! fixed-counter source is unavailable and the PEP serves what remains. Otherwise each active
//! processor gets counters 1 and 2 enabled, on that processor; the values found are kept until
//! the PEP is registered, so that any failure before then restores every processor and gives
//! the PMU back. After registration the reservation is kept for good: a PEP never unloads.
//!
//! Limitation: processors hot-added after boot do not get the counters enabled; their reads
//! then report no progress (as if idle).

use core::mem::size_of;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, Ordering};

use ppm_engine::Config;
use ppm_engine::cpu::CpuFeatures;
use ppm_engine::pmc::{self, Reservation, SavedPmuControl};
use wdk_sys::ntddk::{
    ExAllocatePool2, ExFreePool, HalAllocateHardwareCounters, HalFreeHardwareCounters,
    KeQueryActiveProcessorCountEx,
};
use wdk_sys::{
    ALL_PROCESSOR_GROUPS, HANDLE, NT_SUCCESS, PHYSICAL_COUNTER_RESOURCE_LIST, POOL_FLAG_NON_PAGED,
    USHORT,
};

use crate::platform::KernelPlatform;
use crate::{affinity, log, storage};

/// Whether the PMU is reserved and the fixed counters are enabled on every active processor.
static RESERVED: AtomicBool = AtomicBool::new(false);

/// Whether the fixed-counter source may be used ([`KernelPlatform`]'s
/// `fixed_counters_reserved`). Any IRQL.
#[inline]
pub fn reserved() -> bool {
    RESERVED.load(Ordering::Acquire)
}

/// The outcome of [`reserve_and_enable`]; hold it until the PEP's registration is decided.
pub enum PmuReservation {
    /// No reservation was wanted.
    NotNeeded,
    /// The HAL refused the reservation.
    Refused,
    /// Enabling the counters failed; everything was restored and the PMU given back.
    ProgrammingFailed,
    /// Reserved and enabled; the values found on each processor, for [`Self::release`].
    Reserved {
        /// The HAL's handle for the reservation.
        handle: HANDLE,
        /// The saved control values, one per active processor (non-paged pool).
        saved: NonNull<SavedPmuControl>,
        /// How many processors were enabled (the entries of `saved`).
        processors: u32,
    },
}

/// Reserves the PMU and enables the fixed counters on every active processor, if the
/// configuration and CPUID call for it. `PASSIVE_LEVEL`, from `DriverEntry`.
pub fn reserve_and_enable(config: &Config) -> PmuReservation {
    let cpu = CpuFeatures::detect(&KernelPlatform);
    let Some(counters) = pmc::counters_to_reserve(config, &cpu) else {
        return PmuReservation::NotNeeded;
    };
    let mut reservation = pmc::reservation(config.pmu_reservation, &counters);
    let list: *mut PHYSICAL_COUNTER_RESOURCE_LIST = match &mut reservation {
        Reservation::ExclusivePmu => ptr::null_mut(),
        // The engine's PHYSICAL_COUNTER_RESOURCE_LIST has ntddk.h's layout (asserted at compile
        // time in ppm_engine::abi), so the pointer is cast, not converted.
        Reservation::List(list) => ptr::from_mut(list).cast(),
    };
    let mut handle: HANDLE = ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL; a NULL GroupAffinity with GroupCount 0 requests every processor of
    // every group; `list` is NULL (exclusive ownership) or a valid list of one descriptor that
    // outlives the call; `handle` is a valid HANDLE to write.
    let status = unsafe { HalAllocateHardwareCounters(ptr::null_mut(), 0, list, &raw mut handle) };
    if !NT_SUCCESS(status) || handle.is_null() {
        log::info(format_args!(
            "PMU reservation refused ({status:#010X}): another owner holds the performance \
             counters; the fixed-counter source is unavailable"
        ));
        return PmuReservation::Refused;
    }
    let Some(reserved) = enable_everywhere(handle) else {
        free_reservation(handle);
        return PmuReservation::ProgrammingFailed;
    };
    RESERVED.store(true, Ordering::Release);
    reserved
}

/// Enables the counters on every active processor, saving what each had; on any failure
/// restores the processors done so far and returns `None`. `PASSIVE_LEVEL`.
fn enable_everywhere(handle: HANDLE) -> Option<PmuReservation> {
    let all_groups = USHORT::try_from(ALL_PROCESSOR_GROUPS).ok()?;
    // SAFETY: callable at any IRQL; ALL_PROCESSOR_GROUPS counts every group.
    let active = unsafe { KeQueryActiveProcessorCountEx(all_groups) };
    let count = usize::try_from(active).ok().filter(|&count| count > 0)?;
    let bytes = count.checked_mul(size_of::<SavedPmuControl>())?;
    let bytes = u64::try_from(bytes).ok()?;
    // SAFETY: PASSIVE_LEVEL; a non-paged allocation of `bytes` with the driver's tag.
    let allocation = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, bytes, storage::POOL_TAG) };
    let saved = NonNull::new(allocation.cast::<SavedPmuControl>())?;
    for index in 0..active {
        let enabled = affinity::number_of(index).and_then(|number| {
            affinity::run_on(number, || pmc::enable_fixed_counters(&KernelPlatform).ok())
        });
        let Some(found) = enabled else {
            log::error(format_args!(
                "enabling the fixed counters failed on processor {index}; restoring"
            ));
            restore(saved, index);
            // SAFETY: `allocation` came from ExAllocatePool2 above and is not used afterwards.
            unsafe { ExFreePool(allocation) };
            return None;
        };
        let slot = saved.as_ptr().wrapping_add(usize::try_from(index).ok()?);
        // SAFETY: `index < active`, so `slot` is inside the allocation of `active` entries;
        // ExAllocatePool2 returns memory aligned for any scalar type.
        unsafe { slot.write(found) };
    }
    log::info(format_args!("PMU reserved; fixed counters 1 and 2 enabled on {active} processors"));
    Some(PmuReservation::Reserved { handle, saved, processors: active })
}

/// Restores the first `processors` entries of `saved` on their processors. `PASSIVE_LEVEL`.
fn restore(saved: NonNull<SavedPmuControl>, processors: u32) {
    for index in 0..processors {
        let Ok(offset) = usize::try_from(index) else { return };
        // SAFETY: entries `0..processors` were written by `enable_everywhere`.
        let found = unsafe { saved.as_ptr().wrapping_add(offset).read() };
        if let Some(number) = affinity::number_of(index) {
            let restored =
                affinity::run_on(number, || pmc::restore_fixed_counters(&KernelPlatform, found));
            if restored.is_err() {
                log::error(format_args!("restoring the PMU control failed on processor {index}"));
            }
        }
    }
}

/// Gives the reservation back. `PASSIVE_LEVEL`.
fn free_reservation(handle: HANDLE) {
    // SAFETY: PASSIVE_LEVEL; `handle` came from a successful HalAllocateHardwareCounters and is
    // freed once.
    let status = unsafe { HalFreeHardwareCounters(handle) };
    if !NT_SUCCESS(status) {
        log::error(format_args!("HalFreeHardwareCounters failed ({status:#010X})"));
    }
}

impl PmuReservation {
    /// The PEP is registered: keeps the reservation for good (a PEP never unloads), frees the
    /// saved values, and names the outcome for the log and the `State` key. `PASSIVE_LEVEL`.
    pub fn keep(self) -> &'static str {
        match self {
            Self::NotNeeded => "not-needed",
            Self::Refused => "refused",
            Self::ProgrammingFailed => "programming-failed",
            Self::Reserved { saved, .. } => {
                // SAFETY: `saved` came from ExAllocatePool2 and nothing reads it afterwards.
                unsafe { ExFreePool(saved.as_ptr().cast()) };
                "reserved"
            }
        }
    }

    /// The PEP did not register (the driver will fail to load): restores every processor and
    /// gives the PMU back. `PASSIVE_LEVEL`.
    pub fn release(self) {
        if let Self::Reserved { handle, saved, processors } = self {
            RESERVED.store(false, Ordering::Release);
            restore(saved, processors);
            // SAFETY: `saved` came from ExAllocatePool2 and nothing reads it afterwards.
            unsafe { ExFreePool(saved.as_ptr().cast()) };
            free_reservation(handle);
        }
    }
}
