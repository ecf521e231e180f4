//! Static storage: the PEP instance, the pointer the callbacks find it through, the `PoFx`
//! kernel-information block, and the non-paged processor table.
//!
//! Nothing is allocated after `DriverEntry`: the PEP lives in a static cell written once at
//! `PASSIVE_LEVEL` before it is published, the processor table is one non-paged pool block
//! allocated before that, and `PoFx` fills the kernel-information block in place. Driver images
//! are non-paged unless a section says otherwise, so all of it is resident at any IRQL.

use core::cell::UnsafeCell;
use core::mem::{MaybeUninit, align_of, size_of};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};

use ppm_engine::abi::{PEP_KERNEL_INFORMATION_STRUCT_V3, PEP_KERNEL_INFORMATION_V3};
use ppm_engine::{Pep, ProcessorSlot};
use wdk_sys::ntddk::{ExAllocatePool2, ExFreePool};
use wdk_sys::{POOL_FLAG_NON_PAGED, SIZE_T};

use crate::platform::KernelPlatform;

/// The pool tag of the processor table (`PpmP` in pool tools).
pub const POOL_TAG: u32 = u32::from_le_bytes(*b"PpmP");

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

/// Moves `pep` into the static cell and returns a reference to it.
///
/// `PASSIVE_LEVEL`, `DriverEntry` only.
///
/// # Safety
/// Called at most once, before [`publish`]: no reference to the cell may exist yet.
pub unsafe fn install(pep: Pep<KernelPlatform>) -> &'static Pep<KernelPlatform> {
    // SAFETY: the caller guarantees this is the only access to the cell so far, so a unique
    // reference to it is sound.
    let cell = unsafe { &mut *PEP.0.get() };
    cell.write(pep)
}

/// Makes `pep` the instance the callbacks serve (release store). `PASSIVE_LEVEL`, before
/// `PoFxRegisterPluginEx`.
pub fn publish(pep: &'static Pep<KernelPlatform>) {
    INSTANCE.store(ptr::from_ref(pep).cast_mut(), Ordering::Release);
}

/// Withdraws the instance after a failed registration, so that nothing can reach the PEP (or
/// the processor table it refers to) again. `PASSIVE_LEVEL`, `DriverEntry` only; never after a
/// successful registration.
pub fn withdraw() {
    INSTANCE.store(ptr::null_mut(), Ordering::Release);
}

/// The kernel-information block to pass to `PoFxRegisterPluginEx`.
pub const fn kernel_information() -> *mut PEP_KERNEL_INFORMATION_STRUCT_V3 {
    KERNEL_INFORMATION.0.get()
}

/// The processor table: one [`ProcessorSlot`] per processor the system can ever have, in one
/// non-paged pool block, aligned as `ProcessorSlot` requires (a cache-line multiple).
pub struct ProcessorTable {
    /// What `ExAllocatePool2` returned (for `ExFreePool`).
    allocation: NonNull<core::ffi::c_void>,
    /// The initialised slots inside the allocation.
    slots: &'static [ProcessorSlot],
}

impl ProcessorTable {
    /// Allocates `count` slots from non-paged pool (`ExAllocatePool2` zero-fills) and writes
    /// each with `ProcessorSlot::new()`. `None` when `count` is 0, the size overflows or the
    /// pool is exhausted. `PASSIVE_LEVEL`.
    pub fn allocate(count: usize) -> Option<Self> {
        const ALIGN: usize = align_of::<ProcessorSlot>();
        if count == 0 {
            return None;
        }
        // Pool blocks are only 16-byte aligned below a page: ask for ALIGN - 1 spare bytes and
        // start the table at the first aligned address.
        let bytes = count.checked_mul(size_of::<ProcessorSlot>())?.checked_add(ALIGN - 1)?;
        let bytes = SIZE_T::try_from(bytes).ok()?;
        // SAFETY: PASSIVE_LEVEL (<= DISPATCH_LEVEL is required for non-paged pool); the flags
        // name a valid pool type and the size is non-zero.
        let allocation = unsafe { ExAllocatePool2(POOL_FLAG_NON_PAGED, bytes, POOL_TAG) };
        let allocation = NonNull::new(allocation)?;
        let offset = allocation.as_ptr().align_offset(ALIGN);
        if offset >= ALIGN {
            // SAFETY: `allocation` came from ExAllocatePool2 above and is not used afterwards.
            unsafe { ExFreePool(allocation.as_ptr()) };
            return None;
        }
        let first =
            allocation.as_ptr().wrapping_byte_add(offset).cast::<MaybeUninit<ProcessorSlot>>();
        // SAFETY: `first` is ALIGN-aligned and the block holds `offset + count * size_of` bytes
        // from its start, owned by this function alone; `MaybeUninit` needs no initialisation.
        let uninit = unsafe { core::slice::from_raw_parts_mut(first, count) };
        for slot in uninit {
            slot.write(ProcessorSlot::new());
        }
        // SAFETY: the same `count` elements, every one initialised just above; the block lives
        // until `free`, whose caller guarantees no reference is used afterwards.
        let slots = unsafe { core::slice::from_raw_parts(first.cast::<ProcessorSlot>(), count) };
        Some(Self { allocation, slots })
    }

    /// The slots, for `Pep::new`.
    pub const fn slots(&self) -> &'static [ProcessorSlot] {
        self.slots
    }

    /// Returns the block to the pool. `PASSIVE_LEVEL`, only after a failed registration.
    ///
    /// # Safety
    /// Nothing may use the slots afterwards: the PEP that refers to them must have been
    /// withdrawn ([`withdraw`]) and `PoFx` must never have been given the callbacks.
    pub unsafe fn free(self) {
        // SAFETY: `allocation` came from ExAllocatePool2 and is freed once (`self` is consumed);
        // the caller guarantees no slot reference is used afterwards.
        unsafe { ExFreePool(self.allocation.as_ptr()) };
    }
}
