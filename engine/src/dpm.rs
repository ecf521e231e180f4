//! Device power management notifications (`AcceptDeviceNotification`): how processors arrive.
//!
//! PoFx offers every device to the PEP (`PEP_DPM_PREPARE_DEVICE`); the PEP accepts those whose
//! device id matches a processor pattern (see [`crate::device_id`]) while the processor table
//! has a free slot, and declines all others. `PEP_DPM_REGISTER_DEVICE` hands out the PEP's own
//! handle, `PEP_DPM_DEVICE_STARTED`, `PEP_DPM_UNREGISTER_DEVICE` and `PEP_DPM_ABANDON_DEVICE`
//! move the slot through its lifecycle. Every other notification returns FALSE.
//!
//! IRQL: `PASSIVE_LEVEL` (prepare, register, unregister, abandon), `<= DISPATCH_LEVEL` (device
//! started). Slots are claimed with compare-exchange, so concurrent notifications for different
//! devices are safe; nothing allocates or waits.

use core::ffi::c_void;
use core::sync::atomic::Ordering;

use crate::abi::{
    FALSE, PCUNICODE_STRING, PEP_ABANDON_DEVICE, PEP_DEVICE_STARTED, PEP_DPM_ABANDON_DEVICE,
    PEP_DPM_DEVICE_STARTED, PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE,
    PEP_DPM_UNREGISTER_DEVICE, PEP_PREPARE_DEVICE, PEP_REGISTER_DEVICE_V2, PEP_UNREGISTER_DEVICE,
    PEPHANDLE, PepDeviceAccepted, PepDeviceNotAccepted, TRUE,
};
use crate::pep::Pep;
use crate::platform::Platform;
use crate::ppm::typed;
use crate::processor::{encode_handle, generation_of, lifecycle, state, state_of};

/// Routes one device notification. Returns whether it was handled.
///
/// # Safety
/// `data` is NULL or points to the structure PoFx documents for `notification`.
pub(crate) unsafe fn dispatch<P: Platform>(
    pep: &Pep<P>,
    notification: u32,
    data: *mut c_void,
) -> bool {
    match notification {
        // SAFETY: the caller's contract for `data` is passed on unchanged.
        PEP_DPM_PREPARE_DEVICE => unsafe { prepare_device(pep, data) },
        // SAFETY: the caller's contract for `data` is passed on unchanged.
        PEP_DPM_REGISTER_DEVICE => unsafe { register_device(pep, data) },
        // SAFETY: the caller's contract for `data` is passed on unchanged.
        PEP_DPM_DEVICE_STARTED => unsafe { device_started(pep, data) },
        // SAFETY: the caller's contract for `data` is passed on unchanged.
        PEP_DPM_UNREGISTER_DEVICE => unsafe { unregister_device(pep, data) },
        // SAFETY: the caller's contract for `data` is passed on unchanged.
        PEP_DPM_ABANDON_DEVICE => unsafe { abandon_device(pep, data) },
        _ => false,
    }
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
///
/// # Safety
/// `data` is NULL or points to a `PEP_PREPARE_DEVICE`.
unsafe fn prepare_device<P: Platform>(pep: &Pep<P>, data: *mut c_void) -> bool {
    let Some(data) = typed::<PEP_PREPARE_DEVICE>(data) else { return false };
    // SAFETY: `data` is non-NULL, aligned and, per the caller, a PEP_PREPARE_DEVICE.
    let id_pointer = unsafe { (*data.as_ptr()).DeviceId };
    // SAFETY: PoFx passes a valid device-id string (or NULL, refused) for the call's duration.
    let Some(id) = (unsafe { device_id(id_pointer) }) else { return false };
    let accepted = pep.patterns.matches(id) && claim_slot(pep, hash_device_id(id));
    pep.device_log.record(id, accepted);
    // SAFETY: as above; DeviceAccepted is the PEP's output.
    unsafe { (*data.as_ptr()).DeviceAccepted = if accepted { TRUE } else { FALSE } };
    true
}

/// Claims a free slot for the device `hash`, or finds the one already prepared for it.
fn claim_slot<P: Platform>(pep: &Pep<P>, hash: u64) -> bool {
    let prepared = pep.slots.iter().any(|slot| {
        state_of(slot.lifecycle.load(Ordering::Acquire)) == state::PREPARED
            && slot.device_id_hash.load(Ordering::Relaxed) == hash
    });
    if prepared {
        return true;
    }
    pep.slots.iter().any(|slot| {
        let current = slot.lifecycle.load(Ordering::Acquire);
        if state_of(current) != state::FREE {
            return false;
        }
        let claimed = lifecycle(generation_of(current), state::PREPARED);
        if slot
            .lifecycle
            .compare_exchange(current, claimed, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        slot.device_id_hash.store(hash, Ordering::Release);
        true
    })
}

/// `PEP_DPM_REGISTER_DEVICE`: registers a prepared processor and returns its handle; declines
/// (`PepDeviceNotAccepted`, NULL handle) a device that was not prepared.
///
/// # Safety
/// `data` is NULL or points to a `PEP_REGISTER_DEVICE_V2`.
unsafe fn register_device<P: Platform>(pep: &Pep<P>, data: *mut c_void) -> bool {
    let Some(data) = typed::<PEP_REGISTER_DEVICE_V2>(data) else { return false };
    // SAFETY: `data` is non-NULL, aligned and, per the caller, a PEP_REGISTER_DEVICE_V2.
    let request = unsafe { data.as_ptr().read() };
    // SAFETY: PoFx passes a valid device-id string (or NULL, refused) for the call's duration.
    let Some(id) = (unsafe { device_id(request.DeviceId) }) else { return false };
    let hash = hash_device_id(id);
    let mut handle: PEPHANDLE = core::ptr::null_mut();
    for (index, slot) in pep.slots.iter().enumerate() {
        let current = slot.lifecycle.load(Ordering::Acquire);
        if state_of(current) != state::PREPARED
            || slot.device_id_hash.load(Ordering::Acquire) != hash
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
        slot.kernel_handle.store(request.KernelHandle.addr(), Ordering::Relaxed);
        slot.reset_counters();
        slot.lifecycle.store(lifecycle(generation, state::REGISTERED), Ordering::Release);
        handle = encode_handle(index, generation);
        slot.live_handle.store(handle.addr(), Ordering::Release);
        break;
    }
    let accepted = !handle.is_null();
    // SAFETY: as above; DeviceHandle and DeviceAccepted are the PEP's outputs.
    unsafe { (*data.as_ptr()).DeviceHandle = handle };
    let acceptance = if accepted { PepDeviceAccepted } else { PepDeviceNotAccepted };
    // SAFETY: as above.
    unsafe { (*data.as_ptr()).DeviceAccepted = acceptance };
    true
}

/// `PEP_DPM_DEVICE_STARTED`: `<= DISPATCH_LEVEL`.
///
/// # Safety
/// `data` is NULL or points to a `PEP_DEVICE_STARTED`.
unsafe fn device_started<P: Platform>(pep: &Pep<P>, data: *mut c_void) -> bool {
    let Some(data) = typed::<PEP_DEVICE_STARTED>(data) else { return false };
    // SAFETY: `data` is non-NULL, aligned and, per the caller, a PEP_DEVICE_STARTED.
    let handle = unsafe { (*data.as_ptr()).DeviceHandle };
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
///
/// # Safety
/// `data` is NULL or points to a `PEP_UNREGISTER_DEVICE`.
unsafe fn unregister_device<P: Platform>(pep: &Pep<P>, data: *mut c_void) -> bool {
    let Some(data) = typed::<PEP_UNREGISTER_DEVICE>(data) else { return false };
    // SAFETY: `data` is non-NULL, aligned and, per the caller, a PEP_UNREGISTER_DEVICE.
    let handle = unsafe { (*data.as_ptr()).DeviceHandle };
    let Some((_, slot)) = pep.slot_for_handle(handle) else { return false };
    release(slot)
}

/// Frees a slot, bumping its generation so every handle to it goes stale.
fn release(slot: &crate::processor::ProcessorSlot) -> bool {
    let current = slot.lifecycle.load(Ordering::Acquire);
    let freed = lifecycle(generation_of(current).wrapping_add(1), state::FREE);
    let released = slot
        .lifecycle
        .compare_exchange(current, freed, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok();
    if released {
        slot.live_handle.store(0, Ordering::Release);
    }
    released
}

/// `PEP_DPM_ABANDON_DEVICE`: releases the device if it was ours (`DeviceAccepted` TRUE), or
/// says it was not (FALSE).
///
/// # Safety
/// `data` is NULL or points to a `PEP_ABANDON_DEVICE`.
unsafe fn abandon_device<P: Platform>(pep: &Pep<P>, data: *mut c_void) -> bool {
    let Some(data) = typed::<PEP_ABANDON_DEVICE>(data) else { return false };
    // SAFETY: `data` is non-NULL, aligned and, per the caller, a PEP_ABANDON_DEVICE.
    let id_pointer = unsafe { (*data.as_ptr()).DeviceId };
    // SAFETY: PoFx passes a valid device-id string (or NULL, refused) for the call's duration.
    let Some(id) = (unsafe { device_id(id_pointer) }) else { return false };
    let hash = hash_device_id(id);
    let owned = pep.slots.iter().any(|slot| {
        let current = state_of(slot.lifecycle.load(Ordering::Acquire));
        matches!(current, state::PREPARED | state::REGISTERED | state::STARTED)
            && slot.device_id_hash.load(Ordering::Acquire) == hash
            && release(slot)
    });
    // SAFETY: as above; DeviceAccepted is the PEP's output.
    unsafe { (*data.as_ptr()).DeviceAccepted = if owned { TRUE } else { FALSE } };
    true
}
