//! The notifications the PEP handles, with their names: one `(id, name)` table per class, as
//! the C sample's handler table. The DPM and PPM ids are separate number spaces.

use ppm_engine::abi::{
    PEP_DPM_ABANDON_DEVICE, PEP_DPM_DEVICE_STARTED, PEP_DPM_PREPARE_DEVICE,
    PEP_DPM_REGISTER_DEVICE, PEP_DPM_UNREGISTER_DEVICE, PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE,
    PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, PEP_NOTIFY_PPM_FEEDBACK_READ,
    PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS,
    PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES,
    PEP_NOTIFY_PPM_QUERY_VETO_REASONS, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, ULONG,
};

/// The device (DPM) notifications the PEP handles (`AcceptDeviceNotification`).
pub const DPM: [(ULONG, &str); 5] = [
    (PEP_DPM_PREPARE_DEVICE, "PREPARE_DEVICE"),
    (PEP_DPM_ABANDON_DEVICE, "ABANDON_DEVICE"),
    (PEP_DPM_REGISTER_DEVICE, "REGISTER_DEVICE"),
    (PEP_DPM_UNREGISTER_DEVICE, "UNREGISTER_DEVICE"),
    (PEP_DPM_DEVICE_STARTED, "DEVICE_STARTED"),
];

/// The processor (PPM) notifications the PEP handles (`AcceptProcessorNotification`), the hot
/// one first (the engine tests `FEEDBACK_READ` before any other).
pub const PPM: [(ULONG, &str); 11] = [
    (PEP_NOTIFY_PPM_FEEDBACK_READ, "FEEDBACK_READ"),
    (PEP_NOTIFY_PPM_QUERY_CAPABILITIES, "QUERY_CAPABILITIES"),
    (PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, "QUERY_FEEDBACK_COUNTERS"),
    (PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, "QUERY_PERF_CAPABILITIES"),
    (PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, "QUERY_DOMAIN_INFO"),
    (PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, "ENTER_SYSTEM_STATE"),
    (PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, "RESUME_FROM_SYSTEM_STATE"),
    (PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, "PERF_CHECK_COMPLETE"),
    (PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, "QUERY_PLATFORM_STATES"),
    (PEP_NOTIFY_PPM_QUERY_VETO_REASONS, "QUERY_VETO_REASONS"),
    (PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, "ENUMERATE_BOOT_VETOES"),
];

/// DPM notification ids no header defines: a PEP must refuse them without touching the data.
pub const UNDEFINED_DPM: [ULONG; 5] = [0x00, 0x29, 0x80, 0xFFFF, 0xFFFF_FFFF];

/// PPM notification ids no header defines: a PEP must refuse them without touching the data.
pub const UNDEFINED_PPM: [ULONG; 5] = [0x00, 0x2C, 0x80, 0xFFFF, 0xFFFF_FFFF];

/// The name of handled DPM notification `id`.
#[must_use]
pub fn dpm(id: ULONG) -> Option<&'static str> {
    DPM.iter().find(|(known, _)| *known == id).map(|(_, name)| *name)
}

/// The name of handled PPM notification `id`.
#[must_use]
pub fn ppm(id: ULONG) -> Option<&'static str> {
    PPM.iter().find(|(known, _)| *known == id).map(|(_, name)| *name)
}
