//! The engine as the kernel holds it: a leaked (`'static`) processor table and `Pep`, published
//! for the callbacks.

use ppm_engine::{Config, Passive, Pep, Platform, ProcessorSlot};

use crate::host::install;

/// A processor table of `capacity` free slots, leaked: the engine requires a `'static` table.
#[must_use]
pub fn table(capacity: usize) -> &'static [ProcessorSlot] {
    Box::leak((0..capacity).map(|_| ProcessorSlot::new()).collect())
}

/// What `DriverEntry` does: builds the engine and publishes it.
///
/// The engine runs over `platform` and `config` with a table of `capacity` slots (built at
/// "`PASSIVE_LEVEL`" on the calling thread) and is installed on the calling thread, so the
/// sending functions (`ppm_caller::read::<P>` ...) reach it. Another
/// thread enters it with [`crate::enter`] or [`install`]. The engine is leaked (a test's engine
/// is small); a harness that builds one per input (the fuzz harness) owns its own and
/// [`crate::enter`]s it instead.
#[must_use]
pub fn boot<P: Platform>(platform: P, config: &Config, capacity: usize) -> &'static Pep<P> {
    boot_with(platform, config, table(capacity))
}

/// As [`boot`], over a table the caller provides (a reused table, say).
#[must_use]
pub fn boot_with<P: Platform>(
    platform: P,
    config: &Config,
    slots: &'static [ProcessorSlot],
) -> &'static Pep<P> {
    // SAFETY: a host thread runs at no raised IRQL (the emulated PASSIVE_LEVEL), and the token
    // lives only for this call.
    let passive = unsafe { Passive::assume() };
    let pep: &'static Pep<P> = Box::leak(Box::new(Pep::new(&passive, platform, config, slots)));
    install(pep);
    pep
}
