//! Device-id `UNICODE_STRING`s in exact-size memory.
//!
//! Well-formed, or malformed the ways a structure can be malformed without lying about its
//! memory: odd or short lengths, NULL or misaligned buffers, a misaligned or NULL string.

use arbitrary::Arbitrary;

use crate::input::IdSpec;
use crate::region::Region;

/// How the string is laid out.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringShape {
    /// `Length` = 2 × units, buffer of exactly that many bytes.
    Exact,
    /// `Length` one byte more (an odd byte count), buffer of exactly `Length` bytes.
    OddLength,
    /// `Length` this many bytes shorter than the units (the buffer still exactly `Length`).
    Short(u8),
    /// A NULL `Buffer` with the length of the units.
    NullBuffer,
    /// A `Buffer` at an odd address (one byte into its allocation).
    MisalignedBuffer,
    /// The `UNICODE_STRING` itself at an address that is not 8-aligned.
    MisalignedString(u8),
    /// `DeviceId` = NULL.
    NullString,
}

/// A device-id string to put in a DPM structure.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct StringSpec {
    /// The id.
    pub id: IdSpec,
    /// Its layout.
    pub shape: StringShape,
    /// `MaximumLength` (never read by a correct engine: arbitrary).
    pub maximum_length: u16,
}

/// A `UNICODE_STRING` and its buffer, each in exact-size memory; keeps both alive.
#[derive(Debug)]
pub struct DeviceString {
    string: Option<Region>,
    buffer: Option<Region>,
    pointer: *const u8,
}

impl DeviceString {
    /// A well-formed string holding `units`.
    #[must_use]
    pub fn well_formed(units: &[u16]) -> Self {
        Self::build(units, StringShape::Exact, 0)
    }

    /// The string `spec` describes.
    #[must_use]
    pub fn from_spec(spec: &StringSpec) -> Self {
        Self::build(&spec.id.units(), spec.shape, spec.maximum_length)
    }

    fn build(units: &[u16], shape: StringShape, maximum_length: u16) -> Self {
        if shape == StringShape::NullString {
            return Self { string: None, buffer: None, pointer: std::ptr::null() };
        }
        let bytes: Vec<u8> = units.iter().flat_map(|unit| unit.to_le_bytes()).collect();
        let full = bytes.len().min(usize::from(u16::MAX) - 1);
        let length = match shape {
            StringShape::OddLength => full + 1,
            StringShape::Short(cut) => full.saturating_sub(usize::from(cut)),
            _ => full,
        };
        let buffer_offset = usize::from(shape == StringShape::MisalignedBuffer);
        let buffer = (length > 0 && shape != StringShape::NullBuffer)
            .then(|| Region::new(length, buffer_offset, &bytes, 0x7B));
        let buffer_address = buffer.as_ref().map_or(0, |region| region.pointer().addr());
        let string_offset = match shape {
            StringShape::MisalignedString(offset) => usize::from(offset % 7) + 1,
            _ => 0,
        };
        let mut string = Region::new(16, string_offset, &[], 0);
        let length = u16::try_from(length).unwrap_or(u16::MAX);
        string.put(0, &length.to_le_bytes());
        string.put(2, &maximum_length.to_le_bytes());
        string.put(8, &buffer_address.to_le_bytes());
        let pointer = string.pointer().cast_const();
        Self { string: Some(string), buffer, pointer }
    }

    /// The `PCUNICODE_STRING` (NULL for [`StringShape::NullString`]).
    #[must_use]
    pub const fn pointer(&self) -> *const u8 {
        self.pointer
    }

    /// Snapshot of the string and its buffer, to check the engine did not write them.
    #[must_use]
    pub fn snapshot(&self) -> (Vec<u8>, Vec<u8>) {
        (
            self.string.as_ref().map(|region| region.bytes().to_vec()).unwrap_or_default(),
            self.buffer.as_ref().map(|region| region.bytes().to_vec()).unwrap_or_default(),
        )
    }

    /// Panics if the engine wrote the string or its buffer since `before`.
    ///
    /// # Panics
    /// As described.
    pub fn assert_unchanged(&self, before: &(Vec<u8>, Vec<u8>)) {
        if let Some(string) = &self.string {
            string.assert_unchanged_outside(&before.0, 0..0, "device-id UNICODE_STRING");
        }
        if let Some(buffer) = &self.buffer {
            buffer.assert_unchanged_outside(&before.1, 0..0, "device-id buffer");
        }
    }
}
