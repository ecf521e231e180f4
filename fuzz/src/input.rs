//! Input shapes shared by the targets: device ids, handles, notification ids, data fills and
//! hardware events.

use arbitrary::Arbitrary;
use ppm_engine::abi::PEPHANDLE;
use ppm_engine::notification::{self, Callback, Notification};

use crate::platform::FuzzPlatform;

/// A device id: one of the processor shapes firmware uses, a non-processor device, or raw units.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum IdSpec {
    /// A processor id in one of the default patterns' shapes.
    Processor {
        /// Which shape.
        shape: u8,
        /// The number in it.
        number: u16,
        /// ASCII lower case (the patterns are case-insensitive).
        lowercase: bool,
    },
    /// A device that is not a processor.
    Other(u8),
    /// Any UTF-16 units.
    Raw(Vec<u16>),
}

const OTHER_IDS: [&str; 8] = [
    "\\_SB.PCI0",
    "\\_SB.PCI0.GFX0",
    "\\_SB.COM1",
    "ACPI\\PNP0C0C",
    "\\_SB.CPUS",
    "",
    "\\_SB.C00",
    "ACPI\\GenuineIntel_-_Intel64_Family_6_Model_85",
];

impl IdSpec {
    /// The id's UTF-16 units.
    #[must_use]
    pub fn units(&self) -> Vec<u16> {
        let text = match self {
            Self::Processor { shape, number, lowercase } => {
                let n = usize::from(*number);
                // The shapes of the default patterns, plus near misses (more digits, hex where
                // only decimal is accepted, a child device below a processor).
                let text = match shape % 12 {
                    0 => format!("\\_SB.CPU{:X}", n % 0x10),
                    1 => format!("\\_SB.PR{:02X}", n % 0x100),
                    2 => format!("\\_SB.P{:03}", n % 1000),
                    3 => format!("\\_SB.C{:03X}", n % 0x1000),
                    4 => format!("\\_PR.CPU{:X}", n % 0x10),
                    5 => format!("\\_SB.SCK{:X}.CP{:02X}", n / 0x100 % 0x10, n % 0x100),
                    6 => format!("\\_SB.SCK{:X}.C{:03X}", n / 0x1000 % 0x10, n % 0x1000),
                    7 => format!("\\_PR.CP{:02X}", n % 0x100),
                    8 => format!("\\_PR.P{:03}", n % 1000),
                    9 => format!("\\_SB.CPU{n}"),
                    10 => format!("\\_SB.P{:03X}", n % 0x1000),
                    _ => format!("\\_SB.CP{:02X}.PPC{}", n % 0x100, n % 10),
                };
                if *lowercase { text.to_ascii_lowercase() } else { text }
            }
            Self::Other(which) => OTHER_IDS[usize::from(*which) % OTHER_IDS.len()].to_owned(),
            Self::Raw(units) => return units.iter().copied().take(256).collect(),
        };
        text.encode_utf16().collect()
    }
}

/// A `PEPHANDLE` to pass: NULL, one the engine handed out (live or since unregistered), or a
/// forgery.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleSpec {
    /// NULL.
    Null,
    /// A handle the engine returned and that was not unregistered since.
    Live(u8),
    /// A handle that was unregistered.
    Stale(u8),
    /// Any value.
    Forged(u64),
    /// A live handle with one bit flipped.
    Flipped(u8, u8),
}

/// The handles an input obtained from the engine.
#[derive(Debug, Default)]
pub struct Handles {
    /// Returned by `REGISTER_DEVICE`, not unregistered since (as far as the target knows).
    pub live: Vec<PEPHANDLE>,
    /// Unregistered.
    pub stale: Vec<PEPHANDLE>,
}

fn pick(list: &[PEPHANDLE], index: u8) -> Option<PEPHANDLE> {
    list.get(usize::from(index) % list.len().max(1)).copied()
}

impl Handles {
    /// The handle `spec` names (NULL when the list it names is empty).
    #[must_use]
    pub fn resolve(&self, spec: HandleSpec) -> PEPHANDLE {
        let null = std::ptr::null_mut();
        match spec {
            HandleSpec::Null => null,
            HandleSpec::Live(index) => pick(&self.live, index).unwrap_or(null),
            HandleSpec::Stale(index) => pick(&self.stale, index).unwrap_or(null),
            HandleSpec::Forged(value) => {
                std::ptr::without_provenance_mut(usize::try_from(value).unwrap_or(usize::MAX))
            }
            HandleSpec::Flipped(index, bit) => pick(&self.live, index).map_or(null, |handle| {
                std::ptr::without_provenance_mut(handle.addr() ^ (1usize << (bit % 64)))
            }),
        }
    }

    /// Records a handle `REGISTER_DEVICE` returned.
    pub fn add(&mut self, handle: PEPHANDLE) {
        if !handle.is_null() {
            self.live.push(handle);
        }
    }

    /// Moves `handle` from live to stale (after a handled `UNREGISTER_DEVICE`).
    pub fn retire(&mut self, handle: PEPHANDLE) {
        if let Some(position) = self.live.iter().position(|&live| live == handle) {
            self.live.swap_remove(position);
            self.stale.push(handle);
        }
    }
}

/// A notification id: one of the engine's table (every id PoFx documents), or any value.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotificationSpec {
    /// An id of the engine's table (its row, taken modulo the number of rows).
    Documented(u8),
    /// Any value.
    Raw(u32),
}

impl NotificationSpec {
    /// As a PPM notification id.
    #[must_use]
    pub fn ppm(self) -> u32 {
        match self {
            Self::Documented(index) => documented(notification::PPM, index),
            Self::Raw(value) => value,
        }
    }

    /// As a DPM notification id.
    #[must_use]
    pub fn dpm(self) -> u32 {
        match self {
            Self::Documented(index) => documented(notification::DPM, index),
            Self::Raw(value) => value,
        }
    }
}

/// The id of row `index` (modulo their number) of the engine's table `rows`.
fn documented(rows: &[Notification], index: u8) -> u32 {
    rows.get(usize::from(index) % rows.len().max(1)).map_or(0, |row| row.id)
}

/// Whether the engine's table says notification `id` of `callback` is refused whatever its
/// data (an id it does not define included).
#[must_use]
pub fn always_refused(callback: Callback, id: u32) -> bool {
    notification::find(callback, id).is_none_or(|row| !row.answer.returns())
}

/// The bytes of a notification's data.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    /// Below 8: pass NULL instead of a buffer.
    pub null: u8,
    /// Bytes beyond the documented structure size (modulo 32).
    pub extra: u8,
    /// From 0xF0: the data sits this many bytes (modulo 8) past an 8-aligned address.
    pub misalign: u8,
    /// The byte that pads `bytes` to the buffer size.
    pub pad: u8,
    /// The buffer's first bytes.
    pub bytes: Vec<u8>,
}

impl Fill {
    /// Whether to pass NULL.
    #[must_use]
    pub const fn is_null(&self) -> bool {
        self.null < 8
    }

    /// The buffer size for a structure of `size` bytes.
    #[must_use]
    pub fn len(&self, size: usize) -> usize {
        size + usize::from(self.extra % 32)
    }

    /// The misalignment.
    #[must_use]
    pub fn offset(&self) -> usize {
        if self.misalign >= 0xF0 { usize::from(self.misalign % 8) } else { 0 }
    }
}

/// A hardware or scheduling event.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwOp {
    /// The next notifications run on this processor (any index, even impossible ones).
    SetProcessor(u32),
    /// A processor's counters advance.
    Advance {
        /// Which processor (modulo 8).
        processor: u8,
        /// Actual counts.
        actual: u32,
        /// Nominal counts.
        nominal: u32,
    },
    /// A processor's counters take these raw values (reset, wrap, rewrite).
    SetCounters {
        /// Which processor (modulo 8).
        processor: u8,
        /// Raw actual value.
        actual: u64,
        /// Raw nominal value.
        nominal: u64,
    },
    /// A processor's counter reads start or stop faulting.
    Fault {
        /// Which processor (modulo 8).
        processor: u8,
        /// Faulting.
        on: bool,
    },
}

impl HwOp {
    /// Applies the event.
    pub fn apply(self, platform: &FuzzPlatform) {
        match self {
            Self::SetProcessor(processor) => platform.set_processor(processor),
            Self::Advance { processor, actual, nominal } => {
                platform.advance(u32::from(processor), u64::from(actual), u64::from(nominal));
            }
            Self::SetCounters { processor, actual, nominal } => {
                platform.set_counters(u32::from(processor), actual, nominal);
            }
            Self::Fault { processor, on } => platform.set_fault(u32::from(processor), on),
        }
    }
}
