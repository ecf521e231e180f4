//! Device power management notifications (`AcceptDeviceNotification`): how processors arrive.
//!
//! PoFx offers every device to the PEP (`PEP_DPM_PREPARE_DEVICE`); the PEP accepts those whose
//! device id matches a processor pattern (see [`crate::device_id`]) while the processor table
//! has a free slot, and declines all others. `PEP_DPM_REGISTER_DEVICE` hands out the PEP's own
//! handle, `PEP_DPM_DEVICE_STARTED`, `PEP_DPM_UNREGISTER_DEVICE` and `PEP_DPM_ABANDON_DEVICE`
//! move the slot through its lifecycle. The notifications the documentation says a PEP must
//! handle, or whose decline it documents through output fields, are answered that way:
//! `PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE` (completed at once: the PEP manages no clock or power
//! resource of a processor), `PEP_DPM_DEVICE_POWER_STATE` (acknowledged, nothing written),
//! `PEP_DPM_POWER_CONTROL_REQUEST` (`Status` = `STATUS_NOT_IMPLEMENTED`: the PEP owns the
//! processor but defines no control code) and `PEP_DPM_WORK` (`NeedWork` FALSE: it never
//! requests work). Every other notification returns FALSE. [`crate::notification`] is the
//! table of every id (`docs/notifications.md` adds the documentation each answer follows).
//!
//! IRQL: `PASSIVE_LEVEL` (prepare, register, unregister, abandon), `<= DISPATCH_LEVEL` (device
//! started, device power state), `<= HIGH_LEVEL` (register crashdump device, refused). Nothing
//! allocates or waits; every transition is a compare-exchange, so concurrent
//! notifications for different devices are safe, and so are a repeated or stale UNREGISTER and
//! concurrent PREPAREs of one id (model-checked with loom, `engine/tests/loom.rs`).
//!
//! Contract relied on: PoFx does not overlap the notifications of one device with that
//! device's own UNREGISTER — no `FEEDBACK_READ` of a processor runs across its removal (a removed
//! processor runs nothing), and no re-PREPARE of a device races its own UNREGISTER. Under such
//! an overlap a stale read could store counts into the slot's next registration, or a
//! re-PREPARE could be accepted and its REGISTER declined; the loom model pins both cases.

use core::sync::atomic::Ordering;

use crate::abi::{
    FALSE, PCUNICODE_STRING, PEP_ABANDON_DEVICE, PEP_DEVICE_POWER_STATE, PEP_DEVICE_STARTED,
    PEP_NOTIFY_COMPONENT_IDLE_STATE, PEP_POWER_CONTROL_REQUEST, PEP_PREPARE_DEVICE,
    PEP_REGISTER_DEVICE_V2, PEP_UNREGISTER_DEVICE, PEP_WORK, PEPHANDLE, PepDeviceAccepted,
    PepDeviceNotAccepted, STATUS_NOT_IMPLEMENTED, TRUE,
};
use crate::notification::handled;
use crate::payload::{Data, Dpm};
use crate::pep::Pep;
use crate::platform::Platform;
use crate::processor::{ProcessorSlot, encode_handle, generation_of, lifecycle, state, state_of};

/// What the host is told of each `PEP_DPM_PREPARE_DEVICE` decision: the device id as PoFx passed
/// it (UTF-16 units) and whether the PEP accepted it. Called at `PASSIVE_LEVEL`, after the
/// decision is recorded and before the notification returns.
pub(crate) type PreparedDevice = fn(&[u16], bool);

/// Routes one device notification: a `match` with one arm per handled DPM row of the
/// notification table ([`crate::notification`]); every other id returns FALSE. Returns whether
/// it was handled. `prepared` hears of every `PREPARE_DEVICE` decision.
pub(crate) fn dispatch<P: Platform>(
    pep: &Pep<P>,
    data: Data<'_, Dpm>,
    prepared: PreparedDevice,
) -> bool {
    crate::notification::table!(handled dpm data.id(), (pep, data, prepared))
}

/// `PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE`: IRQL <= `DISPATCH_LEVEL`. "The PEP must handle this
/// notification" (`dpm-notifications.md`): `Completed` = TRUE, for any device handle — the PEP
/// manages no clock or power resource, so its preparations for any F-state of any component
/// are complete. Only a NULL or misaligned structure is refused (nothing can be written).
fn component_idle_state<P: Platform>(_: &Pep<P>, data: Data<'_, Dpm>, _: PreparedDevice) -> bool {
    let Some(data) = data.get::<PEP_NOTIFY_COMPONENT_IDLE_STATE>() else { return false };
    data.Completed = TRUE;
    true
}

/// `PEP_DPM_DEVICE_POWER_STATE`: IRQL <= `DISPATCH_LEVEL` (see
/// [`crate::abi::PEP_DPM_DEVICE_POWER_STATE`]). Informational: "The PEP does not write to this
/// structure" (`PEP_DEVICE_POWER_STATE`). Acknowledged for a live processor handle, nothing
/// written; refused for any other handle.
fn device_power_state<P: Platform>(pep: &Pep<P>, data: Data<'_, Dpm>, _: PreparedDevice) -> bool {
    let Some(data) = data.get::<PEP_DEVICE_POWER_STATE>() else { return false };
    pep.slot_for_handle(data.DeviceHandle).is_some()
}

/// `PEP_DPM_POWER_CONTROL_REQUEST`: IRQL <= `DISPATCH_LEVEL`. The PEP owns the processor but
/// defines no power control code, so for a live processor handle the request fails with the
/// status `PoFxPowerControl` documents for that: `STATUS_NOT_IMPLEMENTED`, "The requested power
/// control operation is not implemented" (`STATUS_NOT_SUPPORTED` would say "The power engine
/// plug-in (PEP) does not acknowledge support for this device", untrue of a device it
/// registered); `BytesReturned` = 0, nothing written to the driver's buffers. Refused
/// (untouched) for any other handle.
fn power_control_request<P: Platform>(
    pep: &Pep<P>,
    data: Data<'_, Dpm>,
    _: PreparedDevice,
) -> bool {
    let Some(data) = data.get::<PEP_POWER_CONTROL_REQUEST>() else { return false };
    if pep.slot_for_handle(data.DeviceHandle).is_none() {
        return false;
    }
    data.BytesReturned = 0;
    data.Status = STATUS_NOT_IMPLEMENTED;
    true
}

/// `PEP_DPM_WORK`: `PASSIVE_LEVEL`. PoFx sends it after the PEP calls `RequestWorker`, which
/// this PEP never does; should it arrive, the PEP has no work: `NeedWork` = FALSE, and nothing
/// else. `WorkInformation` is left as PoFx passed it: Microsoft's PEPs treat it as the OS's
/// buffer (the i.MX PEP of ms-iot/imx-iotcore fills `PepWork->WorkInformation->…` in place and
/// never assigns the pointer), so writing NULL over it could lose the OS's buffer.
fn work<P: Platform>(_: &Pep<P>, data: Data<'_, Dpm>, _: PreparedDevice) -> bool {
    let Some(data) = data.get::<PEP_WORK>() else { return false };
    data.NeedWork = FALSE;
    true
}

/// The UTF-16 units of a device id, or `None` when the string is malformed (NULL, misaligned,
/// or a NULL buffer with a non-zero length). `Length` is in bytes; an odd last byte is ignored.
///
/// # Safety
/// `id` is NULL or points to a `UNICODE_STRING` whose `Buffer` holds `Length` bytes, valid
/// for `'a`.
unsafe fn device_id<'a>(id: PCUNICODE_STRING) -> Option<&'a [u16]> {
    if id.is_null() || !id.is_aligned() {
        return None;
    }
    // SAFETY: `id` is non-NULL, aligned and, per the caller, a valid UNICODE_STRING.
    let string = unsafe { id.read() };
    let units = usize::from(string.Length / 2);
    if units == 0 {
        return Some(&[]);
    }
    if string.Buffer.is_null() || !string.Buffer.is_aligned() {
        return None;
    }
    // SAFETY: per the caller `Buffer` holds `Length` bytes (>= `units` u16s), non-NULL and
    // aligned (checked), valid and unmodified for `'a`.
    Some(unsafe { core::slice::from_raw_parts(string.Buffer.cast_const(), units) })
}

/// FNV-1a over the ASCII-case-folded units: identifies a device id across notifications.
fn hash_device_id(id: &[u16]) -> u64 {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    for &unit in id {
        let folded = if (0x61..=0x7A).contains(&unit) { unit.wrapping_sub(0x20) } else { unit };
        for byte in folded.to_le_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
    hash
}

/// `PEP_DPM_PREPARE_DEVICE`: accepts a processor while a slot is free; declines anything else.
fn prepare_device<P: Platform>(
    pep: &Pep<P>,
    data: Data<'_, Dpm>,
    prepared: PreparedDevice,
) -> bool {
    let Some(data) = data.get::<PEP_PREPARE_DEVICE>() else { return false };
    // SAFETY: PoFx passes a valid device-id string (or NULL, refused) for the call's duration.
    let Some(id) = (unsafe { device_id(data.DeviceId) }) else { return false };
    let accepted = pep.patterns.matches(id) && claim_slot(pep, claim_key(id));
    pep.device_log.record(id, accepted);
    prepared(id, accepted);
    data.DeviceAccepted = if accepted { TRUE } else { FALSE };
    true
}

/// Claims a slot for the device whose claim key is `key`, or finds the one it already holds.
///
/// A device that already holds a slot (prepared or registered) keeps it. Otherwise the key is
/// the claim: a slot is taken by compare-exchanging its `device_id_hash` from 0 (free) to
/// `key`, in table order. Two concurrent PREPAREs of the same id walk the same order, so the
/// loser meets the winner's key and accepts without taking a second slot. Only the key's
/// holder moves a FREE slot to PREPARED. Slots fill in the order devices are offered.
fn claim_slot<P: Platform>(pep: &Pep<P>, key: u64) -> bool {
    if pep.slots.iter().any(|slot| slot.device_id_hash.load(Ordering::Acquire) == key) {
        return true;
    }
    for slot in pep.slots {
        match slot.device_id_hash.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                let current = slot.lifecycle.load(Ordering::Acquire);
                let prepared = lifecycle(generation_of(current), state::PREPARED);
                slot.lifecycle.store(prepared, Ordering::Release);
                return true;
            }
            Err(existing) if existing == key => return true,
            Err(_) => {}
        }
    }
    false
}

/// The claim key of a device id: its hash, never 0 (0 marks a free slot).
fn claim_key(id: &[u16]) -> u64 {
    hash_device_id(id).max(1)
}

/// `PEP_DPM_REGISTER_DEVICE`: registers a prepared processor and returns its handle; declines
/// (`PepDeviceNotAccepted`, NULL handle) a device that was not prepared.
fn register_device<P: Platform>(pep: &Pep<P>, data: Data<'_, Dpm>, _: PreparedDevice) -> bool {
    let Some(data) = data.get::<PEP_REGISTER_DEVICE_V2>() else { return false };
    // SAFETY: PoFx passes a valid device-id string (or NULL, refused) for the call's duration.
    let Some(id) = (unsafe { device_id(data.DeviceId) }) else { return false };
    let key = claim_key(id);
    let mut handle: PEPHANDLE = core::ptr::null_mut();
    for (index, slot) in pep.slots.iter().enumerate() {
        let current = slot.lifecycle.load(Ordering::Acquire);
        if state_of(current) != state::PREPARED
            || slot.device_id_hash.load(Ordering::Acquire) != key
        {
            continue;
        }
        let generation = generation_of(current).wrapping_add(1);
        let busy = lifecycle(generation_of(current), state::REGISTERING);
        // Take the slot out of PREPARED first so that no concurrent REGISTER claims it too.
        if slot
            .lifecycle
            .compare_exchange(current, busy, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        slot.kernel_handle.store(data.KernelHandle.addr(), Ordering::Relaxed);
        slot.reset_counters();
        slot.lifecycle.store(lifecycle(generation, state::REGISTERED), Ordering::Release);
        handle = encode_handle(index, generation);
        slot.live_handle.store(handle.addr(), Ordering::Release);
        break;
    }
    let accepted = !handle.is_null();
    data.DeviceHandle = handle;
    data.DeviceAccepted = if accepted { PepDeviceAccepted } else { PepDeviceNotAccepted };
    true
}

/// `PEP_DPM_DEVICE_STARTED`: `<= DISPATCH_LEVEL`.
fn device_started<P: Platform>(pep: &Pep<P>, data: Data<'_, Dpm>, _: PreparedDevice) -> bool {
    let Some(data) = data.get::<PEP_DEVICE_STARTED>() else { return false };
    let handle = data.DeviceHandle;
    let Some((_, slot)) = pep.slot_for_handle(handle) else { return false };
    let current = slot.lifecycle.load(Ordering::Acquire);
    if state_of(current) == state::REGISTERED {
        let started = lifecycle(generation_of(current), state::STARTED);
        // A failed exchange means a concurrent unregister: the handle is gone either way.
        return slot
            .lifecycle
            .compare_exchange(current, started, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
    }
    true
}

/// `PEP_DPM_UNREGISTER_DEVICE`: frees the slot; the handle becomes stale.
fn unregister_device<P: Platform>(pep: &Pep<P>, data: Data<'_, Dpm>, _: PreparedDevice) -> bool {
    let Some(data) = data.get::<PEP_UNREGISTER_DEVICE>() else { return false };
    let handle = data.DeviceHandle;
    let Some((_, slot)) = pep.slot_for_handle(handle) else { return false };
    release_registration(slot, handle.addr())
}

/// Frees the registration `handle` names: only the notification that takes `handle` out of
/// the slot's `live_handle` (compare-exchange from exactly that value) frees it, so a stale or
/// repeated UNREGISTER frees nothing and never a newer registration of the slot.
fn release_registration(slot: &ProcessorSlot, handle: usize) -> bool {
    if slot.live_handle.compare_exchange(handle, 0, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return false;
    }
    free(slot);
    true
}

/// Frees a slot whose release this thread owns: bumps the generation (every handle to it goes
/// stale), then gives the claim key back so that a PREPARE may take the slot.
fn free(slot: &ProcessorSlot) {
    let current = slot.lifecycle.load(Ordering::Acquire);
    let freed = lifecycle(generation_of(current).wrapping_add(1), state::FREE);
    slot.lifecycle.store(freed, Ordering::Release);
    slot.device_id_hash.store(0, Ordering::Release);
}

/// Releases the slot `key`'s device holds: its registration, or its preparation.
fn release_device(slot: &ProcessorSlot, key: u64) -> bool {
    if slot.device_id_hash.load(Ordering::Acquire) != key {
        return false;
    }
    let live = slot.live_handle.load(Ordering::Acquire);
    if live != 0 {
        return release_registration(slot, live);
    }
    let current = slot.lifecycle.load(Ordering::Acquire);
    if state_of(current) != state::PREPARED {
        return false;
    }
    // Racing a REGISTER of the same slot (PREPARED -> REGISTERING): exactly one wins.
    let freed = lifecycle(generation_of(current).wrapping_add(1), state::FREE);
    if slot.lifecycle.compare_exchange(current, freed, Ordering::AcqRel, Ordering::Relaxed).is_err()
    {
        return false;
    }
    slot.device_id_hash.store(0, Ordering::Release);
    true
}

/// `PEP_DPM_ABANDON_DEVICE`: releases the device if it was ours (`DeviceAccepted` TRUE), or
/// says it was not (FALSE).
fn abandon_device<P: Platform>(pep: &Pep<P>, data: Data<'_, Dpm>, _: PreparedDevice) -> bool {
    let Some(data) = data.get::<PEP_ABANDON_DEVICE>() else { return false };
    // SAFETY: PoFx passes a valid device-id string (or NULL, refused) for the call's duration.
    let Some(id) = (unsafe { device_id(data.DeviceId) }) else { return false };
    let key = claim_key(id);
    let owned = pep.slots.iter().any(|slot| release_device(slot, key));
    data.DeviceAccepted = if owned { TRUE } else { FALSE };
    true
}
