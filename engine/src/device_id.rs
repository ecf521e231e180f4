//! Processor device ids: the patterns that decide which devices PoFx offers are processors, and
//! a small log of the ids seen, so a user can learn what their platform calls its processors.
//!
//! Pattern syntax (case-insensitive for ASCII letters): `*` matches any run of characters
//! (including none), `?` any one character, `#` one hexadecimal digit, `%` one decimal digit;
//! every other character matches itself. The x64 processor device-id format is not documented;
//! the defaults cover the ACPI namespace paths firmware commonly gives processor objects and
//! devices. Each default names exactly one 4-character ACPI name segment, with no trailing `*`,
//! so a processor pattern never matches a device below it. AMD firmware numbers `P` processors
//! in hexadecimal (`\_PR.P00A`, `\_SB.P00A`): under `\_PR` every hex `P###` is a processor;
//! under `\_SB` the first digit must be decimal (`P%##`, `P000` … `P9FF`, 2560 names), which
//! keeps out `\_SB.PC00`, the PCI root bridge on current Intel firmware.

use core::sync::atomic::Ordering;

use crate::sync::{AtomicBool, AtomicU32};

/// The most patterns a configuration holds.
pub const MAX_DEVICE_ID_PATTERNS: usize = 16;
/// The longest pattern, in UTF-16 code units.
pub const MAX_PATTERN_UNITS: usize = 48;

/// The default processor device-id patterns.
///
/// ACPI `Processor` objects under `\_PR` and `\_SB` (`\_PR.CPU0`, `\_PR.P00A`, `\_SB.CPU0`,
/// `\_SB.CP00`), `ACPI0007` processor devices (`\_SB.PR00`, `\_SB.P00A`, AMD's `\_SB.C000`)
/// and the same under a socket scope (`\_SB.SCK0.CP00`, `\_SB.SCK0.C000`), AMD's platform
/// container (`\_SB.PLTF.C000`) and QEMU's processor container (`\_SB.CPUS.C000`). Every
/// pattern is one 4-character name segment after its scope.
pub const DEFAULT_DEVICE_ID_PATTERNS: &[&str] = &[
    "\\_PR.CPU#",
    "\\_PR.CP##",
    "\\_PR.P###",
    "\\_SB.CPU#",
    "\\_SB.CP##",
    "\\_SB.PR##",
    "\\_SB.P%##",
    "\\_SB.C###",
    "\\_SB.SCK#.CP##",
    "\\_SB.SCK#.C###",
    "\\_SB.PLTF.C###",
    "\\_SB.CPUS.C###",
];

/// [`DEFAULT_DEVICE_ID_PATTERNS`] as a set. The build fails if a default is longer than a
/// pattern can be, not ASCII, or if there are too many of them.
const DEFAULTS: DeviceIdPatterns = {
    assert!(DEFAULT_DEVICE_ID_PATTERNS.len() <= MAX_DEVICE_ID_PATTERNS);
    let mut set = DeviceIdPatterns::empty();
    let mut rest = DEFAULT_DEVICE_ID_PATTERNS;
    while let [pattern, others @ ..] = rest {
        let bytes = pattern.as_bytes();
        assert!(!bytes.is_empty() && bytes.len() <= MAX_PATTERN_UNITS && pattern.is_ascii());
        let mut stored = DeviceIdPattern::EMPTY;
        let mut remaining = bytes;
        let mut length = 0;
        while let [byte, after @ ..] = remaining {
            if let Some(unit) = stored.units.split_at_mut(length).1.first_mut() {
                *unit = u16::from_le_bytes([*byte, 0]);
            }
            length += 1;
            remaining = after;
        }
        stored.len = length;
        if let Some(slot) = set.patterns.split_at_mut(set.count).1.first_mut() {
            *slot = stored;
        }
        set.count += 1;
        rest = others;
    }
    set
};

/// Why a pattern was not added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternError {
    /// The pattern is empty.
    Empty,
    /// The pattern is longer than [`MAX_PATTERN_UNITS`].
    TooLong,
    /// [`MAX_DEVICE_ID_PATTERNS`] patterns are already held.
    TooMany,
    /// The pattern contains a NUL or a non-ASCII character (only from `&str`).
    InvalidCharacter,
}

/// One pattern, stored inline (no allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceIdPattern {
    units: [u16; MAX_PATTERN_UNITS],
    len: usize,
}

impl DeviceIdPattern {
    const EMPTY: Self = Self { units: [0; MAX_PATTERN_UNITS], len: 0 };

    /// The pattern's UTF-16 code units.
    #[must_use]
    pub fn as_units(&self) -> &[u16] {
        self.units.get(..self.len).unwrap_or(&[])
    }

    /// Whether `id` matches this pattern. `PASSIVE_LEVEL` (any IRQL is safe: no allocation).
    #[must_use]
    pub fn matches(&self, id: &[u16]) -> bool {
        glob_match(self.as_units(), id)
    }
}

/// A set of processor device-id patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceIdPatterns {
    patterns: [DeviceIdPattern; MAX_DEVICE_ID_PATTERNS],
    count: usize,
}

impl DeviceIdPatterns {
    /// No patterns: every device is declined.
    #[must_use]
    pub const fn empty() -> Self {
        Self { patterns: [DeviceIdPattern::EMPTY; MAX_DEVICE_ID_PATTERNS], count: 0 }
    }

    /// [`DEFAULT_DEVICE_ID_PATTERNS`], built at compile time: a copy of a constant, so that
    /// `DriverEntry` (`Config::new`) keeps no pattern-building temporaries on its stack.
    #[must_use]
    pub const fn defaults() -> Self {
        DEFAULTS
    }

    /// Adds a pattern given as UTF-16 (as the registry holds it).
    ///
    /// # Errors
    /// [`PatternError`] when the pattern is empty, too long, contains a NUL, or the set is full.
    pub fn push_utf16(&mut self, pattern: &[u16]) -> Result<(), PatternError> {
        if pattern.is_empty() {
            return Err(PatternError::Empty);
        }
        if pattern.len() > MAX_PATTERN_UNITS {
            return Err(PatternError::TooLong);
        }
        if pattern.contains(&0) {
            return Err(PatternError::InvalidCharacter);
        }
        let slot = self.patterns.get_mut(self.count).ok_or(PatternError::TooMany)?;
        let mut stored = DeviceIdPattern::EMPTY;
        for (to, from) in stored.units.iter_mut().zip(pattern) {
            *to = *from;
        }
        stored.len = pattern.len();
        *slot = stored;
        self.count = self.count.saturating_add(1);
        Ok(())
    }

    /// Adds an ASCII pattern.
    ///
    /// # Errors
    /// As [`Self::push_utf16`], and [`PatternError::InvalidCharacter`] for non-ASCII text.
    pub fn push_str(&mut self, pattern: &str) -> Result<(), PatternError> {
        if !pattern.is_ascii() {
            return Err(PatternError::InvalidCharacter);
        }
        let mut units = [0u16; MAX_PATTERN_UNITS];
        if pattern.len() > MAX_PATTERN_UNITS {
            return Err(PatternError::TooLong);
        }
        for (to, from) in units.iter_mut().zip(pattern.bytes()) {
            *to = u16::from(from);
        }
        self.push_utf16(units.get(..pattern.len()).unwrap_or(&[]))
    }

    /// The patterns held.
    pub fn iter(&self) -> impl Iterator<Item = &DeviceIdPattern> {
        self.patterns.iter().take(self.count)
    }

    /// How many patterns are held.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.count
    }

    /// Whether no pattern is held.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether any pattern matches `id`. Any IRQL (no allocation, bounded work).
    #[must_use]
    pub fn matches(&self, id: &[u16]) -> bool {
        self.iter().any(|pattern| pattern.matches(id))
    }
}

impl Default for DeviceIdPatterns {
    fn default() -> Self {
        Self::defaults()
    }
}

const fn fold(unit: u16) -> u16 {
    if unit >= 0x61 && unit <= 0x7A { unit.wrapping_sub(0x20) } else { unit }
}

const fn is_hex_digit(unit: u16) -> bool {
    matches!(unit, 0x30..=0x39 | 0x41..=0x46 | 0x61..=0x66)
}

const fn unit_matches(pattern: u16, unit: u16) -> bool {
    match pattern {
        0x3F => true,                        // '?'
        0x23 => is_hex_digit(unit),          // '#'
        0x25 => matches!(unit, 0x30..=0x39), // '%'
        _ => fold(pattern) == fold(unit),
    }
}

/// Glob match without recursion or allocation: O(pattern × id) in the worst case.
fn glob_match(pattern: &[u16], id: &[u16]) -> bool {
    const STAR: u16 = 0x2A;
    let (mut p, mut i) = (0usize, 0usize);
    // Where to resume after the last `*`: (pattern index after it, id index it now covers to).
    let mut resume: Option<(usize, usize)> = None;
    while let Some(&unit) = id.get(i) {
        match pattern.get(p) {
            Some(&STAR) => {
                p = p.saturating_add(1);
                resume = Some((p, i));
            }
            Some(&expected) if unit_matches(expected, unit) => {
                p = p.saturating_add(1);
                i = i.saturating_add(1);
            }
            _ => match resume {
                Some((after_star, covered)) => {
                    let covered = covered.saturating_add(1);
                    resume = Some((after_star, covered));
                    p = after_star;
                    i = covered;
                }
                None => return false,
            },
        }
    }
    pattern.get(p..).is_some_and(|rest| rest.iter().all(|&unit| unit == STAR))
}

/// How many device ids [`DeviceIdLog`] keeps.
pub const DEVICE_ID_LOG_ENTRIES: usize = 16;
/// The longest device id [`DeviceIdLog`] keeps, in UTF-16 code units (longer ids are truncated).
pub const DEVICE_ID_LOG_UNITS: usize = 64;

/// One logged device id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedDeviceId {
    units: [u16; DEVICE_ID_LOG_UNITS],
    len: usize,
    /// Whether the PEP accepted the device.
    pub accepted: bool,
    /// Whether the id was longer than [`DEVICE_ID_LOG_UNITS`] and was truncated.
    pub truncated: bool,
}

impl LoggedDeviceId {
    const EMPTY: Self =
        Self { units: [0; DEVICE_ID_LOG_UNITS], len: 0, accepted: false, truncated: false };

    /// The id's UTF-16 code units (truncated to [`DEVICE_ID_LOG_UNITS`]).
    #[must_use]
    pub fn as_units(&self) -> &[u16] {
        self.units.get(..self.len).unwrap_or(&[])
    }
}

/// The last [`DEVICE_ID_LOG_ENTRIES`] device ids PoFx offered, with the decision taken.
///
/// Written from `PEP_DPM_PREPARE_DEVICE` (`PASSIVE_LEVEL`); a writer that finds the log busy
/// skips the entry and counts it in [`Self::dropped`] rather than wait.
pub struct DeviceIdLog {
    busy: AtomicBool,
    entries: core::cell::UnsafeCell<[LoggedDeviceId; DEVICE_ID_LOG_ENTRIES]>,
    next: AtomicU32,
    logged: AtomicU32,
    total: AtomicU32,
    dropped: AtomicU32,
}

// SAFETY: `entries` is only accessed while `busy` is held (acquired with a compare-exchange,
// released with a release store), so no two threads access it at once.
unsafe impl Sync for DeviceIdLog {}

/// The value of an empty log: [`DeviceIdLog::new`]'s body, shared by its `const` and its loom
/// variant.
macro_rules! empty_log {
    () => {
        DeviceIdLog {
            busy: AtomicBool::new(false),
            entries: core::cell::UnsafeCell::new([LoggedDeviceId::EMPTY; DEVICE_ID_LOG_ENTRIES]),
            next: AtomicU32::new(0),
            logged: AtomicU32::new(0),
            total: AtomicU32::new(0),
            dropped: AtomicU32::new(0),
        }
    };
}

impl DeviceIdLog {
    /// An empty log. (`const` except under `cfg(loom)`, whose atomics are not.)
    #[must_use]
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        empty_log!()
    }

    /// An empty log.
    #[must_use]
    #[cfg(loom)]
    pub fn new() -> Self {
        empty_log!()
    }

    /// Records `id` and the decision taken. Never waits. `<= DISPATCH_LEVEL`.
    pub fn record(&self, id: &[u16], accepted: bool) {
        self.total.fetch_add(1, Ordering::Relaxed);
        if self.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let index =
            usize::try_from(self.next.load(Ordering::Relaxed)).unwrap_or(0) % DEVICE_ID_LOG_ENTRIES;
        let mut entry = LoggedDeviceId::EMPTY;
        for (to, from) in entry.units.iter_mut().zip(id) {
            *to = *from;
        }
        entry.len = id.len().min(DEVICE_ID_LOG_UNITS);
        entry.truncated = id.len() > DEVICE_ID_LOG_UNITS;
        entry.accepted = accepted;
        // SAFETY: `busy` is held (acquired above), so this thread has exclusive access.
        let entries = unsafe { &mut *self.entries.get() };
        if let Some(slot) = entries.get_mut(index) {
            *slot = entry;
        }
        let next = u32::try_from((index.saturating_add(1)) % DEVICE_ID_LOG_ENTRIES).unwrap_or(0);
        self.next.store(next, Ordering::Relaxed);
        let logged = self.logged.load(Ordering::Relaxed);
        self.logged.store(logged.saturating_add(1), Ordering::Relaxed);
        self.busy.store(false, Ordering::Release);
    }

    /// Calls `visit` for each logged id, oldest first. Returns `false` (visiting nothing) when a
    /// writer holds the log. `PASSIVE_LEVEL`.
    pub fn for_each(&self, mut visit: impl FnMut(&LoggedDeviceId)) -> bool {
        if self.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return false;
        }
        // SAFETY: `busy` is held (acquired above), so no writer touches the entries.
        let entries = unsafe { &*self.entries.get() };
        let start = usize::try_from(self.next.load(Ordering::Relaxed)).unwrap_or(0);
        let seen = usize::try_from(self.logged.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        let count = seen.min(DEVICE_ID_LOG_ENTRIES);
        // Oldest first: when the log has wrapped, the oldest entry is at `start`.
        let first = if seen > DEVICE_ID_LOG_ENTRIES { start } else { 0 };
        for offset in 0..count {
            if let Some(entry) = entries.get((first.wrapping_add(offset)) % DEVICE_ID_LOG_ENTRIES) {
                visit(entry);
            }
        }
        self.busy.store(false, Ordering::Release);
        true
    }

    /// How many device ids were offered in all.
    #[must_use]
    pub fn total(&self) -> u32 {
        self.total.load(Ordering::Relaxed)
    }

    /// How many ids were not logged because the log was busy.
    #[must_use]
    pub fn dropped(&self) -> u32 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Default for DeviceIdLog {
    fn default() -> Self {
        Self::new()
    }
}
