//! ARM64 unwind data and structured exception dispatch, written from the documented format
//! (learn.microsoft.com, "ARM64 exception handling"): .pdata entries {`BeginAddress`,
//! `UnwindData`}, packed unwind data (Flag 1 or 2) and .xdata records (header, epilog scopes,
//! unwind codes, exception handler RVA and its data), and the scope table
//! `__C_specific_handler` reads (as on x64: [`seh::scope_table`]).
//!
//! Packed unwind data is expanded into the unwind codes the documentation says it is equivalent
//! to, so one interpreter unwinds both forms. A frame is an [`Arm64Registers`]: PC, SP and the
//! non-volatile general registers x19..x30 (x29 the frame pointer, x30 the link register); SP
//! kept unbounded (`i128`): outside [0, 2^64) only after a corrupt frame.

use std::sync::Arc;

use crate::seh::{
    self, Dispatch, Failure, Frame, FrameWalk, Handler, ImageView, Memory, UnwindError, u32_of,
    u64_at, wrap,
};

/// The unwind code `end`.
pub const END: u8 = 0xE4;
/// The unwind code `end_c` (the end of a chained scope's codes).
pub const END_C: u8 = 0xE5;
/// The first of the non-volatile registers a frame tracks (x19).
pub const FIRST_NONVOLATILE: u32 = 19;
/// The link register's number (x30).
const LR: u32 = 30;
/// The frame pointer's number (x29).
const FP: u32 = 29;

/// One .pdata entry, decoded: [begin, end), the unwind codes (packed data expanded), the
/// epilogues as (start RVA, index of their first code), the exception handler's RVA and the
/// RVA of its data (None without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// The function's first RVA.
    pub begin: u32,
    /// The RVA after its last instruction.
    pub end: u64,
    /// The .pdata entry's second word.
    pub unwind: u32,
    /// Whether the entry is packed unwind data (Flag 1 or 2).
    pub packed: bool,
    /// The unwind codes, in unwind order.
    pub codes: Vec<u8>,
    /// The epilogues: (start RVA, which a corrupt record can put below 0; index of the first
    /// code).
    pub epilogues: Vec<(i64, usize)>,
    /// The exception handler's RVA.
    pub handler: Option<u32>,
    /// The RVA of the handler's data (the scope table of `__C_specific_handler`).
    pub handler_data: Option<u64>,
}

impl Function {
    /// Bytes of stack the function allocates: the largest allocation its prologue's or any
    /// epilogue's codes describe (with a frame pointer, LLVM's prologue codes omit the
    /// allocation made after setting it; the epilogue's undo it).
    ///
    /// # Errors
    ///
    /// An [`UnwindError`] for an unknown unwind code.
    pub fn frame(&self) -> Result<u64, UnwindError> {
        if self.packed {
            return Ok(u64::from(self.unwind >> 23) * 16); // FrameSize
        }
        let mut frame = frame_of_codes(&self.codes, 0, self.unwind)?;
        for &(_, index) in &self.epilogues {
            frame = frame.max(frame_of_codes(&self.codes, index, self.unwind)?);
        }
        Ok(frame)
    }
}

/// (`BeginAddress`, `UnwindData`) of each 8-byte .pdata entry, sorted by address.
///
/// # Errors
///
/// An [`UnwindError`] when the size is not a multiple of 8.
pub fn decode_pdata(data: &[u8]) -> Result<Vec<(u32, u32)>, UnwindError> {
    if !data.len().is_multiple_of(8) {
        return Err(UnwindError(format!(".pdata size {} is not a multiple of 8", data.len())));
    }
    let mut entries: Vec<(u32, u32)> =
        data.chunks_exact(8).map(|entry| (u32_of(entry, 0), u32_of(entry, 4))).collect();
    entries.sort_unstable();
    Ok(entries)
}

/// The .pdata entry (`begin`, `unwind`) decoded; `read(rva, buffer)` reads the image.
///
/// # Errors
///
/// An [`UnwindError`] for Flag 3, an .xdata version other than 0 or packed data not decoded;
/// `read`'s failure.
pub fn decode_function<E, R>(begin: u32, unwind: u32, read: &mut R) -> Result<Function, E>
where
    E: From<UnwindError>,
    R: FnMut(u64, &mut [u8]) -> Result<(), E>,
{
    let flag = unwind & 3;
    if flag == 1 || flag == 2 {
        let length = u64::from((unwind >> 2) & 0x7FF) * 4;
        let (codes, epilogue) = packed_codes(unwind)?;
        let end = u64::from(begin) + length;
        let epilogues =
            epilogue.map(|(index, size)| (wide(end) - 4 * wide(size), index)).into_iter().collect();
        return Ok(Function {
            begin,
            end,
            unwind,
            packed: true,
            codes,
            epilogues,
            handler: None,
            handler_data: None,
        });
    }
    if flag == 3 {
        return Err(UnwindError(format!(".pdata entry {begin:#x}: Flag 3 is reserved")).into());
    }
    let xdata = u64::from(unwind);
    let header = read_u32(read, xdata)?;
    let length = u64::from(header & 0x3FFFF) * 4;
    let version = (header >> 18) & 3;
    if version != 0 {
        return Err(UnwindError(format!(".xdata at {unwind:#x}: version {version}")).into());
    }
    let has_handler = (header >> 20) & 1 != 0;
    let single = (header >> 21) & 1 != 0;
    let (mut epilog_count, mut words) = ((header >> 22) & 0x1F, header >> 27);
    let mut cursor = xdata + 4;
    if epilog_count == 0 && words == 0 {
        let extended = read_u32(read, cursor)?;
        (epilog_count, words) = (extended & 0xFFFF, (extended >> 16) & 0xFF);
        cursor += 4;
    }
    let mut scopes = Vec::new();
    if !single {
        if epilog_count != 0 {
            scopes = vec![0; 4 * epilog_count as usize];
            read(cursor, &mut scopes)?;
        }
        cursor += 4 * u64::from(epilog_count);
    }
    let mut codes = Vec::new();
    if words != 0 {
        codes = vec![0; 4 * words as usize];
        read(cursor, &mut codes)?;
    }
    cursor += 4 * u64::from(words);
    let end = u64::from(begin) + length;
    let epilogues = if single {
        // One epilogue, at the end of the function: its codes from index `epilog_count`, one
        // instruction each up to its end (the `ret`).
        let index = epilog_count as usize;
        let size = instruction_count(&codes, index) + 1;
        vec![(wide(end) - 4 * wide(size), index)]
    } else {
        scopes
            .chunks_exact(4)
            .map(|word| {
                let word = u32_of(word, 0);
                (i64::from(begin) + i64::from(word & 0x3FFFF) * 4, (word >> 22) as usize)
            })
            .collect()
    };
    let mut function = Function {
        begin,
        end,
        unwind,
        packed: false,
        codes,
        epilogues,
        handler: None,
        handler_data: None,
    };
    if has_handler {
        function.handler = Some(read_u32(read, cursor)?);
        function.handler_data = Some(cursor + 4);
    }
    Ok(function)
}

/// The little-endian u32 `read` gives at `rva`.
fn read_u32<E, R>(read: &mut R, rva: u64) -> Result<u32, E>
where
    R: FnMut(u64, &mut [u8]) -> Result<(), E>,
{
    let mut bytes = [0; 4];
    read(rva, &mut bytes)?;
    Ok(u32::from_le_bytes(bytes))
}

/// `value` as a signed 64-bit number (every value here is far below 2^63).
fn wide(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// One unwind code of a packed prologue: one or two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Code {
    /// The bytes (the second unused in a one-byte code).
    bytes: [u8; 2],
    /// 1 or 2.
    length: usize,
}

impl Code {
    /// A one-byte code.
    const fn one(byte: u32) -> Self {
        Self { bytes: [byte_of(byte), 0], length: 1 }
    }

    /// A two-byte code.
    const fn two(first: u32, second: u32) -> Self {
        Self { bytes: [byte_of(first), byte_of(second)], length: 2 }
    }

    /// The code's bytes.
    fn bytes(&self) -> &[u8] {
        self.bytes.get(..self.length).unwrap_or_default()
    }
}

/// The low byte of `value` (the byte itself: the packed expansion's values all lie in 0..256).
const fn byte_of(value: u32) -> u8 {
    value.to_le_bytes()[0]
}

/// Where a packed prologue's next store goes: the first store pre-decrements SP by the save
/// area (at `save_size`, pre-indexed), the others store at `offset`.
const fn stored(first: &mut bool, save_size: u32, offset: u32) -> (u32, u32) {
    if *first {
        *first = false;
        (save_size, 1)
    } else {
        (offset, 0)
    }
}

/// Packed unwind data expanded: the codes and the epilogue (index of its first code, its length
/// in instructions including the `ret`; None for Flag 2).
pub type Packed = (Vec<u8>, Option<(usize, usize)>);

/// The unwind codes packed unwind data stands for (the documentation's table of the canonical
/// prologue, listed in unwind order, then `end`), and its epilogue as (index of its first code,
/// its length in instructions including the `ret`), None for Flag 2 (a fragment without
/// prologue or epilogue).
///
/// # Errors
///
/// An [`UnwindError`] for packed data this does not decode (CR 2) or that contradicts itself.
pub fn packed_codes(unwind: u32) -> Result<Packed, UnwindError> {
    let flag = unwind & 3;
    let reg_f = (unwind >> 13) & 7;
    let reg_i = (unwind >> 16) & 0xF;
    let homes = (unwind >> 20) & 1;
    let chain = (unwind >> 21) & 3;
    let frame = (unwind >> 23) * 16;
    let refused = |what: &str| UnwindError(format!("packed unwind data {unwind:#x}: {what}"));
    if chain == 2 {
        return Err(refused("CR 2 (PAC) is not decoded"));
    }
    let int_size = 8 * reg_i + if chain == 1 { 8 } else { 0 };
    let fp_size = 8 * reg_f + if reg_f == 0 { 0 } else { 8 };
    let save_size = (int_size + fp_size + 64 * homes + 0xF) & !0xF;
    let locals =
        frame.checked_sub(save_size).ok_or_else(|| refused("FrameSize below the save area"))?;
    let mut prologue = Vec::new(); // in execution order
    let mut first = true;
    // 1-2: x19.. in pairs (the last alone), LR after them with CR 1 (entry `reg_i`).
    let count = reg_i + u32::from(chain == 1);
    let is_lr = |entry: u32| chain == 1 && entry == reg_i;
    let (mut offset, mut index) = (0, 0);
    while index < count {
        let pair = (count - index).min(2);
        let (at, pre) = stored(&mut first, save_size, offset);
        let z = if pre == 1 { (at / 8).wrapping_sub(1) } else { at / 8 };
        if pair == 2 && is_lr(index + 1) {
            // save_lrpair, never pre-indexed
            if pre == 1 {
                return Err(refused("CR 1 with one register"));
            }
            prologue
                .push(Code::two(0xD6 | ((index / 2) >> 2), (((index / 2) & 3) << 6) | (at / 8)));
        } else if pair == 2 {
            prologue.push(Code::two(0xC8 | (pre << 2) | (index >> 2), ((index & 3) << 6) | z));
        } else {
            let reg = if is_lr(index) { 11 } else { index }; // x30: 19 + 11
            prologue.push(if pre == 1 {
                Code::two(0xD4 | (reg >> 3), ((reg & 7) << 5) | z)
            } else {
                Code::two(0xD0 | (reg >> 2), ((reg & 3) << 6) | z)
            });
        }
        offset += 8 * pair;
        index += pair;
    }
    // 3: d8.. in pairs (the last alone), after the integer registers.
    let count_f = if reg_f == 0 { 0 } else { reg_f + 1 };
    let (mut offset, mut index) = (int_size, 0);
    while index < count_f {
        let alone = index + 1 == count_f;
        let (at, pre) = stored(&mut first, save_size, offset);
        let z = if pre == 1 { (at / 8).wrapping_sub(1) } else { at / 8 };
        prologue.push(match (alone, pre == 1) {
            (true, true) => Code::two(0xDE, (index << 5) | z),
            (true, false) => Code::two(0xDC | (index >> 2), ((index & 3) << 6) | z),
            (false, _) => Code::two(0xD8 | (pre << 1) | (index >> 2), ((index & 3) << 6) | z),
        });
        offset += if alone { 8 } else { 16 };
        index += if alone { 1 } else { 2 };
    }
    // 4: x0..x7 homed (nops for the unwinder).
    if homes != 0 {
        if first {
            return Err(refused("H without saved registers"));
        }
        prologue.extend([Code::one(0xE3); 4]);
    }
    // 5-8: the locals, the frame chain.
    if chain == 3 && locals < 16 {
        return Err(refused("CR 3 without room for x29, lr"));
    }
    if chain == 3 && locals <= 512 {
        prologue.push(Code::one(0x80 | (locals / 8 - 1))); // stp x29,lr,[sp,#-L]!
        prologue.push(Code::one(0xE1)); // mov x29, sp
    } else {
        let mut remaining = locals;
        if remaining > 4080 {
            prologue.push(alloc(4080));
            remaining -= 4080;
        }
        if remaining != 0 {
            prologue.push(alloc(remaining));
        }
        if chain == 3 {
            prologue.push(Code::one(0x40)); // stp x29,lr,[sp,#0]
            prologue.push(Code::two(0xE2, 0)); // add x29, sp, #0
        }
    }
    let mut codes: Vec<u8> = prologue.iter().rev().flat_map(Code::bytes).copied().collect();
    codes.push(END);
    if flag == 2 {
        return Ok((codes, None));
    }
    // The epilogue undoes the prologue in the same order, but for `mov x29, sp` and the homed
    // registers (not restored): its codes follow the prologue's.
    let start = codes.len();
    let mut length = 1;
    for code in prologue.iter().rev() {
        if *code != Code::one(0xE1) && *code != Code::one(0xE3) {
            codes.extend_from_slice(code.bytes());
            length += 1;
        }
    }
    codes.push(END);
    Ok((codes, Some((start, length))))
}

/// `alloc_s` or `alloc_m` of `size` bytes.
const fn alloc(size: u32) -> Code {
    let units = size / 16;
    if units < 0x20 {
        Code::one(units) // alloc_s
    } else {
        Code::two(0xC0 | (units >> 8), units & 0xFF) // alloc_m
    }
}

/// Bytes of the unwind code that starts with `code`.
#[must_use]
pub const fn code_size(code: u8) -> usize {
    match code {
        0xC0..=0xDF | 0xE2 => 2,
        0xE0 => 4,
        0xE7 => 3,
        0xF8..=0xFB => (code - 0xF6) as usize, // reserved, with 1 to 4 operand bytes
        _ => 1,
    }
}

/// The instructions the codes from `index` describe, up to their end.
#[must_use]
pub fn instruction_count(codes: &[u8], mut index: usize) -> usize {
    let mut count = 0;
    while let Some(&code) = codes.get(index) {
        if code == END || code == END_C {
            break;
        }
        count += 1;
        index += code_size(code);
    }
    count
}

/// The big-endian number in `codes[from..to]`, of the bytes there are (a range past the end of
/// `codes` is cut short, an empty one reads as 0).
fn big_endian(codes: &[u8], from: usize, to: usize) -> u64 {
    codes.iter().take(to).skip(from).fold(0, |value, byte| (value << 8) | u64::from(*byte))
}

/// Bytes of stack the unwind codes from `index` to the next `end` allocate (`unwind`: the
/// .pdata word, named in the error).
///
/// # Errors
///
/// An [`UnwindError`] for an unknown unwind code.
pub fn frame_of_codes(codes: &[u8], mut index: usize, unwind: u32) -> Result<u64, UnwindError> {
    let mut frame = 0;
    while let Some(&code) = codes.get(index) {
        let operand = u64::from(codes.get(index + 1).copied().unwrap_or(0));
        let small = u64::from(code);
        frame += match code {
            0x00..=0x1F => (small & 0x1F) * 16,                   // alloc_s
            0x20..=0x3F => (small & 0x1F) * 8,                    // save_r19r20_x
            0x40..=0x7F => 0,                                     // save_fplr
            0x80..=0xBF => ((small & 0x3F) + 1) * 8,              // save_fplr_x
            0xC0..=0xC7 => (((small & 0x7) << 8) | operand) * 16, // alloc_m
            0xCC..=0xCF | 0xDA | 0xDB => ((operand & 0x3F) + 1) * 8, // save_regp_x, save_fregp_x
            0xD4 | 0xD5 | 0xDE => ((operand & 0x1F) + 1) * 8,     // save_reg_x, save_freg_x
            0xE0 => big_endian(codes, index + 1, index + 4) * 16, // alloc_l
            END | END_C => break,
            // saves without allocation, set_fp/add_fp, nop, save_next, custom, pac
            0xC8..=0xCB
            | 0xD0..=0xD3
            | 0xD6..=0xD9
            | 0xDC
            | 0xDD
            | 0xDF
            | 0xE1..=0xE3
            | 0xE6..=0xEF
            | 0xFC => 0,
            _ => {
                return Err(UnwindError(format!(
                    "ARM64 .xdata at {unwind:#x}: unknown unwind code {code:#04x}"
                )));
            }
        };
        index += code_size(code);
    }
    Ok(frame)
}

/// An ARM64 frame's registers: PC, SP and x19..x30 (a register outside x19..x30 named by an
/// unwind code is not tracked: its restore is skipped). SP is unbounded (`i128`): outside
/// [0, 2^64) only after a corrupt frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arm64Registers {
    /// PC.
    pc: u64,
    /// SP.
    sp: i128,
    /// x19..x30.
    x: [u64; 12],
}

impl Arm64Registers {
    /// The registers a dispatch starts with: PC, SP and x19..x30 in order.
    #[must_use]
    pub fn new(pc: u64, sp: u64, x19_to_x30: [u64; 12]) -> Self {
        Self { pc, sp: i128::from(sp), x: x19_to_x30 }
    }

    /// PC.
    #[cfg(test)]
    #[must_use]
    pub const fn pc(&self) -> u64 {
        self.pc
    }

    /// SP modulo 2^64 (what the runner writes back).
    #[must_use]
    pub const fn sp(&self) -> u64 {
        wrap(self.sp)
    }

    /// x19..x30, in order.
    #[must_use]
    pub const fn nonvolatile(&self) -> [u64; 12] {
        self.x
    }

    /// Register x`number`, None outside x19..x30.
    #[cfg(test)]
    #[must_use]
    pub fn x(&self, number: u32) -> Option<u64> {
        self.x.get(usize::try_from(number.checked_sub(FIRST_NONVOLATILE)?).ok()?).copied()
    }

    /// The slot of x`number`, None outside x19..x30.
    fn slot(&mut self, number: u32) -> Option<&mut u64> {
        self.x.get_mut(usize::try_from(number.checked_sub(FIRST_NONVOLATILE)?).ok()?)
    }

    /// x29, the frame pointer.
    const fn fp(&self) -> u64 {
        self.x[(FP - FIRST_NONVOLATILE) as usize]
    }

    /// x30, the link register.
    const fn lr(&self) -> u64 {
        self.x[(LR - FIRST_NONVOLATILE) as usize]
    }
}

impl Frame for Arm64Registers {
    fn pc(&self) -> u64 {
        self.pc
    }

    fn set_pc(&mut self, pc: u64) {
        self.pc = pc;
    }
}

/// Restores the registers `numbers` from consecutive doublewords at `address` (one skipped,
/// unread, when the frame does not track it).
fn restore<M: Memory + ?Sized>(
    regs: &mut Arm64Registers,
    memory: &mut M,
    numbers: &[u32],
    address: i128,
) -> Result<(), Failure<M::Error>> {
    for (offset, &number) in (0_i128..).zip(numbers) {
        if regs.slot(number).is_some() {
            let value = u64_at(memory, address + 8 * offset)?;
            if let Some(slot) = regs.slot(number) {
                *slot = value;
            }
        }
    }
    Ok(())
}

/// Applies the unwind codes from `index` to their end to `regs` (a virtual unwind of one
/// frame's saves and allocations), leaving out the first `skip` (instructions of a prologue
/// not yet executed, or of an epilogue already executed); then the `end`: pc = lr. `unwind`:
/// the .pdata word, named in the error.
///
/// # Errors
///
/// An [`UnwindError`] for a code not decoded; the reader's failure.
pub fn execute<M: Memory + ?Sized>(
    codes: &[u8],
    mut index: usize,
    mut skip: i128,
    regs: &mut Arm64Registers,
    memory: &mut M,
    unwind: u32,
) -> Result<(), Failure<M::Error>> {
    let mut pending_next = 0;
    while let Some(&code) = codes.get(index) {
        let size = code_size(code);
        let operand =
            if size > 1 { u32::from(codes.get(index + 1).copied().unwrap_or(0)) } else { 0 };
        if code == END || code == END_C {
            break;
        }
        if skip != 0 {
            skip -= 1;
            index += size;
            continue;
        }
        let sp = regs.sp;
        let small = u32::from(code);
        // (first register number, address, pre-indexed bytes) of a pair restore
        let mut pair_at = None;
        match code {
            0x00..=0x1F => regs.sp = sp + i128::from(small & 0x1F) * 16, // alloc_s
            0x20..=0x3F => pair_at = Some((19, sp, i128::from(small & 0x1F) * 8)), // save_r19r20_x
            0x40..=0x7F => restore(regs, memory, &[FP, LR], sp + i128::from(small & 0x3F) * 8)?, // save_fplr
            0x80..=0xBF => {
                // save_fplr_x
                restore(regs, memory, &[FP, LR], sp)?;
                regs.sp = sp + (i128::from(small & 0x3F) + 1) * 8;
            }
            0xC0..=0xC7 => regs.sp = sp + i128::from(((small & 7) << 8) | operand) * 16, // alloc_m
            0xC8..=0xCB => {
                // save_regp
                let first = 19 + (((small & 3) << 2) | (operand >> 6));
                pair_at = Some((first, sp + i128::from(operand & 0x3F) * 8, 0));
            }
            0xCC..=0xCF => {
                // save_regp_x
                let first = 19 + (((small & 3) << 2) | (operand >> 6));
                pair_at = Some((first, sp, (i128::from(operand & 0x3F) + 1) * 8));
            }
            0xD0..=0xD3 => {
                // save_reg
                let register = 19 + (((small & 3) << 2) | (operand >> 6));
                restore(regs, memory, &[register], sp + i128::from(operand & 0x3F) * 8)?;
            }
            0xD4 | 0xD5 => {
                // save_reg_x
                let register = 19 + (((small & 1) << 3) | (operand >> 5));
                restore(regs, memory, &[register], sp)?;
                regs.sp = sp + (i128::from(operand & 0x1F) + 1) * 8;
            }
            0xD6 | 0xD7 => {
                // save_lrpair
                let register = 19 + 2 * (((small & 1) << 2) | (operand >> 6));
                restore(regs, memory, &[register, LR], sp + i128::from(operand & 0x3F) * 8)?;
            }
            // save_fregp_x: d8..d15 are not tracked
            0xDA | 0xDB => regs.sp = sp + (i128::from(operand & 0x3F) + 1) * 8,
            0xDE => regs.sp = sp + (i128::from(operand & 0x1F) + 1) * 8, // save_freg_x
            0xD8 | 0xD9 | 0xDC | 0xDD | 0xE3 | 0xFC => {} // save_fregp, save_freg, nop, pac_sign_lr
            0xE0 => regs.sp = sp + i128::from(big_endian(codes, index + 1, index + 4)) * 16, // alloc_l
            0xE1 => regs.sp = i128::from(regs.fp()), // set_fp
            0xE2 => regs.sp = i128::from(regs.fp()) - i128::from(operand) * 8, // add_fp
            0xE6 => pending_next += 1, // save_next: one more pair after the next pair save
            _ => {
                return Err(UnwindError(format!(
                    "ARM64 .xdata at {unwind:#x}: unwind code {code:#04x} not decoded"
                ))
                .into());
            }
        }
        if let Some((first, address, advance)) = pair_at {
            for pair in 0..=pending_next {
                let number = first + 2 * pair;
                restore(regs, memory, &[number, number + 1], address + 16 * i128::from(pair))?;
            }
            regs.sp = sp + advance;
        }
        if code != 0xE6 {
            pending_next = 0;
        }
        index += size;
    }
    regs.pc = regs.lr();
    Ok(())
}

/// Virtual unwinding and `__C_specific_handler` scope lookup over one mapped ARM64 image: the
/// same interface as [`seh::Unwinder`] (x64), with frames of PC, SP and x19..x30.
#[derive(Debug, Clone)]
pub struct Unwinder {
    /// The mapped image.
    image: ImageView,
    /// The image's .pdata entries (`BeginAddress`, `UnwindData`), sorted.
    pdata: Vec<(u32, u32)>,
    /// The RVAs of `__C_specific_handler` (the map's symbols of that name).
    c_specific_handler: Vec<u64>,
    /// The entries decoded so far, by index in `pdata` (of entries with equal begins, the
    /// lookup's bisection only ever picks the last).
    decoded: Vec<Option<Arc<Function>>>,
}

impl Unwinder {
    /// The unwinder of the image mapped at `base`, `size` bytes, with its .pdata entries (in
    /// any order, as [`decode_pdata`] yields them or not: sorted here) and the RVAs of
    /// `__C_specific_handler`. The memory is passed to each call.
    #[must_use]
    pub fn new(base: u64, size: u64, pdata: &[(u32, u32)], c_specific_handler: &[u64]) -> Self {
        let mut pdata = pdata.to_vec();
        pdata.sort_unstable();
        Self {
            image: ImageView { base, size },
            decoded: vec![None; pdata.len()],
            pdata,
            c_specific_handler: c_specific_handler.to_vec(),
        }
    }

    /// The decoded .pdata entry whose range holds `rva`, or None (decoded once, then cached).
    ///
    /// # Errors
    ///
    /// The entry's decoding failure (even when `rva` lies past its end); the reader's.
    pub fn function<M: Memory + ?Sized>(
        &mut self,
        rva: u64,
        memory: &mut M,
    ) -> Result<Option<Arc<Function>>, Failure<M::Error>> {
        let Some(index) =
            self.pdata.partition_point(|entry| u64::from(entry.0) <= rva).checked_sub(1)
        else {
            return Ok(None);
        };
        let (Some(&(begin, unwind)), Some(cached)) =
            (self.pdata.get(index), self.decoded.get_mut(index))
        else {
            return Ok(None);
        };
        let function = if let Some(function) = cached {
            Arc::clone(function)
        } else {
            let image = self.image;
            let mut read = |rva, buffer: &mut [u8]| image.read_rva(memory, rva, buffer);
            let function = Arc::new(decode_function(begin, unwind, &mut read)?);
            *cached = Some(Arc::clone(&function));
            function
        };
        Ok((u64::from(function.begin) <= rva && rva < function.end).then_some(function))
    }

    /// One frame: restores `regs` (PC, SP, x19..x30) to the caller's. In the faulting frame
    /// (`first`) the PC may lie in the prologue (only its executed instructions are undone) or
    /// in an epilogue (only those not yet executed are).
    ///
    /// # Errors
    ///
    /// An [`UnwindError`] for a code not decoded; the reader's failure.
    pub fn unwind<M: Memory + ?Sized>(
        &self,
        regs: &mut Arm64Registers,
        function: &Function,
        first: bool,
        memory: &mut M,
    ) -> Result<(), Failure<M::Error>> {
        let pc = i128::from(regs.pc) - i128::from(self.image.base);
        let offset = pc - i128::from(function.begin);
        let codes = &function.codes;
        if first {
            let prologue = i128::from(wide(instruction_count(codes, 0)));
            if offset < 4 * prologue {
                let skip = prologue - offset.div_euclid(4);
                return execute(codes, 0, skip, regs, memory, function.unwind);
            }
            for &(start, index) in &function.epilogues {
                let into = pc - i128::from(start);
                let length = 4 * (i128::from(wide(instruction_count(codes, index))) + 1);
                if (0..length).contains(&into) {
                    return execute(codes, index, into / 4, regs, memory, function.unwind);
                }
            }
        }
        execute(codes, 0, 0, regs, memory, function.unwind)
    }

    /// The language handler's RVA (None without one) and its scope table (empty unless the
    /// handler is `__C_specific_handler`).
    ///
    /// # Errors
    ///
    /// A scope table of too many entries; the reader's failure.
    pub fn scopes<M: Memory + ?Sized>(
        &self,
        function: &Function,
        memory: &mut M,
    ) -> Result<Handler, Failure<M::Error>> {
        let (Some(handler), Some(data)) = (function.handler, function.handler_data) else {
            return Ok((None, Vec::new()));
        };
        if !self.c_specific_handler.contains(&u64::from(handler)) {
            return Ok((Some(handler), Vec::new()));
        }
        let image = self.image;
        let mut read = |rva, buffer: &mut [u8]| image.read_rva(memory, rva, buffer);
        Ok((Some(handler), seh::scope_table(data, &mut read)?))
    }

    /// Finds the `__except` that takes an exception raised at PC: see [`seh::walk`].
    ///
    /// # Errors
    ///
    /// Unwind data that cannot be followed; the reader's failure (see [`Failure`]).
    pub fn dispatch<M: Memory + ?Sized>(
        &mut self,
        regs: &Arm64Registers,
        stop: impl Fn(u64) -> bool,
        memory: &mut M,
    ) -> Result<Dispatch<Arm64Registers>, Failure<M::Error>> {
        seh::walk(self, regs, stop, memory)
    }
}

impl FrameWalk for Unwinder {
    type Registers = Arm64Registers;
    type Function = Arc<Function>;
    const CALL_BYTES: u64 = 4;

    fn image(&self) -> ImageView {
        self.image
    }

    fn c_specific_handler(&self) -> &[u64] {
        &self.c_specific_handler
    }

    fn function<M: Memory + ?Sized>(
        &mut self,
        rva: u64,
        memory: &mut M,
    ) -> Result<Option<Arc<Function>>, Failure<M::Error>> {
        Self::function(self, rva, memory)
    }

    fn scopes<M: Memory + ?Sized>(
        &self,
        function: &Arc<Function>,
        memory: &mut M,
    ) -> Result<Handler, Failure<M::Error>> {
        Self::scopes(self, function, memory)
    }

    /// A leaf without a frame (the faulting one only): the return address is in LR.
    fn leaf<M: Memory + ?Sized>(
        &self,
        regs: &mut Arm64Registers,
        first: bool,
        _memory: &mut M,
    ) -> Result<Option<&'static str>, Failure<M::Error>> {
        if !first {
            return Ok(Some("no unwind data"));
        }
        regs.pc = regs.lr();
        Ok(None)
    }

    fn step<M: Memory + ?Sized>(
        &self,
        regs: &mut Arm64Registers,
        function: &Arc<Function>,
        first: bool,
        memory: &mut M,
    ) -> Result<(), Failure<M::Error>> {
        self.unwind(regs, function, first, memory)
    }
}

#[cfg(test)]
mod tests {
    //! Hand-assembled unwind data: a guard, a packed callee and an .xdata callee (the stack at
    //! the fault as Unicorn left it when their prologues ran), packed words and their
    //! expansion, frame sizes of unwind codes and corrupt data.

    use super::*;
    use crate::seh::tests::{BASE, C_SPECIFIC, Fault, SENTINEL, SIZE, STACK, TestMemory};
    use crate::seh::{Failure, Scope};

    const GUARD: u32 = 0x1000;
    const PACKED: u32 = 0x1040;
    const XDATA: u32 = 0x1080;
    const GUARD_XDATA: u32 = 0x2000;
    const CALLEE_XDATA: u32 = 0x2100;
    /// The packed callee: Flag 1, 8 instructions, `RegI` 2 (x19, x20), CR 3 (x29/LR chained),
    /// `FrameSize` 32 bytes: stp x19,x20,[sp,#-16]!; stp x29,x30,[sp,#-16]!; mov x29,sp.
    const PACKED_WORD: u32 = 1 | 8 << 2 | 2 << 16 | 3 << 21 | 2 << 23;
    const COVERING_CALL: [u32; 4] = [GUARD + 0x10, GUARD + 0x14, 1, GUARD + 0x20];
    const STOP: fn(u64) -> bool = |pc| pc == SENTINEL;

    fn words(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|value| value.to_le_bytes()).collect()
    }

    fn put(image: &mut [u8], rva: u32, bytes: &[u8]) {
        let at = rva as usize;
        image[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// The guard's and the .xdata callee's .xdata, the guard's scope table `scopes` (the code
    /// bytes do not matter to the unwind: the fault's state is given).
    fn image(scopes: &[[u32; 4]]) -> Vec<u8> {
        let mut image = vec![0; usize::try_from(SIZE).unwrap()];
        // The guard: 10 instructions, X (a handler), two epilogue scopes, one code word:
        // set_fp, save_fplr_x 16, end; each epilogue starts at code 1 (save_fplr_x 16, end).
        let header = 0xA | 1 << 20 | 2 << 22 | 1 << 27;
        let mut xdata = words(&[header, 6 | 1 << 22, 8 | 1 << 22]);
        xdata.extend([0xE1, 0x81, 0xE4, 0xE4]);
        xdata.extend(words(&[u32::try_from(C_SPECIFIC).unwrap()]));
        xdata.extend(words(&[u32::try_from(scopes.len()).unwrap()]));
        xdata.extend(scopes.iter().flat_map(|scope| words(scope)));
        put(&mut image, GUARD_XDATA, &xdata);
        // The .xdata callee: 8 instructions, E (one epilogue, its codes from index 2), two
        // code words: add_fp 16, save_fplr 16, save_r19r20_x 32, end.
        let header = 0x8 | 1 << 21 | 2 << 22 | 2 << 27;
        let mut xdata = words(&[header]);
        xdata.extend([0xE2, 0x02, 0x42, 0x24, 0xE4, 0xE4, 0xE4, 0xE4]);
        put(&mut image, CALLEE_XDATA, &xdata);
        image
    }

    fn pdata() -> [(u32, u32); 3] {
        [(GUARD, GUARD_XDATA), (PACKED, PACKED_WORD), (XDATA, CALLEE_XDATA)]
    }

    fn unwinder(c_specific: u64) -> Unwinder {
        Unwinder::new(BASE, SIZE, &pdata(), &[c_specific])
    }

    /// The machine at the fault (the .xdata callee's UDF, two frames below the guard): its
    /// registers and the stack from SP up, as Unicorn left them.
    fn at_fault(scopes: &[[u32; 4]]) -> (TestMemory, Arm64Registers) {
        let mut memory = TestMemory::new(image(scopes));
        let stack = [0x53, 2, 0x80FD0, 0x11054, 0x80FF0, 0x11014, 1, 2, 0x29, SENTINEL];
        for (slot, value) in (0..).zip(stack) {
            memory.set(0x80FB0 + 8 * slot, value);
        }
        let mut x = [0; 12];
        x[..2].copy_from_slice(&[0x53, 0x66]);
        x[10..].copy_from_slice(&[0x80FC0, 0x11054]);
        (memory, Arm64Registers::new(BASE + u64::from(XDATA) + 0x10, 0x80FB0, x))
    }

    fn stack_word(memory: &mut TestMemory, address: u64) -> u64 {
        seh::u64_at(memory, i128::from(address)).unwrap()
    }

    #[test]
    fn fault_two_frames_below_the_guard_resumes_at_its_except() {
        // The .xdata callee faults; the packed caller is unwound, the guard's scope covers its
        // call (matched at the return address - 4); the guard resumes at its __except with
        // its own x19, x20, frame pointer and stack pointer.
        let (mut memory, regs) = at_fault(&[COVERING_CALL]);
        let dispatch = unwinder(C_SPECIFIC).dispatch(&regs, STOP, &mut memory).unwrap();
        let Dispatch::Handled { target, registers } = dispatch else { panic!("{dispatch:?}") };
        assert_eq!(target, BASE + u64::from(GUARD) + 0x20);
        assert_eq!(registers.pc(), target);
        let mut x = [0; 12];
        x[..2].copy_from_slice(&[1, 2]); // x19 from the packed frame, x20 from the .xdata one
        x[10..].copy_from_slice(&[0x80FF0, BASE + u64::from(GUARD) + 0x14]);
        assert_eq!(registers.nonvolatile(), x);
        assert_eq!(registers.sp(), 0x80FF0);
        // The guard's epilogue (ldp x29, x30, [sp], #16; ret) then returns the exception code
        // to the sentinel with its caller's frame pointer and SP = STACK + 0x1000.
        assert_eq!(stack_word(&mut memory, 0x80FF0), 0x29);
        assert_eq!(stack_word(&mut memory, 0x80FF8), SENTINEL);
        assert_eq!(registers.sp() + 16, STACK + 0x1000);
    }

    #[test]
    fn no_covering_scope_is_unhandled() {
        // A scope that does not cover the call (the instruction after it), or none at all:
        // no frame takes the exception, which Windows turns into bugcheck 0x1E.
        for scopes in [&[[GUARD + 0x14, GUARD + 0x18, 1, GUARD + 0x20]][..], &[]] {
            let (mut memory, regs) = at_fault(scopes);
            let dispatch = unwinder(C_SPECIFIC).dispatch(&regs, STOP, &mut memory).unwrap();
            assert_eq!(dispatch.target(), None);
            assert_eq!(dispatch.reason(), "no __except handler in any frame");
        }
    }

    #[test]
    fn a_handler_that_is_not_c_specific_handler_is_unhandled() {
        let mut memory = TestMemory::new(image(&[COVERING_CALL]));
        let regs = Arm64Registers::new(BASE + u64::from(GUARD) + 0x10, STACK, [0; 12]);
        let dispatch = unwinder(0x1F04).dispatch(&regs, STOP, &mut memory).unwrap();
        assert_eq!(dispatch.target(), None);
        assert_eq!(dispatch.reason(), "language handler at rva 0x1f00 is not __C_specific_handler");
    }

    #[test]
    fn packed_unwind_data_expands_to_the_documented_codes() {
        // RegI 2, CR 3, FrameSize 32: save_regp_x x19 (-16), save_fplr_x 16, set_fp; listed in
        // unwind order, then the epilogue without set_fp.
        let (codes, epilogue) = packed_codes(PACKED_WORD).unwrap();
        assert_eq!(codes, [0xE1, 0x81, 0xCC, 0x01, 0xE4, 0x81, 0xCC, 0x01, 0xE4]);
        assert_eq!(epilogue, Some((5, 3)));
        let mut nothing = |_: u64, _: &mut [u8]| -> Result<(), UnwindError> { Ok(()) };
        let function = decode_function(PACKED, PACKED_WORD, &mut nothing).unwrap();
        assert_eq!((function.begin, function.end, function.frame()), (PACKED, 0x1060, Ok(32)));
        assert_eq!(function.epilogues, [(i64::from(PACKED) + 32 - 12, 5)]);
        // RegI 3 with CR 1 (x19/x20, then x21 and LR as a pair), RegF 1 (d8, d9), 16 bytes of
        // locals: save_regp_x x19 (-48), save_lrpair x21 at 16, save_fregp d8 at 32, alloc_s 16.
        let (codes, _) = packed_codes(1 | 4 << 2 | 1 << 13 | 3 << 16 | 1 << 21 | 4 << 23).unwrap();
        let end = codes.iter().position(|&code| code == END).unwrap();
        assert_eq!(codes[..end], [0x01, 0xD8, 0x04, 0xD6, 0x42, 0xCC, 0x05]);
        assert_eq!(
            packed_codes(1 | 2 << 21),
            Err(UnwindError("packed unwind data 0x400001: CR 2 (PAC) is not decoded".to_owned()))
        );
    }

    /// A packed word, its codes in hex, its epilogue.
    type Vector = (u32, &'static str, Option<(usize, usize)>);

    /// (word, codes, epilogue): packed words across the fields the expansion depends on
    /// (`RegI`, `RegF`, `CR`, `H`, `FrameSize`, Flag 2), the codes they expand to and their
    /// epilogue (see [`Packed`]).
    const PACKED_VECTORS: [Vector; 8] = [
        (0x11, "e4e4", Some((1, 1))),
        (0x0101_0029, "01d401e401d401e4", Some((4, 3))),
        (0x0525_6029, "05d888d806d684c882cc09e405d888d806d684c882cc09e4", Some((12, 7))),
        (0x0400_e029, "04d986d904d882da07e404d986d904d882da07e4", Some((10, 6))),
        (0x0a72_0029, "e19de3e3e3e3cc09e49dcc09e4", Some((9, 3))),
        (0x9660_0029, "e20040c02dc0ffe4e20040c02dc0ffe4", Some((8, 5))),
        (0xffe4_002a, "e20040c0fec0ffc882cc03e4", None),
        (0x00a0_0029, "d561e4d561e4", Some((3, 2))),
    ];

    #[test]
    fn packed_vectors_expand_to_their_known_codes() {
        for (word, hex, epilogue) in PACKED_VECTORS {
            let (codes, found) = packed_codes(word).unwrap();
            let text = codes.iter().fold(String::new(), |text, byte| text + &format!("{byte:02x}"));
            assert_eq!((text.as_str(), found), (hex, epilogue), "{word:#x}");
        }
        let refused = |word: u32, what: &str| {
            assert_eq!(
                packed_codes(word),
                Err(UnwindError(format!("packed unwind data {word:#x}: {what}"))),
            );
        };
        refused(1 | 1 << 16 | 1 << 21 | 4 << 23, "CR 1 with one register");
        refused(1 | 3 << 21, "CR 3 without room for x29, lr");
        refused(1 | 4 << 16, "FrameSize below the save area");
        refused(1 | 1 << 20 | 4 << 23, "H without saved registers");
    }

    #[test]
    fn xdata_decoding_of_the_guard_and_the_callee() {
        let memory = image(&[COVERING_CALL]);
        let mut read = |rva: u64, buffer: &mut [u8]| -> Result<(), UnwindError> {
            let at = usize::try_from(rva).unwrap();
            buffer.copy_from_slice(&memory[at..at + buffer.len()]);
            Ok(())
        };
        let guard = decode_function(GUARD, GUARD_XDATA, &mut read).unwrap();
        assert_eq!((guard.end, guard.handler, guard.frame()), (0x1028, Some(0x1F00), Ok(16)));
        assert_eq!(guard.epilogues, [(0x1018, 1), (0x1020, 1)]);
        let scopes = seh::scope_table(guard.handler_data.unwrap(), &mut read).unwrap();
        assert_eq!(scopes, [Scope { begin: 0x1010, end: 0x1014, handler: 1, target: 0x1020 }]);
        let callee = decode_function(XDATA, CALLEE_XDATA, &mut read).unwrap();
        assert_eq!((callee.handler, callee.frame()), (None, Ok(32)));
        assert_eq!(callee.epilogues, [(i64::from(XDATA) + 0x14, 2)]);
    }

    #[test]
    fn fault_in_a_prologue_or_an_epilogue_unwinds_only_what_ran() {
        // In the faulting frame, a pc inside the prologue undoes only the stores already made;
        // a pc inside the epilogue only the restores still to come.
        let mut memory = TestMemory::new(image(&[COVERING_CALL]));
        for (address, value) in [(0x10, 0x119), (0x18, 0x120), (0x20, 0xF9), (0x28, 0x1A)] {
            memory.set(STACK + address, value);
        }
        let mut unwinder = unwinder(C_SPECIFIC);
        let callee = unwinder.function(u64::from(XDATA), &mut memory).unwrap().unwrap();
        let start = |pc: u64| {
            let x: [u64; 12] = std::array::from_fn(|n| 19 + n as u64);
            Arm64Registers::new(BASE + u64::from(XDATA) + pc, STACK + 0x10, x)
        };
        // After `stp x19, x20, [sp, #-32]!` only: x19, x20 back from [sp], sp + 32, pc = LR.
        let mut regs = start(4);
        unwinder.unwind(&mut regs, &callee, true, &mut memory).unwrap();
        let x = |regs: &Arm64Registers, n| regs.x(n).unwrap();
        assert_eq!(
            (x(&regs, 19), x(&regs, 20), regs.sp(), regs.pc()),
            (0x119, 0x120, STACK + 0x30, 30)
        );
        // At the epilogue's `ldp x19, x20, [sp], #32`: x29/LR already restored.
        let mut regs = start(0x18);
        unwinder.unwind(&mut regs, &callee, true, &mut memory).unwrap();
        assert_eq!(
            (x(&regs, 29), x(&regs, 19), regs.sp(), regs.pc()),
            (29, 0x119, STACK + 0x30, 30)
        );
    }

    #[test]
    fn arm64_unwind_codes_add_up_allocations() {
        // add fp (no stack), stp x29/x30 (no stack), save_next, stp x19/x20 pre-indexed by 96.
        assert_eq!(frame_of_codes(&[0xE2, 0x0A, 0x4A, 0xE6, 0x2C, 0xE4], 0, 0), Ok(96));
        // alloc_m 3632 (0xC0E3: 227 * 16), then the same codes; from index 0 of this epilogue.
        assert_eq!(frame_of_codes(&[0xC0, 0xE3, 0x4A, 0xE6, 0x2C, 0xE4], 0, 0), Ok(3632 + 96));
        // save_fplr_x (z = 1: 16 bytes), alloc_s 2 (32 bytes), alloc_l 0x10000 * 16.
        assert_eq!(frame_of_codes(&[0x81, 0x02, 0xE4], 0, 0), Ok(16 + 32));
        assert_eq!(frame_of_codes(&[0xE0, 0x01, 0x00, 0x00, 0xE4], 0, 0), Ok(0x10000 * 16));
        // alloc_l cut short: the number of the operand bytes there are.
        assert_eq!(frame_of_codes(&[0xE0, 0x01], 0, 0), Ok(16));
        // Codes after `end` are not the prologue's.
        assert_eq!(frame_of_codes(&[0xE4, 0x1F], 0, 0), Ok(0));
    }

    #[test]
    fn an_unknown_arm64_unwind_code_is_an_error() {
        assert_eq!(
            frame_of_codes(&[0xF0], 0, 0x10),
            Err(UnwindError("ARM64 .xdata at 0x10: unknown unwind code 0xf0".to_owned()))
        );
    }

    #[test]
    fn pdata_and_xdata_headers_are_checked() {
        assert_eq!(
            decode_pdata(&[0; 12]),
            Err(UnwindError(".pdata size 12 is not a multiple of 8".to_owned()))
        );
        let pdata = decode_pdata(&words(&[0x2000, 5, 0x1000, 7, 0x1000, 6])).unwrap();
        assert_eq!(pdata, [(0x1000, 6), (0x1000, 7), (0x2000, 5)]);
        let mut xdata = image(&[]);
        xdata[0x2102] |= 1 << 2; // version 1
        let mut read = |rva: u64, buffer: &mut [u8]| -> Result<(), UnwindError> {
            let at = usize::try_from(rva).unwrap();
            buffer.copy_from_slice(&xdata[at..at + buffer.len()]);
            Ok(())
        };
        let refused = |result: Result<Function, UnwindError>| result.unwrap_err().0;
        assert_eq!(
            refused(decode_function(0x1000, 0x2103, &mut read)),
            ".pdata entry 0x1000: Flag 3 is reserved"
        );
        assert_eq!(
            refused(decode_function(0x1000, 0x2100, &mut read)),
            ".xdata at 0x2100: version 1"
        );
    }

    #[test]
    fn execute_follows_save_next_and_skips_registers_it_does_not_track() {
        let mut memory = TestMemory::new(Vec::new());
        for slot in 0..8 {
            memory.set(STACK + 8 * slot, 0x100 + slot);
        }
        // save_next, then save_regp x19 at [sp]: x19..x22 from four doublewords.
        let mut regs = Arm64Registers::new(0, STACK, [0; 12]);
        execute(&[0xE6, 0xC8, 0x00, 0xE4], 0, 0, &mut regs, &mut memory, 0).unwrap();
        assert_eq!(regs.nonvolatile()[..4], [0x100, 0x101, 0x102, 0x103]);
        // save_lrpair of "x33" at [sp + 8]: only LR (at sp + 16) is read; end: pc = LR.
        memory.reads.clear();
        execute(&[0xD7, 0xC1, 0xE4], 0, 0, &mut regs, &mut memory, 0).unwrap();
        assert_eq!((regs.x(30), regs.pc()), (Some(0x102), 0x102));
        assert_eq!(memory.reads, [(i128::from(STACK) + 16, 8)]);
        assert_eq!(
            execute(&[0xE7, 0, 0], 0, 0, &mut regs, &mut memory, 0x44),
            Err(Failure::Unwind(UnwindError(
                "ARM64 .xdata at 0x44: unwind code 0xe7 not decoded".to_owned()
            )))
        );
        // add_fp with x29 = 0: SP below 0, where save_fplr then reads (an unbounded address).
        let mut regs = Arm64Registers::new(0, STACK, [0; 12]);
        let result = execute(&[0xE2, 0x04, 0x40, 0xE4], 0, 0, &mut regs, &mut memory, 0);
        assert_eq!(result, Err(Failure::Read(Fault::Unbounded(-32))));
    }

    #[test]
    fn a_caller_without_unwind_data_ends_the_walk() {
        // A leaf without a frame faults (pc = LR), but a caller without unwind data cannot be
        // unwound.
        let mut memory = TestMemory::new(image(&[]));
        let mut x = [0; 12];
        x[11] = BASE + 0x1804;
        let regs = Arm64Registers::new(BASE + 0x1800, STACK, x);
        let dispatch = unwinder(C_SPECIFIC).dispatch(&regs, STOP, &mut memory).unwrap();
        assert_eq!(dispatch.reason(), "frame at 0x11804: no unwind data");
        let outside = Arm64Registers::new(BASE + SIZE, STACK, x);
        let dispatch = unwinder(C_SPECIFIC).dispatch(&outside, STOP, &mut memory).unwrap();
        assert_eq!(dispatch.reason(), "frame at 0x13000 outside the image");
    }

    #[test]
    fn a_function_is_decoded_once() {
        let (mut memory, regs) = at_fault(&[COVERING_CALL]);
        let mut unwinder = unwinder(C_SPECIFIC);
        let first = unwinder.dispatch(&regs, STOP, &mut memory).unwrap();
        let xdata = i128::from(BASE + u64::from(CALLEE_XDATA));
        let decoded =
            |memory: &TestMemory| memory.reads.iter().filter(|read| read.0 == xdata).count();
        assert_eq!(decoded(&memory), 1);
        let second = unwinder.dispatch(&regs, STOP, &mut memory).unwrap();
        assert_eq!((decoded(&memory), first), (1, second));
    }
}
