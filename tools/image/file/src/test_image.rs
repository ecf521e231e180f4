//! A small PE32+ image built in memory, for unit tests (this crate's, and with the `test-image`
//! feature those of the crates that read images).

/// Writes `bytes` at `offset` of `image`.
pub fn put(image: &mut [u8], offset: usize, bytes: &[u8]) {
    image[offset..offset + bytes.len()].copy_from_slice(bytes);
}

/// The file offset of `rva` in [`image`]'s `.rdata` (RVA 0x2000, file offset 0x600).
#[must_use]
pub const fn rdata(rva: usize) -> usize {
    rva - 0x2000 + 0x600
}

/// A small PE32+ image of `machine`: `.text` (RVA 0x1000, `code`) and `.rdata` (RVA 0x2000).
///
/// `.rdata` holds one import (`ntoskrnl.exe!KeBugCheckEx`, IAT at 0x2060), one `.pdata` entry
/// (0x1000..0x1003) and one relocation block (DIR64 at 0x20F0, then padding).
#[must_use]
pub fn image(machine: u16, code: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0u8; 0xA00];
    put(&mut bytes, 0, b"MZ");
    put(&mut bytes, 0x3C, &0x80u32.to_le_bytes());
    put(&mut bytes, 0x80, b"PE\0\0");
    let coff = 0x84;
    put(&mut bytes, coff, &machine.to_le_bytes());
    put(&mut bytes, coff + 2, &2u16.to_le_bytes());
    put(&mut bytes, coff + 16, &240u16.to_le_bytes());
    let optional = coff + 20;
    put(&mut bytes, optional, &0x20Bu16.to_le_bytes());
    put(&mut bytes, optional + 16, &0x1000u32.to_le_bytes()); // AddressOfEntryPoint
    put(&mut bytes, optional + 24, &0x1_4000_0000u64.to_le_bytes()); // ImageBase
    put(&mut bytes, optional + 32, &0x1000u32.to_le_bytes()); // SectionAlignment
    put(&mut bytes, optional + 36, &0x200u32.to_le_bytes()); // FileAlignment
    put(&mut bytes, optional + 56, &0x2800u32.to_le_bytes()); // SizeOfImage
    put(&mut bytes, optional + 60, &0x400u32.to_le_bytes()); // SizeOfHeaders
    put(&mut bytes, optional + 108, &16u32.to_le_bytes()); // NumberOfRvaAndSizes
    let directory = |index: usize| optional + 112 + 8 * index;
    put(&mut bytes, directory(1), &[0x00, 0x20, 0, 0, 40, 0, 0, 0]); // import
    let pdata_size = if machine == 0xAA64 { 8 } else { 12 };
    put(&mut bytes, directory(3), &[0x00, 0x21, 0, 0, pdata_size, 0, 0, 0]); // exception
    put(&mut bytes, directory(5), &[0x00, 0x22, 0, 0, 12, 0, 0, 0]); // base relocations
    let table = optional + 240;
    let section = |bytes: &mut Vec<u8>, at: usize, name: &[u8], fields: [u32; 4], flags: u32| {
        put(bytes, at, name);
        for (index, field) in fields.iter().enumerate() {
            put(bytes, at + 8 + 4 * index, &field.to_le_bytes());
        }
        put(bytes, at + 36, &flags.to_le_bytes());
    };
    section(&mut bytes, table, b".text", [0x20, 0x1000, 0x200, 0x400], 0x6000_0020);
    section(&mut bytes, table + 40, b".rdata", [0x300, 0x2000, 0x400, 0x600], 0xC000_0040);
    put(&mut bytes, 0x400, code);
    // The import descriptor: ILT 0x2040, name 0x2080, IAT 0x2060; then a zero one.
    put(&mut bytes, rdata(0x2000), &0x2040u32.to_le_bytes());
    put(&mut bytes, rdata(0x200C), &0x2080u32.to_le_bytes());
    put(&mut bytes, rdata(0x2010), &0x2060u32.to_le_bytes());
    put(&mut bytes, rdata(0x2040), &0x2090u64.to_le_bytes());
    put(&mut bytes, rdata(0x2060), &0x2090u64.to_le_bytes());
    put(&mut bytes, rdata(0x2080), b"ntoskrnl.exe\0");
    put(&mut bytes, rdata(0x2092), b"KeBugCheckEx\0");
    for (index, word) in [0x1000u32, 0x1003, 0x2120].iter().enumerate() {
        put(&mut bytes, rdata(0x2100 + 4 * index), &word.to_le_bytes());
    }
    put(&mut bytes, rdata(0x2200), &0x2000u32.to_le_bytes());
    put(&mut bytes, rdata(0x2204), &12u32.to_le_bytes());
    put(&mut bytes, rdata(0x2208), &(0xA000u16 | 0x0F0).to_le_bytes());
    bytes
}
