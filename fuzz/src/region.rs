//! [`Region`]: an allocation of exactly the bytes a notification's data may occupy, so that
//! `AddressSanitizer` reports any engine access past it.

use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};
use std::ops::Range;
use std::ptr::NonNull;

/// Exactly `len` bytes at `offset` into an 8-aligned heap allocation of `offset + len` bytes.
///
/// With `len == 0` nothing is allocated and the pointer is a dangling, aligned, non-NULL
/// address: any access through it faults.
#[derive(Debug)]
pub struct Region {
    allocation: Option<(NonNull<u8>, Layout)>,
    data: NonNull<u8>,
    len: usize,
}

impl Region {
    /// A region of `len` bytes starting `offset` bytes into its allocation, filled with `fill`
    /// then repeated `pad`.
    ///
    /// # Panics
    /// When the layout is impossible (more than `isize::MAX` bytes).
    #[must_use]
    pub fn new(len: usize, offset: usize, fill: &[u8], pad: u8) -> Self {
        if len == 0 {
            return Self { allocation: None, data: NonNull::<u64>::dangling().cast(), len };
        }
        let layout = Layout::from_size_align(offset + len, 8).expect("region layout");
        // SAFETY: the layout has a non-zero size (`len > 0`).
        let base = unsafe { alloc_zeroed(layout) };
        let Some(base) = NonNull::new(base) else { handle_alloc_error(layout) };
        // `offset + len` bytes were allocated, so `offset` is in bounds.
        let data = base.wrapping_add_offset(offset);
        let mut region = Self { allocation: Some((base, layout)), data, len };
        let bytes = region.bytes_mut();
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = fill.get(index).copied().unwrap_or(pad);
        }
        region
    }

    /// The data pointer.
    #[must_use]
    pub const fn pointer(&self) -> *mut u8 {
        self.data.as_ptr()
    }

    /// The data length.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    #[must_use]
    pub const fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `data` points to `len` initialised bytes of the live allocation.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    /// The bytes, mutably.
    pub const fn bytes_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `data` points to `len` initialised bytes of the live allocation, borrowed
        // uniquely through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Writes `value` at `offset` (little-endian), if it fits.
    pub fn put(&mut self, offset: usize, value: &[u8]) {
        if let Some(target) = self.bytes_mut().get_mut(offset..offset + value.len()) {
            target.copy_from_slice(value);
        }
    }

    /// The `u32` at `offset`, if in bounds.
    #[must_use]
    pub fn u32_at(&self, offset: usize) -> Option<u32> {
        let bytes = self.bytes().get(offset..offset + 4)?;
        Some(u32::from_le_bytes(bytes.try_into().ok()?))
    }

    /// The `u64` at `offset`, if in bounds.
    #[must_use]
    pub fn u64_at(&self, offset: usize) -> Option<u64> {
        let bytes = self.bytes().get(offset..offset + 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    /// Panics unless every byte outside `output` equals `before`.
    ///
    /// # Panics
    /// On the first byte that changed outside `output`.
    pub fn assert_unchanged_outside(&self, before: &[u8], output: Range<usize>, what: &str) {
        for (index, (now, then)) in self.bytes().iter().zip(before).enumerate() {
            assert!(
                now == then || output.contains(&index),
                "{what}: byte {index} changed from {then:#04x} to {now:#04x}"
            );
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Some((base, layout)) = self.allocation {
            // SAFETY: `base` was allocated with `layout` by `alloc_zeroed` and is freed once.
            unsafe { dealloc(base.as_ptr(), layout) };
        }
    }
}

/// `NonNull::wrapping_add` for byte offsets.
trait WrappingAddOffset {
    fn wrapping_add_offset(self, offset: usize) -> Self;
}

impl WrappingAddOffset for NonNull<u8> {
    fn wrapping_add_offset(self, offset: usize) -> Self {
        Self::new(self.as_ptr().wrapping_add(offset)).unwrap_or(self)
    }
}
