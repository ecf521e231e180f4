//! Static storage: the PEP instance and the pointer the callbacks find it through
//! ([`KernelHost`]), and the `PoFx` kernel-information block.
//!
//! Nothing is allocated after `DriverEntry`: the PEP lives in a static cell written once at
//! `PASSIVE_LEVEL` before it is published, and `PoFx` fills the kernel-information block in
//! place. Driver images are non-paged unless a section says otherwise, so all of it is resident
//! at any IRQL.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use ppm_engine::abi::{PEP_KERNEL_INFORMATION_STRUCT_V3, PEP_KERNEL_INFORMATION_V3};
use ppm_engine::{Pep, PepHost};

use crate::platform::KernelPlatform;

/// The PEP, written once by [`install`].
struct PepCell(UnsafeCell<MaybeUninit<Pep<KernelPlatform>>>);

// SAFETY: the cell is written once, by `install`, at PASSIVE_LEVEL in DriverEntry before any
// reference to it is published; afterwards it is only read (the engine changes nothing but its
// own atomics), so sharing references across processors is sound.
unsafe impl Sync for PepCell {}

static PEP: PepCell = PepCell(UnsafeCell::new(MaybeUninit::uninit()));

/// The published instance: NULL until [`publish`], after which it points into [`PEP`].
static INSTANCE: AtomicPtr<Pep<KernelPlatform>> = AtomicPtr::new(ptr::null_mut());

/// The block `PoFxRegisterPluginEx` fills (`Version` and `Size` preset).
struct KernelInformationCell(UnsafeCell<PEP_KERNEL_INFORMATION_STRUCT_V3>);

// SAFETY: the block is handed to `PoFxRegisterPluginEx` once, from DriverEntry, and otherwise
// only written by the kernel during that call; the driver never reads it concurrently.
unsafe impl Sync for KernelInformationCell {}

static KERNEL_INFORMATION: KernelInformationCell =
    KernelInformationCell(UnsafeCell::new(PEP_KERNEL_INFORMATION_STRUCT_V3 {
        Version: PEP_KERNEL_INFORMATION_V3,
        Size: PEP_KERNEL_INFORMATION_STRUCT_V3::SIZE,
        ..PEP_KERNEL_INFORMATION_STRUCT_V3::zeroed()
    }));

/// The PEP the C callbacks serve, or `None` before [`publish`]. Any IRQL: one acquire load.
#[inline]
pub fn instance() -> Option<&'static Pep<KernelPlatform>> {
    let pep = INSTANCE.load(Ordering::Acquire);
    // SAFETY: a non-NULL value was stored by `publish` from a `&'static Pep` (the initialised
    // cell), which is never written again; the acquire load pairs with its release store, so
    // the whole PEP is visible.
    unsafe { pep.as_ref() }
}

/// The host of the driver's callbacks: the instance [`set_instance`] published.
pub struct KernelHost;

impl PepHost for KernelHost {
    type Platform = KernelPlatform;

    /// The published PEP (see [`instance`]). Any IRQL: one acquire load.
    #[inline]
    fn instance() -> Option<&'static Pep<KernelPlatform>> {
        instance()
    }

    /// Each `PEP_DPM_PREPARE_DEVICE` decision as an ETW event (`DevicePrepared`).
    /// `PASSIVE_LEVEL`.
    fn device_prepared(device_id: &[u16], accepted: bool) {
        crate::trace::device_prepared(device_id, accepted);
    }
}

/// Moves `pep` into the static cell and returns a reference to it. `PASSIVE_LEVEL`.
///
/// # Safety
/// Called at most once, before [`publish`]: no reference to the cell may exist yet.
pub unsafe fn install(pep: Pep<KernelPlatform>) -> &'static Pep<KernelPlatform> {
    // SAFETY: the caller guarantees this is the only access to the cell so far, so a unique
    // reference to it is sound.
    let cell = unsafe { &mut *PEP.0.get() };
    cell.write(pep)
}

/// Makes `pep` the instance the callbacks serve (`Some`, a release store) or withdraws it after
/// a failed registration (`None`). `PASSIVE_LEVEL`, `DriverEntry` only.
pub fn set_instance(pep: Option<&'static Pep<KernelPlatform>>) {
    let pointer = pep.map_or(ptr::null_mut(), |pep| ptr::from_ref(pep).cast_mut());
    INSTANCE.store(pointer, Ordering::Release);
}

/// The kernel-information block to pass to `PoFxRegisterPluginEx`.
pub const fn kernel_information() -> *mut PEP_KERNEL_INFORMATION_STRUCT_V3 {
    KERNEL_INFORMATION.0.get()
}
