//! The exception dispatcher of the loaded image: its architecture's unwinder over the image's
//! unwind data (`.pdata` with `UNWIND_INFO` on x64, `.pdata`/`.xdata` on ARM64), built at
//! `load` and used by the hooks that dispatch an exception.

use crate::arm64_unwind;
use crate::image::{Arch, Image, Pdata};
use crate::layout::IMAGE_BASE;
use crate::seh;

/// The exception dispatcher of the image's architecture.
pub enum Unwinding {
    /// x64 `.pdata`/`UNWIND_INFO`.
    X64(seh::Unwinder),
    /// ARM64 `.pdata`/`.xdata`.
    Arm64(arm64_unwind::Unwinder),
}

impl Unwinding {
    /// The dispatcher over `image`'s unwind data; `c_specific`: the RVAs of
    /// `__C_specific_handler`.
    pub fn new(arch: Arch, image: &Image, c_specific: &[u64]) -> Self {
        match (&image.pdata, arch) {
            (Pdata::X64(entries), _) => {
                let pdata: Vec<seh::RuntimeFunction> =
                    entries.iter().map(|entry| (entry[0], entry[1], entry[2])).collect();
                Self::X64(seh::Unwinder::new(IMAGE_BASE, image.size, &pdata, c_specific))
            }
            (Pdata::Arm64(entries), _) => {
                let pdata: Vec<(u32, u32)> =
                    entries.iter().map(|entry| (entry[0], entry[1])).collect();
                Self::Arm64(arm64_unwind::Unwinder::new(IMAGE_BASE, image.size, &pdata, c_specific))
            }
        }
    }
}
