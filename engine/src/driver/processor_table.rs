//! The processor table: one [`ProcessorSlot`] per processor the system can ever have.
//!
//! One non-paged pool block, aligned as `ProcessorSlot` requires (a cache-line multiple).
//! `PASSIVE_LEVEL`, in `DriverEntry`.

use core::mem::{MaybeUninit, align_of, size_of};
use core::ptr::NonNull;

use crate::ProcessorSlot;
use crate::driver::services::{KernelServices, PoolBlock};

/// The allocated table.
pub struct ProcessorTable {
    /// What the pool returned (for `ExFreePool`).
    allocation: NonNull<u8>,
    /// The initialised slots inside the allocation.
    slots: &'static [ProcessorSlot],
}

impl ProcessorTable {
    /// Allocates `count` slots from non-paged pool and writes each with
    /// [`ProcessorSlot::new`]. `None` when `count` is 0, the size overflows or the pool is
    /// exhausted. `PASSIVE_LEVEL`.
    pub fn allocate(kernel: &impl KernelServices, count: usize) -> Option<Self> {
        const ALIGN: usize = align_of::<ProcessorSlot>();
        if count == 0 {
            return None;
        }
        // Pool blocks are only 16-byte aligned below a page: ask for ALIGN - 1 spare bytes and
        // start the table at the first aligned address.
        let bytes = count.checked_mul(size_of::<ProcessorSlot>())?.checked_add(ALIGN - 1)?;
        let allocation = kernel.allocate_non_paged(PoolBlock::ProcessorTable, bytes)?;
        let offset = allocation.as_ptr().align_offset(ALIGN);
        if offset >= ALIGN {
            // SAFETY: `allocation` came from allocate_non_paged above and is not used again.
            unsafe { kernel.free_non_paged(PoolBlock::ProcessorTable, allocation) };
            return None;
        }
        #[expect(
            clippy::cast_ptr_alignment,
            reason = "`offset` makes the address ALIGN-aligned (align_offset above)"
        )]
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
    #[must_use]
    pub const fn slots(&self) -> &'static [ProcessorSlot] {
        self.slots
    }

    /// Returns the block to the pool. `PASSIVE_LEVEL`, only after a failed registration.
    ///
    /// # Safety
    /// Nothing may use the slots afterwards: the PEP that refers to them must have been
    /// withdrawn and `PoFx` must never have been given the callbacks.
    pub unsafe fn free(self, kernel: &impl KernelServices) {
        // SAFETY: `allocation` came from allocate_non_paged for this block and is freed once
        // (`self` is consumed); the caller guarantees no slot reference is used afterwards.
        unsafe { kernel.free_non_paged(PoolBlock::ProcessorTable, self.allocation) };
    }
}
