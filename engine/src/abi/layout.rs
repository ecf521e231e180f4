//! Compile-time layout assertions and bindgen-style bitfield accessors shared by the ABI
//! declarations.

/// Asserts, at compile time, the size and alignment of a type and the offsets of its fields
/// (nested fields are written `a.b.c`).
macro_rules! assert_layout {
    ($t:ty, size $size:literal, align $align:literal $(, $($field:ident).+ @ $off:literal)* $(,)?) => {
        const _: () = {
            assert!(::core::mem::size_of::<$t>() == $size);
            assert!(::core::mem::align_of::<$t>() == $align);
            $(assert!(::core::mem::offset_of!($t, $($field).+) == $off);)*
        };
    };
}

/// Implements a `const fn zeroed()` (every field zero, NULL or `None`) and `Default` through it.
macro_rules! zeroed_default {
    ($t:ident { $($body:tt)* }) => {
        impl $t {
            /// A value with every field zero, NULL or `None`.
            #[must_use]
            pub const fn zeroed() -> Self {
                Self { $($body)* }
            }
        }

        impl Default for $t {
            fn default() -> Self {
                Self::zeroed()
            }
        }
    };
}

/// A mask of the `width` low bits (`1 <= width <= 32`).
const fn mask32(width: u32) -> u32 {
    u32::MAX.wrapping_shr(32_u32.wrapping_sub(width))
}

/// Reads the `width`-bit field at bit `offset` (LSB first) of a 32-bit bitfield unit.
pub(super) const fn get_bits32(unit: u32, offset: u32, width: u32) -> u32 {
    unit.wrapping_shr(offset) & mask32(width)
}

/// Writes `val` (masked to `width` bits) into the field at bit `offset` of a 32-bit unit.
pub(super) const fn set_bits32(unit: u32, offset: u32, width: u32, val: u32) -> u32 {
    let field = mask32(width).wrapping_shl(offset);
    (unit & !field) | (val.wrapping_shl(offset) & field)
}

/// A mask of the `width` low bits (`1 <= width <= 16`).
const fn mask16(width: u32) -> u16 {
    u16::MAX.wrapping_shr(16_u32.wrapping_sub(width))
}

/// Reads the `width`-bit field at bit `offset` (LSB first) of a 16-bit bitfield unit.
pub(super) const fn get_bits16(unit: u16, offset: u32, width: u32) -> u16 {
    unit.wrapping_shr(offset) & mask16(width)
}

/// Writes `val` (masked to `width` bits) into the field at bit `offset` of a 16-bit unit.
pub(super) const fn set_bits16(unit: u16, offset: u32, width: u32, val: u16) -> u16 {
    let field = mask16(width).wrapping_shl(offset);
    (unit & !field) | (val.wrapping_shl(offset) & field)
}
