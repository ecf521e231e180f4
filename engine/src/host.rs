//! The host of the C callbacks: where they find the engine instance.
//!
//! The [`Platform`] is hardware only. Which [`Pep`] a callback serves is the host's business:
//! the Windows driver keeps one instance in static storage, an emulator or a test caller one per
//! thread. The callbacks ([`crate::callbacks`]) are generic over the host, so the lookup is
//! resolved at compile time.

use crate::pep::Pep;
use crate::platform::Platform;

/// Where the C callbacks of [`crate::callbacks::pep_information`] find their engine instance.
pub trait PepHost: 'static {
    /// The platform of the engine instance.
    type Platform: Platform;

    /// The engine instance whose C callbacks are being called, or `None` before it exists (the
    /// callbacks then refuse every notification).
    ///
    /// Any IRQL, interrupts possibly disabled: no allocation, no blocking, no logging, no
    /// panic. It runs on every notification, the read path included, so keep it to a load.
    fn instance() -> Option<&'static Pep<Self::Platform>>;

    /// PoFx offered the device `device_id` (UTF-16 units, as PoFx passed it) in
    /// `PEP_DPM_PREPARE_DEVICE` and the PEP accepted it or not. `PASSIVE_LEVEL`, the documented
    /// IRQL of PREPARE (a DPM notification, never the processor read path): the driver writes
    /// an ETW event; the default does nothing. The engine keeps the last 16 decisions itself
    /// ([`Pep::device_log`]).
    fn device_prepared(device_id: &[u16], accepted: bool) {
        let _ = (device_id, accepted);
    }
}
