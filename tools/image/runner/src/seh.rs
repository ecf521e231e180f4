//! x64 unwind data and structured exception dispatch from the image's .pdata, written from the
//! documented format (learn.microsoft.com, "x64 exception handling"): `RUNTIME_FUNCTION`,
//! `UNWIND_INFO` and its `UNWIND_CODE`s, and the scope table `__C_specific_handler` reads
//! (Count, then {`BeginAddress`, `EndAddress`, `HandlerAddress`, `JumpTarget`} RVAs, the same
//! on ARM64).
//!
//! The dispatch walks frames with [`Unwinder::dispatch`] (x64) or `arm64_unwind::Unwinder`
//! (ARM64), both over [`walk`], the frame walk they share. Memory is passed to each call as a
//! [`Memory`], never stored: a read of the runner can fail (a crash, a fault), and that failure
//! comes back unchanged as [`Failure::Read`] for the caller to raise again.
//!
//! Registers are a fixed [`X64Registers`] (no map per frame): the stack pointer is kept as an
//! `i128`, unbounded, because a corrupt frame can carry it below 0 or past 2^64 (what the
//! runner writes back is the value modulo 2^64; a read at such an address goes to
//! [`Memory::read_unbounded`] with the unbounded value).

use std::fmt;

/// `UNWIND_INFO` flag: the function has an exception handler.
pub const UNW_FLAG_EHANDLER: u8 = 1;
/// `UNWIND_INFO` flag: the function has a termination handler.
pub const UNW_FLAG_UHANDLER: u8 = 2;
/// `UNWIND_INFO` flag: a chained `RUNTIME_FUNCTION` follows the codes.
pub const UNW_FLAG_CHAININFO: u8 = 4;
/// `UNWIND_CODE` operation: push of a non-volatile register.
pub const UWOP_PUSH_NONVOL: u16 = 0;
/// `UNWIND_CODE` operation: a large allocation (16-bit scaled or 32-bit size).
pub const UWOP_ALLOC_LARGE: u16 = 1;
/// `UNWIND_CODE` operation: an allocation of 8 to 128 bytes.
pub const UWOP_ALLOC_SMALL: u16 = 2;
/// `UNWIND_CODE` operation: the frame register is set.
pub const UWOP_SET_FPREG: u16 = 3;
/// `UNWIND_CODE` operation: a non-volatile register saved at a scaled offset.
pub const UWOP_SAVE_NONVOL: u16 = 4;
/// `UNWIND_CODE` operation: a non-volatile register saved at a 32-bit offset.
pub const UWOP_SAVE_NONVOL_FAR: u16 = 5;
/// `UNWIND_CODE` operation: a machine frame (an interrupt's or a fault's).
pub const UWOP_PUSH_MACHFRAME: u16 = 10;
/// The scope table's handler value of an `__except (EXCEPTION_EXECUTE_HANDLER)`.
pub const EXCEPTION_EXECUTE_HANDLER: u32 = 1;
/// The most frames a dispatch or a backtrace walks.
pub const MAX_FRAMES: usize = 256;
/// The most chained `UNWIND_INFO`s one frame follows.
pub const MAX_CHAIN: usize = 32;
/// The most entries a scope table may have.
pub const MAX_SCOPES: u32 = 1024;

/// The `UNWIND_CODE` register numbers' names: RAX RCX RDX RBX RSP RBP RSI RDI R8..R15.
pub const REGISTERS: [&str; 16] = [
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];

/// An x64 general register, numbered as `UNWIND_CODE`s number them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Gpr {
    /// RAX (0).
    Rax,
    /// RCX (1).
    Rcx,
    /// RDX (2).
    Rdx,
    /// RBX (3).
    Rbx,
    /// RSP (4).
    Rsp,
    /// RBP (5).
    Rbp,
    /// RSI (6).
    Rsi,
    /// RDI (7).
    Rdi,
    /// R8.
    R8,
    /// R9.
    R9,
    /// R10.
    R10,
    /// R11.
    R11,
    /// R12.
    R12,
    /// R13.
    R13,
    /// R14.
    R14,
    /// R15.
    R15,
}

impl Gpr {
    /// All 16, by `UNWIND_CODE` number.
    const ALL: [Self; 16] = [
        Self::Rax,
        Self::Rcx,
        Self::Rdx,
        Self::Rbx,
        Self::Rsp,
        Self::Rbp,
        Self::Rsi,
        Self::Rdi,
        Self::R8,
        Self::R9,
        Self::R10,
        Self::R11,
        Self::R12,
        Self::R13,
        Self::R14,
        Self::R15,
    ];

    /// The register an `UNWIND_CODE` names by `number` (its low 4 bits).
    #[must_use]
    pub const fn from_number(number: u16) -> Self {
        Self::ALL[(number & 15) as usize]
    }

    /// The register's `UNWIND_CODE` number (0..16).
    #[must_use]
    pub const fn number(self) -> usize {
        self as usize
    }

    /// The register's name (`"rbx"`), as error texts name it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        REGISTERS[self as usize]
    }
}

/// The non-volatile registers an x64 unwind restores besides RSP and RIP, in the order of
/// [`X64Registers::new`]'s array.
pub const NONVOLATILE: [Gpr; 8] =
    [Gpr::Rbx, Gpr::Rbp, Gpr::Rsi, Gpr::Rdi, Gpr::R12, Gpr::R13, Gpr::R14, Gpr::R15];

/// The unwind data cannot be followed (a one-line reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwindError(pub String);

impl fmt::Display for UnwindError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for UnwindError {}

/// Corrupt unwind data that the unwinder does not diagnose as an [`UnwindError`]: the runner
/// ends the command with the fatal error `format!("runner bug in a hook: {}", error.text())`
/// rather than an unhandled exception.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// A register read that the dispatch never had (a volatile register as the frame register,
    /// before any unwind code of the walk restored it), by name.
    MissingRegister(&'static str),
    /// An unwind code whose operand slots lie past the `UNWIND_INFO`'s codes.
    OperandPastCodes,
}

impl Malformed {
    /// The error's text, worded as the exception of its kind: `KeyError('rax')` for a missing
    /// register, `IndexError('list index out of range')` for an operand past the codes.
    #[must_use]
    pub fn text(&self) -> String {
        match self {
            Self::MissingRegister(name) => format!("KeyError('{name}')"),
            Self::OperandPastCodes => "IndexError('list index out of range')".to_owned(),
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text())
    }
}

/// Why a dispatch or a backtrace ended without an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure<E> {
    /// The unwind data cannot be followed: the runner ends the dispatch unhandled, with the
    /// reason `unwind failed: {error}`.
    Unwind(UnwindError),
    /// Corrupt unwind data the unwinder does not diagnose: see [`Malformed`].
    Malformed(Malformed),
    /// The memory read failed: the reader's own error (the runner's crash or fatal error), to
    /// raise again as it is.
    Read(E),
}

impl<E> From<UnwindError> for Failure<E> {
    fn from(error: UnwindError) -> Self {
        Self::Unwind(error)
    }
}

impl<E> From<Malformed> for Failure<E> {
    fn from(error: Malformed) -> Self {
        Self::Malformed(error)
    }
}

/// The memory an unwind reads: the mapped image (its unwind data) and the stack.
pub trait Memory {
    /// The reader's failure (the runner's crash or fatal error).
    type Error;

    /// Fills `buffer` from `address`.
    ///
    /// # Errors
    ///
    /// The reader's failure, which the dispatch returns as [`Failure::Read`].
    fn read(&mut self, address: u64, buffer: &mut [u8]) -> Result<(), Self::Error>;

    /// Fills `buffer` from an address outside [0, 2^64), which only a corrupt frame computes.
    /// By default the address modulo 2^64; a reader may instead refuse it, naming the whole
    /// value.
    ///
    /// # Errors
    ///
    /// The reader's failure, which the dispatch returns as [`Failure::Read`].
    fn read_unbounded(&mut self, address: i128, buffer: &mut [u8]) -> Result<(), Self::Error> {
        self.read(wrap(address), buffer)
    }
}

/// `value` modulo 2^64.
#[must_use]
pub const fn wrap(value: i128) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // the truncation wanted
    let wrapped = value as u64;
    wrapped
}

/// Reads `buffer` at `address` (in range: [`Memory::read`], else [`Memory::read_unbounded`]).
///
/// # Errors
///
/// The reader's failure.
pub fn read_at<M: Memory + ?Sized>(
    memory: &mut M,
    address: i128,
    buffer: &mut [u8],
) -> Result<(), M::Error> {
    match u64::try_from(address) {
        Ok(address) => memory.read(address, buffer),
        Err(_) => memory.read_unbounded(address, buffer),
    }
}

/// The little-endian u64 at `address`.
///
/// # Errors
///
/// The reader's failure, as [`Failure::Read`].
pub fn u64_at<M: Memory + ?Sized>(memory: &mut M, address: i128) -> Result<u64, Failure<M::Error>> {
    let mut bytes = [0; 8];
    read_at(memory, address, &mut bytes).map_err(Failure::Read)?;
    Ok(u64::from_le_bytes(bytes))
}

/// The little-endian u32 at `offset` of `data` (the bytes past its end read as 0).
#[must_use]
pub fn u32_of(data: &[u8], offset: usize) -> u32 {
    let mut bytes = [0; 4];
    for (slot, byte) in bytes.iter_mut().zip(data.iter().skip(offset)) {
        *slot = *byte;
    }
    u32::from_le_bytes(bytes)
}

/// One mapped image as the unwinders read it: `size` bytes at `base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageView {
    /// Where the image is mapped.
    pub base: u64,
    /// Its size (`SizeOfImage`, page-rounded, as [`crate::image::Image`]'s `size`).
    pub size: u64,
}

impl ImageView {
    /// Fills `buffer` from `rva` of the image.
    ///
    /// # Errors
    ///
    /// An [`UnwindError`] when the bytes lie outside the image; the reader's failure.
    pub fn read_rva<M: Memory + ?Sized>(
        self,
        memory: &mut M,
        rva: u64,
        buffer: &mut [u8],
    ) -> Result<(), Failure<M::Error>> {
        let length = buffer.len();
        let end = u64::try_from(length).ok().and_then(|length| rva.checked_add(length));
        if end.is_none_or(|end| end > self.size) {
            return Err(UnwindError(format!(
                "{length} bytes at rva {rva:#x} lie outside the image"
            ))
            .into());
        }
        read_at(memory, i128::from(self.base) + i128::from(rva), buffer).map_err(Failure::Read)
    }
}

/// One scope table entry: [begin, end) guarded, the filter (1: `EXCEPTION_EXECUTE_HANDLER`) or
/// `__finally` handler, the `__except` target (0 for a `__finally`); RVAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    /// The first RVA guarded.
    pub begin: u32,
    /// The RVA after the last one guarded.
    pub end: u32,
    /// The filter's RVA, 1 for `EXCEPTION_EXECUTE_HANDLER`, or the `__finally` handler's.
    pub handler: u32,
    /// The `__except` block's RVA; 0 for a `__finally`.
    pub target: u32,
}

/// One `UNWIND_INFO`: its header fields, its `UNWIND_CODE` slots (16-bit) and `tail`, the RVA
/// after them (the exception handler's RVA, or the chained `RUNTIME_FUNCTION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwindInfo {
    /// Where it lies.
    pub rva: u64,
    /// The version (1 or 2).
    pub version: u8,
    /// The `UNW_FLAG_*` flags.
    pub flags: u8,
    /// The prologue's size in bytes.
    pub prolog: u8,
    /// The frame register's number (0: none).
    pub frame_register: u8,
    /// The frame register's offset from RSP, in 16-byte units.
    pub frame_offset: u8,
    /// The unwind code slots.
    pub codes: Vec<u16>,
    /// The RVA after the codes (rounded to an even count of slots).
    pub tail: u64,
}

/// The `UNWIND_INFO` at `rva`; `read(rva, buffer)` reads the image.
///
/// # Errors
///
/// An [`UnwindError`] for a version other than 1 or 2; `read`'s failure.
pub fn unwind_info<E, R>(rva: u64, read: &mut R) -> Result<UnwindInfo, E>
where
    E: From<UnwindError>,
    R: FnMut(u64, &mut [u8]) -> Result<(), E>,
{
    let mut header = [0; 4];
    read(rva, &mut header)?;
    let [version_flags, prolog, count, frame] = header;
    let version = version_flags & 7;
    if version != 1 && version != 2 {
        return Err(UnwindError(format!("UNWIND_INFO at {rva:#x}: version {version}")).into());
    }
    let codes = if count == 0 {
        Vec::new()
    } else {
        let mut raw = vec![0; usize::from(count) * 2];
        read(rva + 4, &mut raw)?;
        raw.chunks_exact(2).map(|slot| u16::from_le_bytes([slot[0], slot[1]])).collect()
    };
    let tail = rva + 4 + ((u64::from(count) + 1) & !1) * 2;
    Ok(UnwindInfo {
        rva,
        version,
        flags: version_flags >> 3,
        prolog,
        frame_register: frame & 15,
        frame_offset: frame >> 4,
        codes,
        tail,
    })
}

/// The code slot at `index` ([`Malformed::OperandPastCodes`] past the end).
fn slot(codes: &[u16], index: usize) -> Result<u16, Malformed> {
    codes.get(index).copied().ok_or(Malformed::OperandPastCodes)
}

/// Bytes of stack the prologue's unwind codes allocate (pushes, allocations, a machine frame);
/// not the chained parent's.
///
/// # Errors
///
/// An [`UnwindError`] for an unknown operation or a code cut short.
pub fn frame_of_codes(info: &UnwindInfo) -> Result<u64, UnwindError> {
    let codes = &info.codes;
    let mut frame = 0;
    let mut i = 0;
    while let Some(&code) = codes.get(i) {
        let (op, op_info) = ((code >> 8) & 15, code >> 12);
        if op > UWOP_PUSH_MACHFRAME {
            return Err(UnwindError(format!(
                "UNWIND_INFO at {:#x}: unknown unwind operation {op}",
                info.rva
            )));
        }
        let slots = slots(op, op_info, info.version);
        if i + slots > codes.len() {
            return Err(UnwindError(format!(
                "UNWIND_INFO at {:#x}: unwind code {op} cut short",
                info.rva
            )));
        }
        // In bounds: checked above (`slots` covers the operands).
        let operand = |n: usize| u64::from(codes.get(i + n).copied().unwrap_or(0));
        frame += match op {
            UWOP_PUSH_NONVOL => 8,
            UWOP_ALLOC_SMALL => u64::from(op_info) * 8 + 8,
            UWOP_ALLOC_LARGE if op_info == 0 => operand(1) * 8,
            UWOP_ALLOC_LARGE => operand(1) | (operand(2) << 16),
            UWOP_PUSH_MACHFRAME if op_info != 0 => 48,
            UWOP_PUSH_MACHFRAME => 40,
            _ => 0,
        };
        i += slots;
    }
    Ok(frame)
}

/// The `__C_specific_handler` `SCOPE_TABLE` at `rva` (Count, then Count entries), on x64 and
/// ARM64 alike.
///
/// # Errors
///
/// An [`UnwindError`] for more than [`MAX_SCOPES`] entries; `read`'s failure.
pub fn scope_table<E, R>(rva: u64, read: &mut R) -> Result<Vec<Scope>, E>
where
    E: From<UnwindError>,
    R: FnMut(u64, &mut [u8]) -> Result<(), E>,
{
    let mut count = [0; 4];
    read(rva, &mut count)?;
    let count = u32::from_le_bytes(count);
    if count > MAX_SCOPES {
        return Err(UnwindError(format!("scope table at {rva:#x}: {count} entries")).into());
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut raw = vec![0; 16 * count as usize];
    read(rva + 4, &mut raw)?;
    Ok(raw
        .chunks_exact(16)
        .map(|entry| Scope {
            begin: u32_of(entry, 0),
            end: u32_of(entry, 4),
            handler: u32_of(entry, 8),
            target: u32_of(entry, 12),
        })
        .collect())
}

/// A function's language handler's RVA (None without one) and its scope table (empty unless
/// the handler is `__C_specific_handler`).
pub type Handler = (Option<u32>, Vec<Scope>);

/// Where an exception goes: the frame whose `__except` takes it (the target and the registers
/// to resume with), or why none does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatch<R> {
    /// An `__except` takes it.
    Handled {
        /// The absolute `JumpTarget`.
        target: u64,
        /// The registers to resume with (the program counter already the target).
        registers: R,
    },
    /// No frame takes it.
    Unhandled {
        /// Why (the text of the `KMODE_EXCEPTION_NOT_HANDLED` crash).
        reason: String,
    },
}

impl<R> Dispatch<R> {
    /// The absolute `JumpTarget` (None when unhandled).
    #[cfg(test)]
    #[must_use]
    pub const fn target(&self) -> Option<u64> {
        match self {
            Self::Handled { target, .. } => Some(*target),
            Self::Unhandled { .. } => None,
        }
    }

    /// Why unhandled (empty when handled).
    #[cfg(test)]
    #[must_use]
    pub fn reason(&self) -> &str {
        match self {
            Self::Handled { .. } => "",
            Self::Unhandled { reason } => reason,
        }
    }

    /// An unhandled dispatch.
    fn unhandled(reason: impl Into<String>) -> Self {
        Self::Unhandled { reason: reason.into() }
    }
}

/// A frame's registers as the walk sees them: a program counter to move.
pub trait Frame: Clone {
    /// The program counter (RIP, PC).
    fn pc(&self) -> u64;
    /// Sets the program counter.
    fn set_pc(&mut self, pc: u64);
}

/// What one frame does with an exception at `rva` (its control PC, image-relative), on either
/// architecture: a dispatch resuming `regs` at the `JumpTarget` of the first
/// `__C_specific_handler` scope that covers it with `EXCEPTION_EXECUTE_HANDLER`, an unhandled
/// dispatch for a language handler that is not `__C_specific_handler`, a filter function or a
/// `__finally` on the way, or None: on to the caller. `c_specific_handler`: the handler's RVAs.
#[must_use]
pub fn frame_verdict<R: Frame>(
    handler: Option<u32>,
    scopes: &[Scope],
    c_specific_handler: &[u64],
    rva: u64,
    regs: &R,
    base: u64,
) -> Option<Dispatch<R>> {
    if let Some(handler) = handler
        && !c_specific_handler.contains(&u64::from(handler))
    {
        return Some(Dispatch::unhandled(format!(
            "language handler at rva {handler:#x} is not __C_specific_handler"
        )));
    }
    for scope in scopes {
        if !(u64::from(scope.begin) <= rva && rva < u64::from(scope.end)) {
            continue;
        }
        if scope.target == 0 {
            return Some(Dispatch::unhandled(format!(
                "__finally at rva {:#x} on the unwind path",
                scope.handler
            )));
        }
        if scope.handler != EXCEPTION_EXECUTE_HANDLER {
            return Some(Dispatch::unhandled(format!(
                "__except filter function at rva {:#x} (unsupported)",
                scope.handler
            )));
        }
        let target = base.wrapping_add(u64::from(scope.target));
        let mut registers = regs.clone();
        registers.set_pc(target);
        return Some(Dispatch::Handled { target, registers });
    }
    None
}

/// The exception dispatch both architectures' unwinders share: the frame walk from the
/// faulting frame up, each frame's scopes judged by [`frame_verdict`].
pub trait FrameWalk {
    /// The registers of a frame.
    type Registers: Frame;
    /// A frame's unwind entry.
    type Function;
    /// How far before a return address its call lies.
    const CALL_BYTES: u64;

    /// The mapped image.
    fn image(&self) -> ImageView;

    /// The RVAs of `__C_specific_handler`.
    fn c_specific_handler(&self) -> &[u64];

    /// The unwind entry of the function holding `rva`, or None.
    ///
    /// # Errors
    ///
    /// Undecodable unwind data; the reader's failure.
    fn function<M: Memory + ?Sized>(
        &mut self,
        rva: u64,
        memory: &mut M,
    ) -> Result<Option<Self::Function>, Failure<M::Error>>;

    /// The function's language handler's RVA (None without one) and its scope table (empty
    /// unless the handler is `__C_specific_handler`).
    ///
    /// # Errors
    ///
    /// Undecodable unwind data; the reader's failure.
    fn scopes<M: Memory + ?Sized>(
        &self,
        function: &Self::Function,
        memory: &mut M,
    ) -> Result<Handler, Failure<M::Error>>;

    /// Unwinds a frame without unwind data, or says why it cannot (`first`: the faulting
    /// frame).
    ///
    /// # Errors
    ///
    /// The reader's failure.
    fn leaf<M: Memory + ?Sized>(
        &self,
        regs: &mut Self::Registers,
        first: bool,
        memory: &mut M,
    ) -> Result<Option<&'static str>, Failure<M::Error>>;

    /// Unwinds a frame with its unwind data (`first`: the faulting frame).
    ///
    /// # Errors
    ///
    /// Undecodable unwind data; the reader's failure.
    fn step<M: Memory + ?Sized>(
        &self,
        regs: &mut Self::Registers,
        function: &Self::Function,
        first: bool,
        memory: &mut M,
    ) -> Result<(), Failure<M::Error>>;
}

/// Finds the `__except` that takes an exception raised at `regs`' program counter: walks the
/// frames (the faulting frame's PC, callers' return address - `CALL_BYTES`, as
/// `__C_specific_handler` matches a frame whose `ControlPc` is unwound) until a scope covers
/// it with `EXCEPTION_EXECUTE_HANDLER`. `stop(pc)` ends the walk (the command's return
/// sentinel).
///
/// # Errors
///
/// Unwind data that cannot be followed or is malformed; the reader's failure (see [`Failure`]).
pub fn walk<W, M>(
    walker: &mut W,
    regs: &W::Registers,
    stop: impl Fn(u64) -> bool,
    memory: &mut M,
) -> Result<Dispatch<W::Registers>, Failure<M::Error>>
where
    W: FrameWalk + ?Sized,
    M: Memory + ?Sized,
{
    let image = walker.image();
    let mut regs = regs.clone();
    let mut first = true;
    for _ in 0..MAX_FRAMES {
        let pc = regs.pc();
        if stop(pc) {
            return Ok(Dispatch::unhandled("no __except handler in any frame"));
        }
        let back = if first { 0 } else { W::CALL_BYTES };
        let rva = i128::from(pc) - i128::from(image.base) - i128::from(back);
        let rva = match u64::try_from(rva) {
            Ok(rva) if rva < image.size => rva,
            _ => return Ok(Dispatch::unhandled(format!("frame at {pc:#x} outside the image"))),
        };
        match walker.function(rva, memory)? {
            None => {
                if let Some(refused) = walker.leaf(&mut regs, first, memory)? {
                    return Ok(Dispatch::unhandled(format!("frame at {pc:#x}: {refused}")));
                }
            }
            Some(function) => {
                let (handler, scopes) = walker.scopes(&function, memory)?;
                let handlers = walker.c_specific_handler();
                if let Some(verdict) =
                    frame_verdict(handler, &scopes, handlers, rva, &regs, image.base)
                {
                    return Ok(verdict);
                }
                walker.step(&mut regs, &function, first, memory)?;
            }
        }
        first = false;
    }
    Ok(Dispatch::unhandled(format!("more than {MAX_FRAMES} frames")))
}

/// An x64 frame's registers: RIP, the 16 general registers, and which of them the walk has
/// (RSP and the non-volatile registers from the start, a volatile one once an unwind code
/// restores it; reading one it lacks is [`Malformed::MissingRegister`]).
///
/// RSP is kept unbounded (`i128`): outside [0, 2^64) only after a corrupt frame. The others
/// are only ever set from 64-bit values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct X64Registers {
    /// RIP.
    rip: u64,
    /// The general registers by `UNWIND_CODE` number ([`Gpr`]).
    values: [i128; 16],
    /// Bit n: register n is present.
    present: u16,
}

/// The registers present from the start: RSP and the non-volatile ones.
const X64_INITIAL: u16 = 1 << Gpr::Rsp as u16
    | 1 << Gpr::Rbx as u16
    | 1 << Gpr::Rbp as u16
    | 1 << Gpr::Rsi as u16
    | 1 << Gpr::Rdi as u16
    | 1 << Gpr::R12 as u16
    | 1 << Gpr::R13 as u16
    | 1 << Gpr::R14 as u16
    | 1 << Gpr::R15 as u16;

impl X64Registers {
    /// The registers a dispatch starts with: RIP, RSP and the non-volatile registers in
    /// [`NONVOLATILE`]'s order (RBX RBP RSI RDI R12..R15).
    #[must_use]
    pub fn new(rip: u64, rsp: u64, nonvolatile: [u64; 8]) -> Self {
        let mut values = [0; 16];
        values[Gpr::Rsp.number()] = i128::from(rsp);
        for (register, value) in NONVOLATILE.iter().zip(nonvolatile) {
            values[register.number()] = i128::from(value);
        }
        Self { rip, values, present: X64_INITIAL }
    }

    /// RIP.
    #[cfg(test)]
    #[must_use]
    pub const fn rip(&self) -> u64 {
        self.rip
    }

    /// RSP modulo 2^64 (what the runner writes back).
    #[must_use]
    pub const fn rsp(&self) -> u64 {
        wrap(self.values[Gpr::Rsp as usize])
    }

    /// `register` modulo 2^64, None if the walk does not have it.
    #[cfg(test)]
    #[must_use]
    pub const fn get(&self, register: Gpr) -> Option<u64> {
        if self.present & (1 << register as u16) == 0 {
            None
        } else {
            Some(wrap(self.values[register as usize]))
        }
    }

    /// Sets `register` (now present).
    #[cfg(test)]
    pub fn set(&mut self, register: Gpr, value: u64) {
        self.values[register.number()] = i128::from(value);
        self.present |= 1 << register as u16;
    }

    /// The non-volatile registers in [`NONVOLATILE`]'s order, modulo 2^64.
    #[must_use]
    pub fn nonvolatile(&self) -> [u64; 8] {
        NONVOLATILE.map(|register| wrap(self.values[register.number()]))
    }

    /// Register number `number` (its low 4 bits), or [`Malformed::MissingRegister`] when the
    /// walk does not have it.
    const fn value(&self, number: u16) -> Result<i128, Malformed> {
        let register = Gpr::from_number(number);
        if self.present & (1 << register as u16) == 0 {
            return Err(Malformed::MissingRegister(register.name()));
        }
        Ok(self.values[register.number()])
    }

    /// Sets register number `number` (0..16).
    fn put(&mut self, number: u16, value: i128) {
        let index = usize::from(number & 15);
        self.values[index] = value;
        self.present |= 1 << index;
    }

    /// RSP, unbounded.
    const fn sp(&self) -> i128 {
        self.values[Gpr::Rsp as usize]
    }

    /// Sets RSP.
    const fn set_sp(&mut self, value: i128) {
        self.values[Gpr::Rsp as usize] = value;
    }
}

impl Frame for X64Registers {
    fn pc(&self) -> u64 {
        self.rip
    }

    fn set_pc(&mut self, pc: u64) {
        self.rip = pc;
    }
}

/// An x64 .pdata entry: (`BeginAddress`, `EndAddress`, `UnwindData`) RVAs.
pub type RuntimeFunction = (u32, u32, u32);

/// Virtual unwinding and `__C_specific_handler` scope lookup over one mapped x64 image.
#[derive(Debug, Clone)]
pub struct Unwinder {
    /// The mapped image.
    image: ImageView,
    /// The image's .pdata entries, sorted.
    pdata: Vec<RuntimeFunction>,
    /// The RVAs of `__C_specific_handler` (the map's symbols of that name).
    c_specific_handler: Vec<u64>,
}

impl Unwinder {
    /// The unwinder of the image mapped at `base`, `size` bytes, with its .pdata entries (in
    /// any order: sorted here) and the RVAs of `__C_specific_handler`. The memory is passed to
    /// each call.
    #[must_use]
    pub fn new(
        base: u64,
        size: u64,
        pdata: &[RuntimeFunction],
        c_specific_handler: &[u64],
    ) -> Self {
        let mut pdata = pdata.to_vec();
        pdata.sort_unstable();
        Self {
            image: ImageView { base, size },
            pdata,
            c_specific_handler: c_specific_handler.to_vec(),
        }
    }

    /// The .pdata entry whose range holds `rva`, or None.
    #[must_use]
    pub fn function_at(&self, rva: u64) -> Option<RuntimeFunction> {
        let index = self.pdata.partition_point(|entry| u64::from(entry.0) <= rva).checked_sub(1)?;
        let entry = *self.pdata.get(index)?;
        (u64::from(entry.0) <= rva && rva < u64::from(entry.1)).then_some(entry)
    }

    /// One frame: restores `regs` (RIP, RSP, the registers saved) to the caller's.
    ///
    /// # Errors
    ///
    /// Unwind data that cannot be followed or is malformed; the reader's failure (see
    /// [`Failure`]).
    pub fn unwind<M: Memory + ?Sized>(
        &self,
        regs: &mut X64Registers,
        function: RuntimeFunction,
        memory: &mut M,
    ) -> Result<(), Failure<M::Error>> {
        let image = self.image;
        let (begin, _, mut unwind_rva) = function;
        let offset = i128::from(regs.rip) - i128::from(image.base) - i128::from(begin);
        let mut machine_frame = false;
        let mut ended = false;
        for depth in 0..MAX_CHAIN {
            let info = unwind_info(u64::from(unwind_rva), &mut |rva, buffer: &mut [u8]| {
                image.read_rva(memory, rva, buffer)
            })?;
            let in_prolog = depth == 0 && offset < i128::from(info.prolog);
            machine_frame |= unwind_codes(&info, in_prolog, offset, regs, memory)?;
            if info.flags & UNW_FLAG_CHAININFO == 0 {
                ended = true;
                break;
            }
            let mut chained = [0; 12];
            image.read_rva(memory, info.tail, &mut chained)?;
            unwind_rva = u32_of(&chained, 8);
        }
        if !ended {
            return Err(UnwindError(format!(
                "UNWIND_INFO at {unwind_rva:#x}: chain longer than {MAX_CHAIN}"
            ))
            .into());
        }
        if !machine_frame {
            regs.rip = u64_at(memory, regs.sp())?;
            regs.set_sp(regs.sp() + 8);
        }
        Ok(())
    }

    /// Finds the `__except` that takes an exception raised at RIP: see [`walk`].
    ///
    /// # Errors
    ///
    /// Unwind data that cannot be followed or is malformed; the reader's failure (see
    /// [`Failure`]).
    pub fn dispatch<M: Memory + ?Sized>(
        &self,
        regs: &X64Registers,
        stop: impl Fn(u64) -> bool,
        memory: &mut M,
    ) -> Result<Dispatch<X64Registers>, Failure<M::Error>> {
        // `walk` takes its walker mutably (the ARM64 one caches); this one keeps nothing.
        let mut walker = Walker(self);
        walk(&mut walker, regs, stop, memory)
    }

    /// The return addresses of the frames above `regs.rip()` (the first is RIP itself), by the
    /// same virtual unwind as the dispatch, until `stop(rip)`; and the registers unwound to
    /// that point.
    ///
    /// # Errors
    ///
    /// Unwind data that cannot be followed or is malformed, among them an [`UnwindError`] for a
    /// frame outside the image or more than [`MAX_FRAMES`] frames; the reader's failure (see
    /// [`Failure`]).
    #[cfg(test)]
    pub fn backtrace<M: Memory + ?Sized>(
        &self,
        regs: &X64Registers,
        stop: impl Fn(u64) -> bool,
        memory: &mut M,
    ) -> Result<(Vec<u64>, X64Registers), Failure<M::Error>> {
        let mut regs = *regs;
        let mut frames = Vec::new();
        for depth in 0..MAX_FRAMES {
            let rip = regs.rip;
            if stop(rip) {
                return Ok((frames, regs));
            }
            frames.push(rip);
            let back = i128::from(depth != 0);
            let rva = i128::from(rip) - i128::from(self.image.base) - back;
            let rva = match u64::try_from(rva) {
                Ok(rva) if rva < self.image.size => rva,
                _ => {
                    return Err(UnwindError(format!("frame at {rip:#x} outside the image")).into());
                }
            };
            match self.function_at(rva) {
                None => {
                    regs.rip = u64_at(memory, regs.sp())?;
                    regs.set_sp(regs.sp() + 8);
                }
                Some(function) => self.unwind(&mut regs, function, memory)?,
            }
        }
        Err(UnwindError(format!("more than {MAX_FRAMES} frames")).into())
    }

    /// The language handler's RVA (None without `UNW_FLAG_EHANDLER`) and its scope table
    /// (empty unless the handler is `__C_specific_handler`).
    ///
    /// # Errors
    ///
    /// Undecodable unwind data; the reader's failure.
    pub fn scopes<M: Memory + ?Sized>(
        &self,
        function: RuntimeFunction,
        memory: &mut M,
    ) -> Result<Handler, Failure<M::Error>> {
        let image = self.image;
        let mut read = |rva, buffer: &mut [u8]| image.read_rva(memory, rva, buffer);
        let info = unwind_info(u64::from(function.2), &mut read)?;
        if info.flags & UNW_FLAG_EHANDLER == 0 {
            return Ok((None, Vec::new()));
        }
        let mut handler = [0; 4];
        read(info.tail, &mut handler)?;
        let handler = u32::from_le_bytes(handler);
        if !self.c_specific_handler.contains(&u64::from(handler)) {
            return Ok((Some(handler), Vec::new()));
        }
        Ok((Some(handler), scope_table(info.tail + 4, &mut read)?))
    }
}

/// The x64 unwinder as a [`FrameWalk`].
struct Walker<'a>(&'a Unwinder);

impl FrameWalk for Walker<'_> {
    type Registers = X64Registers;
    type Function = RuntimeFunction;
    const CALL_BYTES: u64 = 1;

    fn image(&self) -> ImageView {
        self.0.image
    }

    fn c_specific_handler(&self) -> &[u64] {
        &self.0.c_specific_handler
    }

    fn function<M: Memory + ?Sized>(
        &mut self,
        rva: u64,
        _memory: &mut M,
    ) -> Result<Option<RuntimeFunction>, Failure<M::Error>> {
        Ok(self.0.function_at(rva))
    }

    fn scopes<M: Memory + ?Sized>(
        &self,
        function: &RuntimeFunction,
        memory: &mut M,
    ) -> Result<Handler, Failure<M::Error>> {
        self.0.scopes(*function, memory)
    }

    /// A leaf: the return address is at RSP.
    fn leaf<M: Memory + ?Sized>(
        &self,
        regs: &mut X64Registers,
        _first: bool,
        memory: &mut M,
    ) -> Result<Option<&'static str>, Failure<M::Error>> {
        regs.rip = u64_at(memory, regs.sp())?;
        regs.set_sp(regs.sp() + 8);
        Ok(None)
    }

    fn step<M: Memory + ?Sized>(
        &self,
        regs: &mut X64Registers,
        function: &RuntimeFunction,
        _first: bool,
        memory: &mut M,
    ) -> Result<(), Failure<M::Error>> {
        self.0.unwind(regs, *function, memory)
    }
}

/// Replays one `UNWIND_INFO`'s codes on `regs` (one link of the chain); whether a machine
/// frame set RIP.
fn unwind_codes<M: Memory + ?Sized>(
    info: &UnwindInfo,
    in_prolog: bool,
    offset: i128,
    regs: &mut X64Registers,
    memory: &mut M,
) -> Result<bool, Failure<M::Error>> {
    let codes = &info.codes;
    let frame_reg = u16::from(info.frame_register);
    let frame_off = i128::from(info.frame_offset) * 16;
    let mut machine_frame = false;
    // With a frame register, its value less its offset, unless the fault lies in the prologue
    // before UWOP_SET_FPREG ran; else RSP.
    let frame = if frame_reg != 0 && (!in_prolog || fpreg_done(codes, offset)) {
        regs.value(frame_reg)? - frame_off
    } else {
        regs.sp()
    };
    let mut i = 0;
    while let Some(&code) = codes.get(i) {
        let (code_offset, op, op_info) = (code & 0xFF, (code >> 8) & 15, code >> 12);
        let slots = slots(op, op_info, info.version);
        if in_prolog && i128::from(code_offset) > offset {
            i += slots;
            continue;
        }
        match op {
            UWOP_PUSH_NONVOL => {
                let value = u64_at(memory, regs.sp())?;
                regs.put(op_info, i128::from(value));
                regs.set_sp(regs.sp() + 8);
            }
            UWOP_ALLOC_LARGE => {
                let size = if op_info == 0 {
                    i128::from(slot(codes, i + 1)?) * 8
                } else {
                    i128::from(slot(codes, i + 1)?) | (i128::from(slot(codes, i + 2)?) << 16)
                };
                regs.set_sp(regs.sp() + size);
            }
            UWOP_ALLOC_SMALL => regs.set_sp(regs.sp() + i128::from(op_info) * 8 + 8),
            UWOP_SET_FPREG => regs.set_sp(regs.value(frame_reg)? - frame_off),
            UWOP_SAVE_NONVOL => {
                let address = frame + i128::from(slot(codes, i + 1)?) * 8;
                regs.put(op_info, i128::from(u64_at(memory, address)?));
            }
            UWOP_SAVE_NONVOL_FAR => {
                let far = i128::from(slot(codes, i + 1)?) | (i128::from(slot(codes, i + 2)?) << 16);
                regs.put(op_info, i128::from(u64_at(memory, frame + far)?));
            }
            6..=9 => {} // epilog (v2), XMM saves: no general register
            UWOP_PUSH_MACHFRAME => {
                let rsp = regs.sp() + if op_info != 0 { 8 } else { 0 };
                regs.rip = u64_at(memory, rsp)?;
                regs.set_sp(i128::from(u64_at(memory, rsp + 24)?));
                machine_frame = true;
            }
            _ => {
                return Err(UnwindError(format!(
                    "UNWIND_INFO at {:#x}: unwind code {op}",
                    info.rva
                ))
                .into());
            }
        }
        i += slots;
    }
    Ok(machine_frame)
}

/// How many 16-bit slots an unwind code takes. Codes 6 and 7: version 1's
/// `UWOP_SAVE_XMM`/`UWOP_SAVE_XMM_FAR` (2 and 3 slots), version 2's `UWOP_EPILOG` (1 slot).
const fn slots(op: u16, info: u16, version: u8) -> usize {
    match (op, info, version) {
        (1, 0, _) | (4 | 8, _, _) | (6, _, 0 | 1 | 3..) => 2,
        (1 | 5 | 9, _, _) | (7, _, 0 | 1 | 3..) => 3,
        _ => 1,
    }
}

/// Whether the prologue's `UWOP_SET_FPREG` (the first) lies at or before `offset` (true
/// without one).
fn fpreg_done(codes: &[u16], offset: i128) -> bool {
    codes
        .iter()
        .find(|code| (*code >> 8) & 15 == UWOP_SET_FPREG)
        .is_none_or(|code| i128::from(code & 0xFF) <= offset)
}

#[cfg(test)]
pub mod tests {
    //! The x64 decoder and dispatch over hand-assembled unwind data: frame sizes of unwind
    //! codes, and dispatches through a guard, its callee and corrupt unwind data.

    use super::*;

    /// Where the test images are mapped.
    pub const BASE: u64 = 0x10000;
    /// Their size.
    pub const SIZE: u64 = 0x3000;
    /// The test stack's page.
    pub const STACK: u64 = 0x80000;
    /// Where the outermost frame returns.
    pub const SENTINEL: u64 = 0xDEAD_0000;
    /// The RVA of `__C_specific_handler` (an import thunk in a real image).
    pub const C_SPECIFIC: u64 = 0x1F00;
    /// The guard: push rbx; sub rsp, 32; its `__try` covers the call at 0x1010 (returns to
    /// 0x1015); `__except` at 0x1020.
    const GUARD: u32 = 0x1000;
    /// The callee: push rbp; sub rsp, 0x100; lea rbp, [rsp+0x20]; mov [rsp+0x20], rdi.
    const CALLEE: u32 = 0x1040;
    /// Unwind data of the functions after the callee (one 0x20-byte function each).
    const OTHERS: [(u32, u32); 9] = [
        (0x1080, 0x2200), // chained: sub rsp, 16, then its parent's push r12
        (0x10C0, 0x2400), // a chain to itself
        (0x10E0, 0x2500), // a machine frame
        (0x1100, 0x2600), // RCX as the frame register
        (0x1120, 0x2700), // UWOP_ALLOC_LARGE without its operand slot
        (0x1140, 0x2800), // unwind operation 11
        (0x1160, 0x2900), // version 3
        (0x1180, 0x2FFE), // UNWIND_INFO past the image's end
        (0x11A0, 0x2A00), // RBP as the frame register, a save at its offset 0
    ];
    /// The guard's call's return address.
    const RETURN: u64 = BASE + 0x1015;
    /// The callee's fault, in its body.
    const FAULT: u64 = BASE + 0x1060;

    /// An `UNWIND_INFO` (version 1) with these codes.
    fn info(flags: u8, prolog: u8, frame: u8, codes: &[u16]) -> Vec<u8> {
        let count = u8::try_from(codes.len()).unwrap();
        let mut bytes = vec![1 | flags << 3, prolog, count, frame];
        for code in codes {
            bytes.extend_from_slice(&code.to_le_bytes());
        }
        if codes.len() % 2 == 1 {
            bytes.extend_from_slice(&[0, 0]);
        }
        bytes
    }

    fn put(image: &mut [u8], rva: u32, bytes: &[u8]) {
        let at = rva as usize;
        image[at..at + bytes.len()].copy_from_slice(bytes);
    }

    fn words(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|value| value.to_le_bytes()).collect()
    }

    /// The image: the guard with `scopes`, the callee, the other functions.
    fn image(scopes: &[[u32; 4]]) -> Vec<u8> {
        let mut image = vec![0; usize::try_from(SIZE).unwrap()];
        // ALLOC_SMALL 32 at 5, PUSH_NONVOL rbx at 1; the handler; the scope table.
        let mut guard = info(UNW_FLAG_EHANDLER, 5, 0, &[0x3205, 0x3001]);
        guard.extend(words(&[u32::try_from(C_SPECIFIC).unwrap()]));
        guard.extend(words(&[u32::try_from(scopes.len()).unwrap()]));
        guard.extend(scopes.iter().flat_map(|scope| words(scope)));
        put(&mut image, 0x2000, &guard);
        // SAVE_NONVOL rdi [frame+32] at 18, SET_FPREG at 13 (rbp, offset 2: rsp+0x20),
        // ALLOC_LARGE 0x20*8 at 8, PUSH_NONVOL rbp at 1.
        put(
            &mut image,
            0x2100,
            &info(0, 18, 5 | 2 << 4, &[0x7412, 4, 0x030D, 0x0108, 0x20, 0x5001]),
        );
        let mut chained = info(UNW_FLAG_CHAININFO, 4, 0, &[0x1204]);
        chained.extend(words(&[0x1080, 0x10C0, 0x2300]));
        put(&mut image, 0x2200, &chained);
        put(&mut image, 0x2300, &info(0, 2, 0, &[0xC002]));
        let mut looping = info(UNW_FLAG_CHAININFO, 0, 0, &[]);
        looping.extend(words(&[0x10C0, 0x10E0, 0x2400]));
        put(&mut image, 0x2400, &looping);
        put(&mut image, 0x2500, &info(0, 0, 0, &[0x0A00]));
        put(&mut image, 0x2600, &info(0, 0, 1, &[0x0300]));
        put(&mut image, 0x2700, &info(0, 0, 0, &[0x0100]));
        put(&mut image, 0x2800, &info(0, 0, 0, &[0x0B00]));
        put(&mut image, 0x2900, &[3, 0, 0, 0]);
        put(&mut image, 0x2A00, &info(0, 0, 5 | 2 << 4, &[0x3400, 0]));
        image
    }

    fn pdata() -> Vec<RuntimeFunction> {
        let mut pdata = vec![(GUARD, GUARD + 0x40, 0x2000), (CALLEE, CALLEE + 0x40, 0x2100)];
        pdata.extend(OTHERS.iter().map(|&(begin, unwind)| (begin, begin + 0x20, unwind)));
        pdata
    }

    /// A read the test memory refuses.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Fault {
        /// Nothing mapped there.
        At(u64),
        /// An address outside [0, 2^64).
        Unbounded(i128),
    }

    /// The image at `BASE`, a page of stack at `STACK`; every read logged.
    pub struct TestMemory {
        /// The image's bytes.
        pub image: Vec<u8>,
        /// The stack page's.
        pub stack: Vec<u8>,
        /// Every read: (address, length).
        pub reads: Vec<(i128, usize)>,
    }

    impl TestMemory {
        /// `image` and a zeroed stack.
        pub fn new(image: Vec<u8>) -> Self {
            Self { image, stack: vec![0; 0x1000], reads: Vec::new() }
        }

        /// Stores `value` at `address` of the stack.
        pub fn set(&mut self, address: u64, value: u64) {
            let at = usize::try_from(address - STACK).unwrap();
            self.stack[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
    }

    impl Memory for TestMemory {
        type Error = Fault;

        fn read(&mut self, address: u64, buffer: &mut [u8]) -> Result<(), Fault> {
            self.reads.push((i128::from(address), buffer.len()));
            for (base, bytes) in [(BASE, &self.image), (STACK, &self.stack)] {
                let Some(at) = address.checked_sub(base) else { continue };
                let at = usize::try_from(at).unwrap();
                if let Some(source) = bytes.get(at..at + buffer.len()) {
                    buffer.copy_from_slice(source);
                    return Ok(());
                }
            }
            Err(Fault::At(address))
        }

        fn read_unbounded(&mut self, address: i128, buffer: &mut [u8]) -> Result<(), Fault> {
            self.reads.push((address, buffer.len()));
            Err(Fault::Unbounded(address))
        }
    }

    /// The stack of the guard's call of the callee: the guard entered with RSP 0x80800 (the
    /// sentinel its return address), pushed RBX 0xB0B0 (0x807F8), allocated 32 and called
    /// (0x807D0: its return address); the callee pushed RBP 0xB9B9 (0x807C8), allocated
    /// 0x100, set RBP = RSP + 0x20 = 0x806E8 and saved RDI 0xD1D1 there.
    fn called(scopes: &[[u32; 4]]) -> TestMemory {
        let mut memory = TestMemory::new(image(scopes));
        memory.set(0x80800, SENTINEL);
        memory.set(0x807F8, 0xB0B0);
        memory.set(0x807D0, RETURN);
        memory.set(0x807C8, 0xB9B9);
        memory.set(0x806E8, 0xD1D1);
        memory
    }

    /// The registers at the callee's fault: RSP 0x806C8, RBP 0x806E8, RBX 0x4444 (the guard's),
    /// RDI 0x6666.
    fn at_fault(rip: u64) -> X64Registers {
        X64Registers::new(rip, 0x806C8, [0x4444, 0x806E8, 0x5151, 0x6666, 12, 13, 14, 15])
    }

    fn unwinder() -> Unwinder {
        Unwinder::new(BASE, SIZE, &pdata(), &[C_SPECIFIC])
    }

    const COVERING_CALL: [u32; 4] = [0x1010, 0x1015, 1, 0x1020];
    const STOP: fn(u64) -> bool = |pc| pc == SENTINEL;

    fn reason(dispatch: &Result<Dispatch<X64Registers>, Failure<Fault>>) -> &str {
        dispatch.as_ref().unwrap().reason()
    }

    /// `frame_of_codes` over an `UNWIND_INFO` of these code bytes.
    fn frame(codes: &[u8]) -> Result<u64, UnwindError> {
        let mut bytes = vec![1, 0, u8::try_from(codes.len() / 2).unwrap(), 0];
        bytes.extend_from_slice(codes);
        let mut read = |rva: u64, buffer: &mut [u8]| -> Result<(), UnwindError> {
            let at = usize::try_from(rva).unwrap();
            buffer.copy_from_slice(&bytes[at..at + buffer.len()]);
            Ok(())
        };
        frame_of_codes(&unwind_info(0, &mut read)?)
    }

    #[test]
    fn unwind_codes_add_up_pushes_and_allocations() {
        // push rbp; sub rsp, 0x28 (ALLOC_SMALL 4: 40 bytes); SET_FPREG takes no stack.
        assert_eq!(frame(&[0x0A, 0x03, 0x05, 0x42, 0x01, 0x50]), Ok(8 + 40));
        // ALLOC_LARGE with a 16-bit slot scaled by 8, then SAVE_NONVOL (two slots, no stack).
        assert_eq!(frame(&[0x13, 0x01, 0xE5, 0x01, 0x0C, 0x04, 0x10, 0x00]), Ok(485 * 8));
        // ALLOC_LARGE with a 32-bit size.
        assert_eq!(frame(&[0x10, 0x11, 0x00, 0x00, 0x01, 0x00]), Ok(0x10000));
        // A machine frame with an error code; a code cut short.
        assert_eq!(frame(&[0x00, 0x1A]), Ok(48));
        assert_eq!(
            frame(&[0x00, 0x01]),
            Err(UnwindError("UNWIND_INFO at 0x0: unwind code 1 cut short".to_owned()))
        );
    }

    #[test]
    fn an_unknown_unwind_operation_is_an_error() {
        assert_eq!(
            frame(&[0x00, 0x0B]),
            Err(UnwindError("UNWIND_INFO at 0x0: unknown unwind operation 11".to_owned()))
        );
    }

    #[test]
    fn unwind_info_and_scope_table_decode_the_guard() {
        let memory = image(&[COVERING_CALL, [0x1030, 0x1038, 0x1031, 0]]);
        let mut read = |rva: u64, buffer: &mut [u8]| -> Result<(), UnwindError> {
            let at = usize::try_from(rva).unwrap();
            buffer.copy_from_slice(&memory[at..at + buffer.len()]);
            Ok(())
        };
        let info = unwind_info(0x2000, &mut read).unwrap();
        assert_eq!(
            (info.version, info.flags, info.prolog, info.frame_register, info.frame_offset),
            (1, UNW_FLAG_EHANDLER, 5, 0, 0)
        );
        assert_eq!((info.codes, info.tail), (vec![0x3205, 0x3001], 0x2008));
        assert_eq!(
            scope_table(0x200C, &mut read).unwrap(),
            [
                Scope { begin: 0x1010, end: 0x1015, handler: 1, target: 0x1020 },
                Scope { begin: 0x1030, end: 0x1038, handler: 0x1031, target: 0 },
            ]
        );
        let callee = unwind_info(0x2100, &mut read).unwrap();
        assert_eq!((callee.frame_register, callee.frame_offset, callee.tail), (5, 2, 0x2110));
        assert_eq!(frame_of_codes(&callee), Ok(8 + 0x100));
        let mut wide = memory.clone();
        wide[0x200C..0x2010].copy_from_slice(&1025_u32.to_le_bytes());
        let mut read = |rva: u64, buffer: &mut [u8]| -> Result<(), UnwindError> {
            let at = usize::try_from(rva).unwrap();
            buffer.copy_from_slice(&wide[at..at + buffer.len()]);
            Ok(())
        };
        assert_eq!(
            scope_table(0x200C, &mut read),
            Err(UnwindError("scope table at 0x200c: 1025 entries".to_owned()))
        );
    }

    #[test]
    fn a_fault_below_the_guard_resumes_at_its_except_with_the_saved_registers() {
        let mut memory = called(&[COVERING_CALL]);
        let dispatch = unwinder().dispatch(&at_fault(FAULT), STOP, &mut memory).unwrap();
        let Dispatch::Handled { target, registers } = dispatch else { panic!("{dispatch:?}") };
        assert_eq!(target, BASE + 0x1020);
        assert_eq!((registers.rip(), registers.rsp()), (BASE + 0x1020, 0x807D8));
        // RBP and RDI from the callee's saves; RBX, RSI, R12..R15 as they were.
        assert_eq!(registers.nonvolatile(), [0x4444, 0xB9B9, 0x5151, 0xD1D1, 12, 13, 14, 15]);
        assert_eq!(registers.get(Gpr::Rax), None);
        // The reads, in order: the callee's UNWIND_INFO (for its handler, then for
        // the unwind), its saves, its return address; the guard's, its handler and scopes.
        let image = |rva: u64| i128::from(BASE + rva);
        assert_eq!(
            memory.reads,
            [
                (image(0x2100), 4),
                (image(0x2104), 12),
                (image(0x2100), 4),
                (image(0x2104), 12),
                (0x806E8, 8),
                (0x807C8, 8),
                (0x807D0, 8),
                (image(0x2000), 4),
                (image(0x2004), 4),
                (image(0x2008), 4),
                (image(0x200C), 4),
                (image(0x2010), 16),
            ]
        );
    }

    #[test]
    fn a_scope_that_does_not_cover_the_call_lets_the_walk_reach_the_sentinel() {
        for scopes in [&[[0x1015, 0x1018, 1, 0x1020]][..], &[]] {
            let mut memory = called(scopes);
            let dispatch = unwinder().dispatch(&at_fault(FAULT), STOP, &mut memory);
            assert_eq!(reason(&dispatch), "no __except handler in any frame");
            assert_eq!(dispatch.unwrap().target(), None);
        }
    }

    #[test]
    fn a_finally_a_filter_or_another_handler_is_unhandled() {
        let mut memory = called(&[[0x1010, 0x1015, 0x1030, 0]]);
        let dispatch = unwinder().dispatch(&at_fault(FAULT), STOP, &mut memory);
        assert_eq!(reason(&dispatch), "__finally at rva 0x1030 on the unwind path");
        let mut memory = called(&[[0x1000, 0x1040, 0x1030, 0x1020]]);
        let dispatch = unwinder().dispatch(&at_fault(FAULT), STOP, &mut memory);
        assert_eq!(reason(&dispatch), "__except filter function at rva 0x1030 (unsupported)");
        let mut memory = called(&[COVERING_CALL]);
        let other = Unwinder::new(BASE, SIZE, &pdata(), &[0x1F04]);
        let dispatch = other.dispatch(&at_fault(FAULT), STOP, &mut memory);
        assert_eq!(reason(&dispatch), "language handler at rva 0x1f00 is not __C_specific_handler");
    }

    #[test]
    fn a_fault_in_the_prologue_undoes_only_what_ran() {
        // After `push rbp; sub rsp, 0x100` (offset 8): RBP not yet set, RDI not yet saved.
        let mut memory = called(&[COVERING_CALL]);
        let mut regs = at_fault(BASE + u64::from(CALLEE) + 8);
        regs.set(Gpr::Rbp, 0x7777);
        let dispatch = unwinder().dispatch(&regs, STOP, &mut memory).unwrap();
        let Dispatch::Handled { registers, .. } = dispatch else { panic!("{dispatch:?}") };
        assert_eq!(registers.nonvolatile(), [0x4444, 0xB9B9, 0x5151, 0x6666, 12, 13, 14, 15]);
        assert_eq!(registers.rsp(), 0x807D8);
    }

    #[test]
    fn a_leaf_returns_through_rsp() {
        let mut memory = called(&[COVERING_CALL]);
        let regs = X64Registers::new(BASE + 0x1800, 0x807D0, [0; 8]);
        let dispatch = unwinder().dispatch(&regs, STOP, &mut memory).unwrap();
        assert_eq!(dispatch.target(), Some(BASE + 0x1020));
        let Dispatch::Handled { registers, .. } = dispatch else { panic!("unhandled") };
        assert_eq!(registers.rsp(), 0x807D8);
    }

    #[test]
    fn chained_unwind_info_and_a_machine_frame_are_followed() {
        // Chained: sub rsp, 16, then the parent's push r12: R12 at RSP + 16, the return above.
        let mut memory = called(&[COVERING_CALL]);
        memory.set(0x80110, 0x1212);
        memory.set(0x80118, RETURN);
        let regs = X64Registers::new(BASE + 0x1090, 0x80100, [0; 8]);
        let Dispatch::Handled { registers, .. } =
            unwinder().dispatch(&regs, STOP, &mut memory).unwrap()
        else {
            panic!("unhandled")
        };
        assert_eq!((registers.get(Gpr::R12), registers.rsp()), (Some(0x1212), 0x80120));
        // A machine frame: RIP at RSP, RSP at RSP + 24; no return address popped after it.
        let mut memory = called(&[COVERING_CALL]);
        memory.set(0x80100, RETURN);
        memory.set(0x80118, 0x80400);
        let regs = X64Registers::new(BASE + 0x10E0, 0x80100, [0; 8]);
        let Dispatch::Handled { registers, .. } =
            unwinder().dispatch(&regs, STOP, &mut memory).unwrap()
        else {
            panic!("unhandled")
        };
        assert_eq!(registers.rsp(), 0x80400);
    }

    #[test]
    fn undecodable_unwind_data_fails_with_its_reason() {
        let unwinder = unwinder();
        let fails = |rip: u64| {
            let mut memory = called(&[COVERING_CALL]);
            unwinder.dispatch(&X64Registers::new(rip, 0x80100, [0; 8]), STOP, &mut memory)
        };
        let unwind = |text: &str| Err(Failure::Unwind(UnwindError(text.to_owned())));
        assert_eq!(fails(BASE + 0x10C0), unwind("UNWIND_INFO at 0x2400: chain longer than 32"));
        assert_eq!(fails(BASE + 0x1120), Err(Failure::Malformed(Malformed::OperandPastCodes)));
        assert_eq!(fails(BASE + 0x1140), unwind("UNWIND_INFO at 0x2800: unwind code 11"));
        assert_eq!(fails(BASE + 0x1160), unwind("UNWIND_INFO at 0x2900: version 3"));
        assert_eq!(fails(BASE + 0x1180), unwind("4 bytes at rva 0x2ffe lie outside the image"));
        let key = fails(BASE + 0x1100);
        assert_eq!(key, Err(Failure::Malformed(Malformed::MissingRegister("rcx"))));
        assert_eq!(Malformed::MissingRegister("rcx").text(), "KeyError('rcx')");
        assert_eq!(Malformed::OperandPastCodes.text(), "IndexError('list index out of range')");
    }

    #[test]
    fn a_failed_read_comes_back_as_the_readers_error() {
        // A leaf whose RSP points at nothing.
        let mut memory = called(&[COVERING_CALL]);
        let regs = X64Registers::new(BASE + 0x1800, 0x9000, [0; 8]);
        let dispatch = unwinder().dispatch(&regs, STOP, &mut memory);
        assert_eq!(dispatch, Err(Failure::Read(Fault::At(0x9000))));
        // RBP 0 as the frame register at offset 0x20: the save lies at -0x20, which reaches
        // `read_unbounded` as it is.
        let mut memory = called(&[COVERING_CALL]);
        let regs = X64Registers::new(BASE + 0x11A0, 0x80100, [0; 8]);
        let dispatch = unwinder().dispatch(&regs, STOP, &mut memory);
        assert_eq!(dispatch, Err(Failure::Read(Fault::Unbounded(-0x20))));
        assert_eq!(memory.reads.last(), Some(&(-0x20, 8)));
    }

    #[test]
    fn the_walk_ends_at_the_sentinel_outside_the_image_or_after_256_frames() {
        let mut memory = called(&[COVERING_CALL]);
        let unwinder = unwinder();
        let mut dispatch = |rip: u64| {
            unwinder.dispatch(&X64Registers::new(rip, 0x80000, [0; 8]), STOP, &mut memory)
        };
        assert_eq!(reason(&dispatch(SENTINEL)), "no __except handler in any frame");
        assert_eq!(reason(&dispatch(BASE + SIZE)), "frame at 0x13000 outside the image");
        assert_eq!(reason(&dispatch(BASE - 1)), "frame at 0xffff outside the image");
        // Leaves returning to a leaf (rva 0x1800 after the call byte) all the way.
        let mut memory = TestMemory::new(image(&[]));
        for slot in 0..0x200 {
            memory.set(STACK + 8 * slot, BASE + 0x1801);
        }
        let regs = X64Registers::new(BASE + 0x1800, STACK, [0; 8]);
        let dispatch = unwinder.dispatch(&regs, STOP, &mut memory);
        assert_eq!(reason(&dispatch), "more than 256 frames");
        let backtrace = unwinder.backtrace(&regs, STOP, &mut memory);
        assert_eq!(backtrace, Err(Failure::Unwind(UnwindError("more than 256 frames".to_owned()))));
    }

    #[test]
    fn the_backtrace_lists_each_frame_and_unwinds_to_the_sentinel() {
        let mut memory = called(&[COVERING_CALL]);
        let (frames, registers) =
            unwinder().backtrace(&at_fault(FAULT), STOP, &mut memory).unwrap();
        assert_eq!(frames, [FAULT, RETURN]);
        assert_eq!((registers.rip(), registers.rsp()), (SENTINEL, 0x80808));
        assert_eq!(registers.nonvolatile(), [0xB0B0, 0xB9B9, 0x5151, 0xD1D1, 12, 13, 14, 15]);
        let mut memory = called(&[COVERING_CALL]);
        let outside = X64Registers::new(BASE + SIZE, 0x80000, [0; 8]);
        assert_eq!(
            unwinder().backtrace(&outside, STOP, &mut memory),
            Err(Failure::Unwind(UnwindError("frame at 0x13000 outside the image".to_owned())))
        );
    }

    #[test]
    fn registers_wrap_as_the_runner_writes_them() {
        assert_eq!(wrap(-8), u64::MAX - 7);
        assert_eq!(wrap(1 << 64), 0);
        let mut regs = X64Registers::new(1, 2, [3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(regs.get(Gpr::R9), None);
        regs.set(Gpr::R9, 99);
        assert_eq!((regs.get(Gpr::R9), regs.get(Gpr::Rsp), regs.rip()), (Some(99), Some(2), 1));
        assert_eq!(Gpr::R13.name(), "r13");
    }
}
