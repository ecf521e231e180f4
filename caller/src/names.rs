//! The notifications' names, from the engine's notification table
//! ([`ppm_engine::notification`]), and the ids no header defines. The DPM and PPM ids are
//! separate number spaces.

use ppm_engine::abi::ULONG;
use ppm_engine::notification::{Callback, find};

/// DPM notification ids no header defines: a PEP must refuse them without touching the data.
pub const UNDEFINED_DPM: [ULONG; 5] = [0x00, 0x29, 0x80, 0xFFFF, 0xFFFF_FFFF];

/// PPM notification ids no header defines: a PEP must refuse them without touching the data.
pub const UNDEFINED_PPM: [ULONG; 5] = [0x00, 0x2C, 0x80, 0xFFFF, 0xFFFF_FFFF];

/// The name of DPM notification `id` without `PEP_DPM_` (`PREPARE_DEVICE`), if the table has it.
#[must_use]
pub fn dpm(id: ULONG) -> Option<&'static str> {
    find(Callback::Dpm, id).map(ppm_engine::notification::Notification::short_name)
}

/// The name of PPM notification `id` without `PEP_NOTIFY_PPM_` (`FEEDBACK_READ`), if the table
/// has it.
#[must_use]
pub fn ppm(id: ULONG) -> Option<&'static str> {
    find(Callback::Ppm, id).map(ppm_engine::notification::Notification::short_name)
}
