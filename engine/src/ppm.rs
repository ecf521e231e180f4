//! Processor power management notifications (`AcceptProcessorNotification`).
//!
//! Handles the PPM rows of the notification table ([`crate::notification`]) that name a handler
//! here: the processor-initialisation queries, `FEEDBACK_READ`, the system-state notifications,
//! and the boot queries whose documented "nothing to report" is an answer (0 platform idle
//! states, 0 veto reasons, no boot veto). Every other notification returns FALSE
//! (`docs/notifications.md` has the documentation each answer follows, and why). The PEP
//! reports no idle state of its own
//! (`IdleStateCount = 0`, so no idle-state or coordinated-state query follows; who then idles a
//! processor it owns is not documented: `docs/architecture.md`, "Idle states") and leaves perf
//! control with ACPI (`PerformanceStatesSupported = FALSE`).
//!
//! IRQL: `PASSIVE_LEVEL` up to `HIGH_LEVEL`, interrupts possibly disabled. Nothing here
//! allocates, blocks, logs or panics; every pointer is checked for NULL and alignment and every
//! handle against the table before anything is read or written.
//!
//! Domain model: one perf domain per processor device. `DomainId` is the device's slot index in
//! the processor table, `DomainMembers` is 1 and the coordination type is `SW_ALL` (trivially
//! satisfied by one member): per-logical-processor HWP/CPPC requests are independent, and a PEP
//! that does not control perf states has nothing to coordinate.

use core::sync::atomic::Ordering;

use crate::abi::{
    FALSE, PEP_PPM_ENTER_SYSTEM_STATE, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1, PEP_PPM_PERF_CHECK_COMPLETE,
    PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_PPM_QUERY_PERF_CAPABILITIES, PEP_PPM_QUERY_PLATFORM_STATES, PEP_PPM_QUERY_VETO_REASONS,
    PEP_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PROCESSOR_FEEDBACK_COUNTER, PEPHANDLE,
    PROCESSOR_DOMAIN_COORDIANTION_SW_ALL, PowerSystemShutdown, PowerSystemWorking,
    SYSTEM_POWER_STATE,
};
use crate::counters::{CounterSource, read_and_accumulate};
use crate::notification::handled;
use crate::payload::{Data, Payload, Ppm};
use crate::pep::Pep;
use crate::platform::Platform;
use crate::pmc;
use crate::processor::{ProcessorSlot, UNBOUND};

/// Routes one processor notification. Returns whether it was handled.
///
/// The hot notification, `FEEDBACK_READ` (the `{hot …}` row of the notification table), is
/// tested first and handled inline; every other one goes through an out-of-line match, so the
/// read path needs no jump table and no registers saved for the rest.
#[inline]
pub(crate) fn dispatch<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    /// The table's hot row, as one test of the id.
    macro_rules! hot {
        (() dpm: [$($dpm:tt),* $(,)?] ppm: [$($ppm:tt),* $(,)?]) => { $(hot!(@ $ppm);)* };
        (@ ($id:ident, $payload:tt, {hot $handler:ident}, $($row:tt)*)) => {
            if data.id() == crate::abi::$id {
                return $handler(pep, handle, data);
            }
        };
        (@ $row:tt) => {};
    }
    crate::notification::table!(hot);
    dispatch_other(pep, handle, data)
}

/// Every processor notification but the hot one: a `match` with one arm per handled row of
/// the notification table; every other id returns FALSE.
#[inline(never)]
fn dispatch_other<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    crate::notification::table!(handled ppm data.id(), (pep, handle, data))
}

/// `PEP_NOTIFY_PPM_FEEDBACK_READ`: up to `DISPATCH_LEVEL` (or with interrupts disabled), on the
/// processor the handle is bound to. The first read of a handle binds it to the processor it
/// runs on; a read on any other processor, an index beyond `FeedbackCounterCount` or a faulting
/// counter read is refused.
#[inline]
fn feedback_read<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    let Some(data) = data.get::<PEP_PPM_FEEDBACK_READ>() else { return false };
    let Some((_, slot)) = pep.slot_for_handle(handle) else { return false };
    let index = data.CounterIndex;
    if index >= pep.feedback.count {
        return false;
    }
    let current = pep.platform().current_processor_index();
    let bound = slot.bound_processor.load(Ordering::Relaxed);
    if bound != current && !bind(slot, bound, current) {
        return false;
    }
    let Ok(counts) = read_and_accumulate(pep.platform(), &pep.feedback, slot) else { return false };
    // The relative view of the union: NominalCount, ActualCount.
    data.__bindgen_anon_1.__bindgen_anon_1 = PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
        NominalCount: counts.nominal,
        ActualCount: counts.actual,
    };
    true
}

/// Binds an unbound handle to `current`; false when it is bound elsewhere (or another
/// processor won the race to bind it).
#[cold]
#[inline(never)]
fn bind(slot: &ProcessorSlot, bound: u32, current: u32) -> bool {
    bound == UNBOUND
        && slot
            .bound_processor
            .compare_exchange(UNBOUND, current, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// `PEP_NOTIFY_PPM_QUERY_CAPABILITIES`: `PASSIVE_LEVEL`, once per processor. Answered for a
/// live handle and for NULL ("the notification does not target a specific processor"): the
/// capabilities are the same for every processor.
fn query_capabilities<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    let Some(data) = data.get::<PEP_PPM_QUERY_CAPABILITIES>() else { return false };
    if !handle_acceptable(pep, handle) {
        return false;
    }
    let answer = PEP_PPM_QUERY_CAPABILITIES {
        FeedbackCounterCount: pep.feedback.count,
        IdleStateCount: 0,
        PerformanceStatesSupported: FALSE,
        ParkingSupported: FALSE,
        DiscretePerformanceStateCount: 0,
        Reserved: 0,
    };
    *data = answer;
    true
}

/// `PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS`: `PASSIVE_LEVEL`, processor init. `Count` must equal
/// `FeedbackCounterCount` (PoFx documents the buffer as holding `Count` descriptors).
fn query_feedback_counters<P: Platform>(
    pep: &Pep<P>,
    handle: PEPHANDLE,
    data: Data<'_, Ppm>,
) -> bool {
    // A pointer, not a reference: the descriptors run past the structure's one-element array.
    let Some(data) = data.pointer::<PEP_PPM_QUERY_FEEDBACK_COUNTERS>() else { return false };
    if pep.slot_for_handle(handle).is_none() {
        return false;
    }
    // SAFETY: `data` is non-NULL, aligned and a PEP_PPM_QUERY_FEEDBACK_COUNTERS (`Data`).
    let count = unsafe { (*data.as_ptr()).Count };
    if count == 0 || count != pep.feedback.count {
        return false;
    }
    // SAFETY: as above; taking the address of a field reads nothing.
    let counters = unsafe { &raw mut (*data.as_ptr()).Counters };
    let first = counters.cast::<PEP_PROCESSOR_FEEDBACK_COUNTER>();
    let described = usize::try_from(count).unwrap_or(0);
    for (offset, descriptor) in pep.feedback.descriptors.iter().take(described).enumerate() {
        // SAFETY: the buffer holds `Count` descriptors (PoFx) and `offset < Count`; the
        // descriptor array starts at an aligned offset of an aligned structure.
        unsafe { first.wrapping_add(offset).write(*descriptor) };
    }
    true
}

/// `PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`: `PASSIVE_LEVEL`, processor init.
fn query_perf_capabilities<P: Platform>(
    pep: &Pep<P>,
    handle: PEPHANDLE,
    data: Data<'_, Ppm>,
) -> bool {
    let Some(data) = data.get::<PEP_PPM_QUERY_PERF_CAPABILITIES>() else { return false };
    let Some((index, _)) = pep.slot_for_handle(handle) else { return false };
    let Ok(domain) = u32::try_from(index) else { return false };
    let answer = PEP_PPM_QUERY_PERF_CAPABILITIES {
        HighestPerformance: pep.perf.highest,
        NominalPerformance: pep.perf.nominal,
        LowestNonlinearPerformance: pep.perf.lowest_nonlinear,
        LowestPerformance: pep.perf.lowest,
        DomainId: domain,
        DomainMembers: 1,
    };
    *data = answer;
    true
}

/// The payloads that are one count the PEP answers with 0 (nothing to report).
trait ZeroCount: Payload<Ppm> {
    /// The answer: the structure with its count 0.
    const ZERO: Self;
}

impl ZeroCount for PEP_PPM_QUERY_PLATFORM_STATES {
    const ZERO: Self = Self { PlatformStateCount: 0 };
}

impl ZeroCount for PEP_PPM_QUERY_VETO_REASONS {
    const ZERO: Self = Self { VetoReasonCount: 0 };
}

/// `QUERY_PLATFORM_STATES` / `QUERY_VETO_REASONS`: `PASSIVE_LEVEL`, once at boot. This PEP has
/// no platform idle state (`IdleStateCount` is 0) and vetoes nothing: the count is 0, the
/// documented way to say so.
fn zero_count<P: Platform, T: ZeroCount>(
    pep: &Pep<P>,
    handle: PEPHANDLE,
    data: Data<'_, Ppm>,
) -> bool {
    let Some(data) = data.get::<T>() else { return false };
    if !handle_acceptable(pep, handle) {
        return false;
    }
    *data = T::ZERO;
    true
}

/// `PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES`: see [`zero_count`].
fn query_platform_states<P: Platform>(
    pep: &Pep<P>,
    handle: PEPHANDLE,
    data: Data<'_, Ppm>,
) -> bool {
    zero_count::<P, PEP_PPM_QUERY_PLATFORM_STATES>(pep, handle, data)
}

/// `PEP_NOTIFY_PPM_QUERY_VETO_REASONS`: see [`zero_count`].
fn query_veto_reasons<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    zero_count::<P, PEP_PPM_QUERY_VETO_REASONS>(pep, handle, data)
}

/// `PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES`: `PASSIVE_LEVEL`, once after processor
/// initialisation. No payload: nothing is read or written; the PEP has no boot veto.
fn enumerate_boot_vetoes<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, _: Data<'_, Ppm>) -> bool {
    handle_acceptable(pep, handle)
}

/// A NULL handle, or a live one.
fn handle_acceptable<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE) -> bool {
    handle.is_null() || pep.slot_for_handle(handle).is_some()
}

/// `PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO`: `PASSIVE_LEVEL`. Known domains are the slot indexes of
/// live processor devices.
fn query_domain_info<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    let Some(data) = data.get::<PEP_PPM_QUERY_DOMAIN_INFO>() else { return false };
    if !handle_acceptable(pep, handle) {
        return false;
    }
    let domain = data.DomainId;
    let live = usize::try_from(domain)
        .ok()
        .and_then(|index| pep.slots.get(index))
        .is_some_and(ProcessorSlot::is_live);
    if !live {
        return false;
    }
    let answer = PEP_PPM_QUERY_DOMAIN_INFO {
        DomainId: domain,
        CoordinationType: PROCESSOR_DOMAIN_COORDIANTION_SW_ALL,
        IdleProcessorsDiscounted: FALSE,
        SchedulerDirectedTransitionsSupported: FALSE,
        AffinitizePerfSet: FALSE,
        WorstCaseTransitionLatency: pep.transition_latency_100ns,
        WorstCaseTransitionOverhead: 0,
    };
    *data = answer;
    true
}

/// The structures of `ENTER_SYSTEM_STATE` and `RESUME_FROM_SYSTEM_STATE`.
trait SystemStateData: Payload<Ppm> {
    /// `TargetState`.
    fn target_state(&self) -> SYSTEM_POWER_STATE;
}

impl SystemStateData for PEP_PPM_ENTER_SYSTEM_STATE {
    fn target_state(&self) -> SYSTEM_POWER_STATE {
        self.TargetState
    }
}

impl SystemStateData for PEP_PPM_RESUME_FROM_SYSTEM_STATE {
    fn target_state(&self) -> SYSTEM_POWER_STATE {
        self.TargetState
    }
}

/// `PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE` / `RESUME_FROM_SYSTEM_STATE`: `DISPATCH_LEVEL`, on every
/// processor at once, each on its target processor. Nothing is queued. On resume the handle's
/// next read re-baselines (the counters restarted while the processor was off); with a NULL
/// handle, every handle's does. With the fixed-counter source, resume also enables fixed
/// counters 1 and 2 again on the processor it runs on: the sleep reset its PMU control, and the
/// reservation that makes the PMU the driver's is held for good.
fn system_state<P: Platform, T: SystemStateData>(
    pep: &Pep<P>,
    handle: PEPHANDLE,
    data: Data<'_, Ppm>,
    resume: bool,
) -> bool {
    let Some(data) = data.get::<T>() else { return false };
    if !handle_acceptable(pep, handle) {
        return false;
    }
    let target = data.target_state();
    if !(PowerSystemWorking..=PowerSystemShutdown).contains(&target) {
        return false;
    }
    if resume {
        match pep.slot_for_handle(handle) {
            Some((_, slot)) => slot.request_rebaseline(),
            None => pep.slots.iter().for_each(ProcessorSlot::request_rebaseline),
        }
        if matches!(pep.counter_source(), CounterSource::FixedPmc { .. })
            && pep.platform().fixed_counters_reserved()
        {
            // A fault leaves the counters stopped: the reads then report no progress, which
            // the re-baselining tolerates; nothing else can be done at DISPATCH_LEVEL.
            let _ = pmc::enable_fixed_counters(pep.platform());
        }
    }
    true
}

/// `PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE`: see [`system_state`].
fn enter_system_state<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    system_state::<P, PEP_PPM_ENTER_SYSTEM_STATE>(pep, handle, data, false)
}

/// `PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE`: see [`system_state`].
fn resume_from_system_state<P: Platform>(
    pep: &Pep<P>,
    handle: PEPHANDLE,
    data: Data<'_, Ppm>,
) -> bool {
    system_state::<P, PEP_PPM_RESUME_FROM_SYSTEM_STATE>(pep, handle, data, true)
}

/// `PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE`: `DISPATCH_LEVEL`, any processor. Acknowledged; this PEP
/// has no perf-check work.
fn perf_check_complete<P: Platform>(pep: &Pep<P>, handle: PEPHANDLE, data: Data<'_, Ppm>) -> bool {
    data.pointer::<PEP_PPM_PERF_CHECK_COMPLETE>().is_some() && handle_acceptable(pep, handle)
}
