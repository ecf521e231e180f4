//! The runner's state and its core: memory (the image's own, the stack, `ppm-sim`'s pages),
//! host requests, calls and nested calls, the stack's low-water mark.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::c_int;

use serde_json::{Value, json};

use crate::image::Arch;
use crate::layout::{
    MAX_CACHED_PAGES, MAX_TIMESTAMPS, NESTED_GAP, NESTED_SENTINEL, PAGE, PAGE_BYTES,
    PAGE_FAULT_IN_NONPAGED_AREA, PAINT, SENTINEL, UNEXPECTED_KERNEL_MODE_TRAP, UNREACHED,
    USER_LIMIT,
};
pub use crate::outcome::{Crash, Outcome, Stop};
use crate::protocol::{Channel, Fatal, Message, integer, shown_value, unsigned};
use crate::unicorn::{self, Engine};
use crate::watchdog::Watchdog;

/// A page's bytes.
pub type PageBytes = Box<[u8; PAGE_BYTES]>;

/// A call's processor, when `ppm-sim` sent one.
#[derive(Debug, Clone, Copy)]
pub struct Processor {
    /// The processor's index.
    pub index: u64,
    /// Its group.
    pub group: u64,
    /// Its number in the group.
    pub number: u64,
}

/// The runner's state of one call, saved by a nested call and restored when it returns.
struct CallState {
    crash: Option<Crash>,
    interrupts: bool,
    processor: Option<Processor>,
    irql: u64,
    timestamps: Option<Vec<Value>>,
    windows: usize,
}

/// Memory the runner maps onto its own pages (`mmap`), so that painting, comparing and serving
/// copy nothing through Unicorn.
pub struct OwnMemory {
    pointer: *mut u8,
    length: usize,
}

impl OwnMemory {
    /// `length` bytes of zeroed, page-aligned memory.
    pub fn new(length: usize) -> Result<Self, Fatal> {
        // SAFETY: an anonymous private mapping; a failure is checked below.
        let pointer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if pointer == libc::MAP_FAILED {
            return Err(Fatal::new(format!(
                "cannot map {length} bytes: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Self { pointer: pointer.cast(), length })
    }

    /// The bytes (while no emulation writes them: between runs, or in a hook).
    pub const fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is valid for `length` bytes while `self` lives, and the emulated
        // CPU does not run while the slice is used.
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.length) }
    }

    /// Where the memory lies in this process.
    pub const fn pointer(&self) -> *mut u8 {
        self.pointer
    }
}

impl Drop for OwnMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.pointer.cast(), self.length) };
    }
}

/// The offset from the stack's lowest address `low` of `address`, an address in the mapped
/// stack.
// The offset is below the stack's length, at most `MAX_STACK_BYTES` (1 MiB): no truncation.
#[allow(clippy::cast_possible_truncation)]
const fn stack_offset(low: u64, address: u64) -> usize {
    (address - low) as usize
}

/// The most low-water hints kept (stack addresses).
const MAX_LOW_WATER_HINTS: usize = 256;
/// The hints kept per stack address.
const LOW_WATER_HINTS: usize = 4;

/// The runner: one image on one emulated CPU.
pub struct Runner {
    /// The line protocol.
    pub channel: Channel,
    /// The emulated CPU, once an image is loaded.
    pub uc: Option<Engine>,
    /// The image's architecture.
    pub arch: Arch,
    /// The first bugcheck of the current call.
    pub crash: Option<Crash>,
    /// A failure of the runner inside a hook.
    pub fatal: Option<Fatal>,
    /// The hang limit.
    pub watchdog: Option<Watchdog>,
    /// Function start RVAs executed.
    pub executed: HashSet<u64>,
    /// Per nesting level: the interrupted call's registers.
    pub(crate) contexts: Vec<unicorn::Context>,
    /// Per address called by a command: calls and the deepest stack use.
    pub stack_report: BTreeMap<u64, (u64, u64)>,
    /// Per call level: page → bytes served, in the order served.
    pub(crate) mirrors: Vec<Vec<(u64, PageBytes)>>,
    /// The lowest stack address of the command before a nested repaint.
    pub(crate) stack_floor: u64,
    /// `[stack_low, painted_below)` holds the paint.
    pub(crate) painted_below: u64,
    /// 2^k for each bit of the stack's size, largest first.
    pub(crate) paint_pieces: Vec<usize>,
    /// The stack's size in `PAINT` bytes (compared with the stack by memcmp).
    pub(crate) paint: Vec<u8>,
    /// The stack's memory.
    pub(crate) stack: Option<OwnMemory>,
    /// The stack's lowest address.
    pub stack_low: u64,
    /// The stack's top.
    pub stack_top: u64,
    /// The recent low-water marks found below each stack address, latest first (offsets from
    /// `stack_low`).
    pub(crate) low_water: HashMap<u64, Vec<usize>>,
    /// A stale page the image touched.
    pub(crate) refresh: Option<u64>,
    /// `ppm-sim` pages still mapped, `PROT_NONE` or about to be, from past calls.
    pub(crate) stale: HashSet<u64>,
    /// Every mapped `ppm-sim` page's memory.
    pub(crate) host_pages: HashMap<u64, OwnMemory>,
    /// Stale pages a call released and left readable until the image could touch them.
    pub(crate) unprotected: HashSet<u64>,
    /// RFLAGS.IF (PSTATE.I clear) as the image last set it.
    pub interrupts: bool,
    /// The current call's processor, when `ppm-sim` sent one.
    pub processor: Option<Processor>,
    /// Requests reported with the next message.
    pub deferred: Vec<Value>,
    /// The time-stamp counters ahead.
    pub(crate) timestamps: Option<Vec<Value>>,
    /// Interrupt windows the call passed since `timestamps` came.
    pub(crate) windows: usize,
    /// The IRQL the kernel made the current call at.
    pub irql: u64,
    /// The image, once loaded.
    pub image: Option<crate::image::Image>,
    /// The map's functions.
    pub symbols: crate::image::SymbolMap,
    /// The machine-answered instructions, by address.
    pub sites: HashMap<u64, crate::image::Site>,
    /// Site RVAs that are also function starts (no coverage hook of their own).
    pub site_functions: HashSet<u64>,
    /// Function address → its one-shot coverage hook.
    pub function_hooks: HashMap<u64, usize>,
    /// Import stub address → (DLL, name).
    pub imports_by_stub: HashMap<u64, (String, String)>,
    /// KMDF table index → calls.
    pub kmdf_calls: BTreeMap<u64, u64>,
    /// The `FuncCount` the image bound.
    pub kmdf_count: u64,
    /// KMDF 1.31's function names by index.
    pub kmdf_index_names: HashMap<u64, String>,
    /// ETW registration handle → (callback, context).
    pub etw_providers: HashMap<u64, (u64, u64)>,
    /// The image's `PEP_KERNEL_INFORMATION`, once registered.
    pub kernel_information: u64,
    /// Every exception dispatched.
    pub seh_log: Vec<Value>,
    /// The pool's next free address.
    pub pool_next: u64,
    /// The pool's mapped end.
    pub pool_mapped: u64,
    /// `EvtDriverDeviceAdd`, once registered.
    pub device_add: u64,
    /// `EvtDriverUnload`, once registered.
    pub driver_unload: u64,
    /// The exception dispatcher over the image's unwind data.
    pub unwinder: Option<crate::unwinding::Unwinding>,
    /// The hang limit in seconds.
    pub hang_seconds: f64,
    /// KMDF 1.31's function table size.
    pub kmdf_max_functions: u64,
    /// Driver Verifier's rules, when `load` carried them.
    pub verifier: Option<crate::verifier::Verifier>,
    /// The image's instructions executed, when counted (the count hook's data: boxed, so its
    /// address stays put).
    pub counter: Option<Box<u64>>,
    /// The instructions of the calls nested in the current one.
    pub nested_instructions: u64,
    /// How often a page of `ppm-sim`'s memory changed protection (each change makes Unicorn
    /// rebuild its memory map): `report`'s `page_protections`.
    pub page_protections: u64,
}

/// One call of the image, as [`Runner::execute`] makes it.
pub struct Call<'a> {
    /// The function called (an address in the image or a stub).
    pub address: u64,
    /// Its arguments, in the architecture's calling convention.
    pub args: &'a [u64],
    /// Interrupts enabled at the call (`RFLAGS.IF`; on ARM64 `PSTATE.I` and `F` clear).
    pub interrupts: bool,
    /// Made while another call waits for a host answer: it runs below that call's frame.
    pub nested: bool,
    /// The call's processor, when no interrupt can arrive in it.
    pub processor: Option<Processor>,
    /// `ppm-sim`'s pages sent with the call.
    pub pages: Vec<(u64, PageBytes)>,
    /// The IRQL the kernel calls at (Driver Verifier's rules), if told.
    pub irql: Option<u64>,
    /// The time-stamp counter ahead (with `processor`).
    pub timestamps: Option<Vec<Value>>,
}

impl<'a> Call<'a> {
    /// A call of `address` with `args`, with no processor, pages, IRQL or time stamps.
    pub const fn plain(address: u64, args: &'a [u64], interrupts: bool, nested: bool) -> Self {
        Self {
            address,
            args,
            interrupts,
            nested,
            processor: None,
            pages: Vec::new(),
            irql: None,
            timestamps: None,
        }
    }
}

/// The answer of a call: `{"rax", "writes"}` or `{"crash"}`.
pub type Done = Message;

impl Runner {
    /// A runner talking over `channel`, no image loaded.
    pub fn new(channel: Channel) -> Self {
        Self {
            channel,
            uc: None,
            arch: Arch::X64,
            crash: None,
            fatal: None,
            watchdog: None,
            executed: HashSet::new(),
            contexts: Vec::new(),
            stack_report: BTreeMap::new(),
            mirrors: Vec::new(),
            stack_floor: 0,
            painted_below: 0,
            paint_pieces: Vec::new(),
            paint: Vec::new(),
            stack: None,
            stack_low: 0,
            stack_top: 0,
            low_water: HashMap::new(),
            refresh: None,
            stale: HashSet::new(),
            host_pages: HashMap::new(),
            unprotected: HashSet::new(),
            interrupts: true,
            processor: None,
            deferred: Vec::new(),
            timestamps: None,
            windows: 0,
            irql: 0,
            image: None,
            symbols: crate::image::SymbolMap::new(BTreeMap::new()),
            sites: HashMap::new(),
            site_functions: HashSet::new(),
            function_hooks: HashMap::new(),
            imports_by_stub: HashMap::new(),
            kmdf_calls: BTreeMap::new(),
            kmdf_count: 0,
            kmdf_index_names: HashMap::new(),
            etw_providers: HashMap::new(),
            kernel_information: 0,
            seh_log: Vec::new(),
            pool_next: crate::layout::POOL,
            pool_mapped: crate::layout::POOL,
            device_add: 0,
            driver_unload: 0,
            unwinder: None,
            hang_seconds: crate::layout::HANG_SECONDS,
            kmdf_max_functions: 0,
            verifier: None,
            counter: None,
            nested_instructions: 0,
            page_protections: 0,
        }
    }

    /// The engine (an image is loaded).
    pub fn uc(&self) -> Outcome<&Engine> {
        self.uc.as_ref().ok_or_else(|| Stop::Fatal(Fatal::new("no image loaded (send load first)")))
    }

    /// The program counter (0 before a load).
    pub fn pc(&self) -> u64 {
        self.uc.as_ref().map_or(0, |uc| uc.reg_read(self.arch.pc()))
    }

    /// A register.
    pub fn reg(&self, register: c_int) -> u64 {
        self.uc.as_ref().map_or(0, |uc| uc.reg_read(register))
    }

    /// Writes a register.
    pub fn set_reg(&self, register: c_int, value: u64) {
        if let Some(uc) = &self.uc {
            uc.reg_write(register, value);
        }
    }

    // ---- memory --------------------------------------------------------------------------

    /// Whether `page` (the runner's own memory) is mapped.
    fn is_mapped(&self, page: u64) -> bool {
        let mut byte = [0u8; 1];
        self.uc.as_ref().is_some_and(|uc| uc.mem_read(page, &mut byte).is_ok())
    }

    /// Whether some call level mirrors `page`.
    fn mirrored(&self, page: u64) -> bool {
        self.mirrors.iter().any(|level| level.iter().any(|(served, _)| *served == page))
    }

    /// Makes the `ppm-sim` pages in `[address, address + length)` live for this call; any
    /// other unmapped address is a page fault.
    pub(crate) fn ensure(&mut self, address: u64, length: u64) -> Outcome<()> {
        let mut page = address & !(PAGE - 1);
        let end = address.saturating_add(length);
        while page < end {
            if page + PAGE <= USER_LIMIT {
                if self.mirrors.is_empty() {
                    let pc = self.pc();
                    return Err(Crash::new(
                        PAGE_FAULT_IN_NONPAGED_AREA,
                        [address, 0, pc, 0],
                        format!("access to user-mode address {address:#x} outside a call"),
                        pc,
                    )
                    .into());
                }
                if !self.mirrored(page) {
                    self.fetch_page(page)?;
                }
            } else if !self.is_mapped(page) {
                let pc = self.pc();
                return Err(Crash::new(
                    PAGE_FAULT_IN_NONPAGED_AREA,
                    [address, 0, pc, 0],
                    format!("access to unmapped memory at {address:#x}"),
                    pc,
                )
                .into());
            }
            page += PAGE;
        }
        Ok(())
    }

    /// `length` bytes of emulated memory at `address` (`ppm-sim`'s pages fetched as the image's
    /// own touches fetch them).
    pub fn read(&mut self, address: u64, length: u64) -> Outcome<Vec<u8>> {
        if length == 0 || length > (1 << 40) {
            return Ok(Vec::new());
        }
        let size = usize::try_from(length).map_err(|_| Fatal::new("read too long"))?;
        let mut out = vec![0u8; size];
        if address < USER_LIMIT {
            self.ensure(address, length)?;
            self.uc()?.mem_read(address, &mut out)?;
            return Ok(out);
        }
        if self.uc()?.mem_read(address, &mut out).is_err() {
            self.ensure(address, length)?;
            self.uc()?.mem_read(address, &mut out)?;
        }
        Ok(out)
    }

    /// Writes `data` to emulated memory at `address`.
    pub fn write(&mut self, address: u64, data: &[u8]) -> Outcome<()> {
        if data.is_empty() {
            return Ok(());
        }
        if address < USER_LIMIT {
            self.ensure(address, data.len() as u64)?;
            self.uc()?.mem_write(address, data)?;
            return Ok(());
        }
        if self.uc()?.mem_write(address, data).is_err() {
            self.ensure(address, data.len() as u64)?;
            self.uc()?.mem_write(address, data)?;
        }
        Ok(())
    }

    /// A little-endian integer of `size` bytes at `address`.
    pub fn uint(&mut self, address: u64, size: u64) -> Outcome<u64> {
        let bytes = self.read(address, size)?;
        Ok(bytes.iter().rev().fold(0, |value, byte| (value << 8) | u64::from(*byte)))
    }

    /// The u16 at `address`.
    pub fn u16(&mut self, address: u64) -> Outcome<u64> {
        self.uint(address, 2)
    }

    /// The u32 at `address`.
    pub fn u32(&mut self, address: u64) -> Outcome<u64> {
        self.uint(address, 4)
    }

    /// The u64 at `address`.
    pub fn u64(&mut self, address: u64) -> Outcome<u64> {
        self.uint(address, 8)
    }

    /// Writes the low `size` bytes of `value` at `address` (nothing at a null address).
    pub fn put(&mut self, address: u64, value: u64, size: usize) -> Outcome<()> {
        if address == 0 {
            return Ok(());
        }
        self.write(address, &value.to_le_bytes()[..size.min(8)])
    }

    /// Serves a `ppm-sim` page to this call.
    pub(crate) fn fetch_page(&mut self, page: u64) -> Outcome<()> {
        let data = self.read_page(page)?;
        self.install_page(page, data)
    }

    /// Maps `ppm-sim`'s `page` with `data` for this call: stale pages stay mapped between
    /// calls (mapping and unmapping flush Unicorn's translated code), `PROT_NONE` while stale.
    fn install_page(&mut self, page: u64, data: PageBytes) -> Outcome<()> {
        if self.stale.remove(&page) {
            if !self.unprotected.remove(&page) {
                self.protect_page(page, unicorn::PROT_READ | unicorn::PROT_WRITE)?;
            }
        } else {
            if self.stale.len() >= MAX_CACHED_PAGES {
                let old: Vec<u64> = self.stale.drain().collect();
                for old in old {
                    self.uc()?.mem_unmap(old, PAGE)?;
                    self.host_pages.remove(&old);
                }
                self.unprotected.clear();
            }
            let memory = OwnMemory::new(PAGE_BYTES)?;
            // SAFETY: the page's memory lives in host_pages until the page is unmapped.
            unsafe {
                self.uc()?.mem_map_ptr(
                    page,
                    PAGE,
                    unicorn::PROT_READ | unicorn::PROT_WRITE,
                    memory.pointer(),
                )
            }?;
            self.host_pages.insert(page, memory);
        }
        if let Some(memory) = self.host_pages.get_mut(&page) {
            memory.bytes().copy_from_slice(&data[..]);
        }
        if let Some(level) = self.mirrors.last_mut() {
            set_mirror(level, page, data);
        }
        Ok(())
    }

    /// Sets the protection of `ppm-sim`'s `page`, counted in `page_protections`.
    fn protect_page(&mut self, page: u64, protection: u32) -> Outcome<()> {
        self.page_protections += 1;
        Ok(self.uc()?.mem_protect(page, PAGE, protection)?)
    }

    /// One page of `ppm-sim`'s memory, as it is now.
    pub(crate) fn read_page(&mut self, page: u64) -> Outcome<PageBytes> {
        let answer = self.ask(json!({"host": "read", "address": page, "length": PAGE}))?;
        if answer.get("fault").is_some_and(truthy) {
            let pc = self.pc();
            return Err(Crash::new(
                PAGE_FAULT_IN_NONPAGED_AREA,
                [page, 0, pc, 0],
                format!("ppm-sim memory at {page:#x} is not readable"),
                pc,
            )
            .into());
        }
        let data = crate::protocol::hex_bytes(&answer, "bytes")?;
        let bytes: PageBytes = data.clone().into_boxed_slice().try_into().map_err(|_| {
            Fatal::new(format!("read of {page:#x}: {} bytes instead of {PAGE}", data.len()))
        })?;
        Ok(bytes)
    }

    /// A call starts (with `pages`) or an interrupted call resumes (none): the stale pages left
    /// readable become `PROT_NONE`, but for those this call is sent again.
    pub fn protect_stale(&mut self, pages: &[(u64, PageBytes)]) -> Outcome<()> {
        if self.unprotected.is_empty() {
            return Ok(());
        }
        let sent: HashSet<u64> = pages.iter().map(|(page, _)| *page).collect();
        let protect: Vec<u64> =
            self.unprotected.iter().copied().filter(|page| !sent.contains(page)).collect();
        for page in protect {
            self.protect_page(page, unicorn::PROT_NONE)?;
        }
        self.unprotected.retain(|page| sent.contains(page));
        Ok(())
    }

    /// An answer resumes the call that asked, with the pages of the notifications nested in it
    /// meanwhile: they become this call's.
    fn resume_pages(&mut self, pages: Vec<(u64, PageBytes)>) -> Outcome<()> {
        if !pages.is_empty() && self.mirrors.is_empty() {
            return Err(Fatal::new("an answer carried pages while no call was under way").into());
        }
        for (page, data) in pages {
            if !self.mirrored(page) {
                self.install_page(page, data)?;
            }
        }
        Ok(())
    }

    /// A nested call starts: each page an interrupted call mirrors is taken afresh (from
    /// `sent`, else read) and the interrupted call's own changes laid over it.
    fn share_outer_pages(&mut self, sent: &[(u64, PageBytes)]) -> Outcome<()> {
        let levels = self.mirrors.len() - 1;
        for level in 0..levels {
            for entry in 0..self.mirrors[level].len() {
                let page = self.mirrors[level][entry].0;
                let fresh: PageBytes = match sent.iter().find(|(address, _)| *address == page) {
                    Some((_, data)) => data.clone(),
                    None => self.read_page(page)?,
                };
                let current: PageBytes = self.page_now(page);
                let before = &self.mirrors[level][entry].1;
                let (merged, baseline) = if current[..] == before[..] {
                    (fresh.clone(), fresh)
                } else {
                    let mut laid = fresh.clone();
                    let mut kept = fresh;
                    for (start, end) in changed_runs(&before[..], &current[..]) {
                        laid[start..end].copy_from_slice(&current[start..end]);
                        kept[start..end].copy_from_slice(&before[start..end]);
                    }
                    (laid, kept)
                };
                if merged[..] != current[..]
                    && let Some(memory) = self.host_pages.get_mut(&page)
                {
                    memory.bytes().copy_from_slice(&merged[..]);
                }
                self.mirrors[level][entry].1 = baseline;
                set_mirror(&mut self.mirrors[levels], page, merged);
            }
        }
        Ok(())
    }

    /// The bytes of a mapped `ppm-sim` page now.
    fn page_now(&mut self, page: u64) -> PageBytes {
        self.host_pages
            .get_mut(&page)
            .and_then(|memory| Box::<[u8]>::from(&*memory.bytes()).try_into().ok())
            .unwrap_or_else(|| Box::new([0; PAGE_BYTES]))
    }

    /// The byte ranges the image changed in `ppm-sim`'s pages this call, coalesced; the pages
    /// become stale.
    fn release_mirrors(&mut self) -> Vec<Value> {
        let mut pages = self.mirrors.pop().unwrap_or_default();
        pages.sort_by_key(|(page, _)| *page);
        let mut ranges: Vec<(u64, Vec<u8>)> = Vec::new();
        for (page, before) in pages {
            let outer = self
                .mirrors
                .iter()
                .position(|level| level.iter().any(|(served, _)| *served == page));
            if outer.is_none() {
                self.unprotected.insert(page);
                self.stale.insert(page);
            }
            // Most pages are unchanged: compared in place, copied only when they are not.
            let unchanged = self.host_pages.get_mut(&page).map_or_else(
                || before.iter().all(|byte| *byte == 0),
                |memory| memory.bytes()[..] == before[..],
            );
            if unchanged {
                continue;
            }
            let after = self.page_now(page);
            let runs = changed_runs(&before[..], &after[..]);
            if let Some(level) = outer
                && let Some((_, baseline)) =
                    self.mirrors[level].iter_mut().find(|(served, _)| *served == page)
            {
                for &(start, end) in &runs {
                    baseline[start..end].copy_from_slice(&after[start..end]);
                }
            }
            for (start, end) in runs {
                let address = page + start as u64;
                let data = &after[start..end];
                match ranges.last_mut() {
                    Some((first, bytes)) if *first + bytes.len() as u64 == address => {
                        bytes.extend_from_slice(data);
                    }
                    _ => ranges.push((address, data.to_vec())),
                }
            }
        }
        ranges
            .into_iter()
            .map(|(address, data)| json!([address, crate::protocol::encode_hex(&data)]))
            .collect()
    }
}

/// Sets `page`'s bytes in a call level's mirror (added at the end if new).
fn set_mirror(level: &mut Vec<(u64, PageBytes)>, page: u64, data: PageBytes) {
    if let Some((_, bytes)) = level.iter_mut().find(|(served, _)| *served == page) {
        *bytes = data;
    } else {
        level.push((page, data));
    }
}

/// Whether a JSON value counts as true: anything but `null`, `false`, zero, and an empty
/// string, array or object.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// The `[start, end)` runs of bytes that differ between `before` and `after`, maximal and in
/// order (blocks of 32 equal bytes skipped whole).
pub fn changed_runs(before: &[u8], after: &[u8]) -> Vec<(usize, usize)> {
    let length = before.len().min(after.len());
    let mut runs = Vec::new();
    let mut at = 0;
    while at < length {
        if length - at >= 32 && before[at..at + 32] == after[at..at + 32] {
            at += 32;
            continue;
        }
        if before[at] == after[at] {
            at += 1;
            continue;
        }
        let start = at;
        while at < length && before[at] != after[at] {
            at += 1;
        }
        runs.push((start, at));
    }
    runs
}

/// The time-stamp counters of a message, checked for their count (each counter is checked
/// when a read uses it).
fn timestamps_of(message: &Message) -> Result<Option<Vec<Value>>, Fatal> {
    match message.get("timestamps") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(values)) if (1..=MAX_TIMESTAMPS).contains(&values.len()) => {
            Ok(Some(values.clone()))
        }
        Some(other) => Err(Fatal::new(format!(
            "'timestamps' must be a list of 1 to {MAX_TIMESTAMPS} counters, got {}",
            shown_value(other)
        ))),
    }
}

/// A message's pages, each a whole page of `ppm-sim`'s user half.
pub fn pages_of(pages: Vec<(Value, PageBytes)>) -> Result<Vec<(u64, PageBytes)>, Fatal> {
    let mut out = Vec::with_capacity(pages.len());
    for (address, data) in pages {
        let address = unsigned(Some(&address), "page", 64)?;
        if address % PAGE != 0 || address + PAGE > USER_LIMIT {
            return Err(Fatal::new(format!(
                "call: page {address:#x} is not a whole page of the user half"
            )));
        }
        out.push((address, data));
    }
    Ok(out)
}

impl Runner {
    // ---- host requests -------------------------------------------------------------------

    /// One host request; a `call` arriving meanwhile runs nested. When a nested call bugchecks,
    /// the interrupted call ends with the same bugcheck when the answer comes.
    pub fn ask(&mut self, request: Value) -> Outcome<Message> {
        if let Some(watchdog) = &self.watchdog {
            watchdog.pause();
        }
        let result = self.ask_paused(request);
        if let Some(watchdog) = &self.watchdog {
            watchdog.resume();
        }
        result
    }

    /// `ask` with the watchdog paused.
    fn ask_paused(&mut self, request: Value) -> Outcome<Message> {
        let host = request.get("host").map_or_else(|| "None".to_owned(), shown_value);
        let message = self.with_deferred(request);
        self.channel.send(&message)?;
        let mut bugcheck: Option<Value> = None;
        loop {
            let Some(received) = self.channel.receive()? else {
                return Err(Fatal::new(format!(
                    "ppm-sim closed the pipe while {host} was waiting"
                ))
                .into());
            };
            let message = received.message;
            if !message.contains_key("op") {
                if let Some(error) = message.get("error") {
                    let text = error.as_str().map_or_else(|| error.to_string(), str::to_owned);
                    return Err(Fatal::new(format!("ppm-sim answered {host}: {text}")).into());
                }
                self.timestamps = timestamps_of(&message)?;
                self.windows = 0;
                let pages = pages_of(received.pages)?;
                self.resume_pages(pages)?;
                self.protect_stale(&[])?;
                if let Some(crash) = bugcheck {
                    return Err(Crash::from_json(&crash)?.into());
                }
                return Ok(message);
            }
            if message.get("op").and_then(Value::as_str) != Some("call") {
                let op = message.get("op").map_or_else(String::new, shown_value);
                return Err(Fatal::new(format!(
                    "{op} while a host request was waiting (only call may nest)"
                ))
                .into());
            }
            if let Some(watchdog) = &self.watchdog {
                watchdog.resume();
            }
            let done = self.cmd_call(&message, received.pages, true);
            if let Some(watchdog) = &self.watchdog {
                watchdog.pause();
            }
            let done = done?;
            let crash = done.get("crash").cloned();
            let answer = self.with_deferred(json!({"done": done}));
            self.channel.send(&answer)?;
            if bugcheck.is_none() {
                bugcheck = crash;
            }
        }
    }

    /// `message` carrying the deferred requests, which `ppm-sim` serves first, in order.
    pub fn with_deferred(&mut self, mut message: Value) -> Value {
        if !self.deferred.is_empty()
            && let Value::Object(map) = &mut message
        {
            map.insert("deferred".to_owned(), Value::Array(std::mem::take(&mut self.deferred)));
        }
        message
    }

    /// The image changed IF (PSTATE.I): `ppm-sim` is told now, or with the next message when no
    /// interrupt can arrive in the call.
    pub fn set_interrupts(&mut self, enabled: bool) -> Outcome<()> {
        if enabled == self.interrupts {
            return Ok(());
        }
        self.interrupts = enabled;
        let request = json!({"host": "interrupts", "enabled": enabled});
        if self.processor.is_none() {
            self.ask(request)?;
        } else {
            self.deferred.push(request);
            self.windows += 1;
        }
        Ok(())
    }

    /// A time-stamp read: the counter `ppm-sim` sent for this interrupt window (reported with
    /// the next message), or a request.
    pub fn read_timestamp(&mut self, request: Value) -> Outcome<u64> {
        self.windows += 1;
        let counter = match &self.timestamps {
            Some(values) if values.len() == 1 => values[0].clone(),
            Some(values) if values.len() >= self.windows => values[self.windows - 1].clone(),
            _ => {
                let answer = self.ask(request)?;
                return Ok(integer(&answer, "value", 64)?);
            }
        };
        let value = unsigned(Some(&counter), "timestamps", 64)?;
        let mut deferred = request;
        if let Value::Object(map) = &mut deferred {
            map.insert("value".to_owned(), json!(value));
        }
        self.deferred.push(deferred);
        Ok(value)
    }

    /// `KeGetCurrentProcessorNumberEx`'s answer: the call's processor (the request deferred),
    /// or `ppm-sim`'s.
    pub fn current_processor(&mut self) -> Outcome<Processor> {
        if let Some(processor) = self.processor {
            self.deferred.push(json!({"host": "current_processor", "index": processor.index}));
            self.windows += 1;
            return Ok(processor);
        }
        let answer = self.ask(json!({"host": "current_processor"}))?;
        Ok(Processor {
            index: integer(&answer, "index", 32)?,
            group: integer(&answer, "group", 16)?,
            number: integer(&answer, "number", 8)?,
        })
    }

    // ---- registers -----------------------------------------------------------------------

    /// Argument `index` of the call being made, at its callee's first instruction.
    pub fn arg(&mut self, index: usize) -> Outcome<u64> {
        let registers = self.arch.arg_registers();
        if let Some(register) = registers.get(index) {
            return Ok(self.reg(*register));
        }
        let sp = self.reg(self.arch.sp());
        self.u64(self.arch.stack_argument(sp, index as u64))
    }

    /// Argument `index`'s low 32 bits.
    pub fn arg32(&mut self, index: usize) -> Outcome<u64> {
        Ok(self.arg(index)? & 0xFFFF_FFFF)
    }

    /// Where the call being made returns to (at its callee's first instruction).
    pub fn return_address(&mut self) -> Outcome<u64> {
        match self.arch {
            Arch::X64 => {
                let sp = self.reg(self.arch.sp());
                self.u64(sp)
            }
            Arch::Arm64 => Ok(self.reg(crate::arch::arm64::LR)),
        }
    }

    /// The stack's memory, mapped at `stack_low` (as long as the memory).
    pub fn set_stack(&mut self, stack: OwnMemory) {
        let bytes = stack.length;
        self.stack = Some(stack);
        self.painted_below = self.stack_low;
        self.paint_pieces =
            (0..usize::BITS - bytes.leading_zeros()).rev().map(|n| 1usize << n).collect();
        self.paint = vec![PAINT; bytes];
    }

    // ---- the stack -----------------------------------------------------------------------

    /// Paints the stack's `[start, end)`.
    pub(crate) fn paint(&mut self, start: u64, end: u64) {
        let low = self.stack_low;
        if start < end
            && let Some(stack) = &mut self.stack
        {
            stack.bytes()[stack_offset(low, start)..stack_offset(low, end)].fill(PAINT);
        }
    }

    /// The lowest stack address written since the last paint (`below` if none): the painted
    /// prefix of `[stack_low, below)`.
    pub(crate) fn lowest_touched(&mut self, below: u64) -> u64 {
        let size = stack_offset(self.stack_low, below);
        let low = self.stack_low;
        let Some(stack) = &mut self.stack else {
            return below;
        };
        let stack = stack.bytes();
        let paint = &self.paint;
        // Slices compared whole: one memcmp each, not a loop over bytes.
        let painted_prefix = |length: usize| stack[..length] == paint[..length];
        if !self.low_water.contains_key(&below) && self.low_water.len() >= MAX_LOW_WATER_HINTS {
            self.low_water.clear();
        }
        let hints = self.low_water.entry(below).or_default();
        for &hint in hints.iter() {
            if painted_prefix(hint) && (hint == size || stack[hint] != PAINT) {
                return low + hint as u64;
            }
        }
        let mut painted = 0usize;
        for &piece in &self.paint_pieces {
            let end = painted + piece;
            if end <= size && stack[painted..end] == paint[painted..end] {
                painted = end;
            }
        }
        hints.insert(0, painted);
        hints.truncate(LOW_WATER_HINTS);
        low + painted as u64
    }
}

impl Runner {
    // ---- execution -----------------------------------------------------------------------

    /// Calls `address` with `args` (the Windows convention of the image's architecture):
    /// `{"rax", "writes"}` or `{"crash"}`. `processor`: the call's, when no interrupt can
    /// arrive in it, and `timestamps` its time-stamp counter ahead; `pages`: `ppm-sim`'s pages
    /// sent with the call; `irql`: the IRQL the kernel calls at.
    // Long because it is one sequence of steps whose order matters (the frame, the paint, the
    // registers, the pages, the run, the low-water mark, the state restored): split, that
    // order would no longer read in one place.
    #[allow(clippy::too_many_lines)]
    pub fn execute(&mut self, call: Call<'_>) -> Outcome<Done> {
        let Call { address, args, interrupts, nested, processor, pages, irql, timestamps } = call;
        let arch = self.arch;
        let level = self.mirrors.len().wrapping_sub(1);
        if nested {
            self.save_context(level)?;
        }
        let saved = CallState {
            crash: self.crash.take(),
            interrupts: self.interrupts,
            processor: self.processor,
            irql: self.irql,
            timestamps: self.timestamps.take(),
            windows: self.windows,
        };
        let outer_nested = std::mem::take(&mut self.nested_instructions);
        let start_count = self.counter.as_deref().copied().unwrap_or(0);
        let top = if nested { (self.reg(arch.sp()) - NESTED_GAP) & !0xF } else { self.stack_top };
        let registers = arch.arg_registers();
        let extra = args.get(registers.len()..).unwrap_or(&[]);
        let (entry_sp, stack_args, sp) = arch.frame(top, extra.len() as u64);
        if sp <= self.stack_low {
            self.restore_state(saved);
            self.nested_instructions = outer_nested;
            return Err(Crash::new(
                UNEXPECTED_KERNEL_MODE_TRAP,
                [8],
                "no stack left for a nested call",
                0,
            )
            .into());
        }
        let low = self.stack_low;
        let returns_to = if nested { NESTED_SENTINEL } else { SENTINEL };
        if let Some(stack) = &mut self.stack {
            let bytes = stack.bytes();
            for (number, value) in extra.iter().enumerate() {
                let at = stack_offset(low, stack_args + 8 * number as u64);
                bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
            if arch.return_on_stack() {
                let at = stack_offset(low, sp);
                bytes[at..at + 8].copy_from_slice(&returns_to.to_le_bytes());
            }
        }
        if nested {
            let touched = self.lowest_touched(sp);
            self.stack_floor = self.stack_floor.min(touched);
            self.paint(touched, sp);
        } else {
            self.stack_floor = self.stack_top;
            self.paint(self.painted_below, sp);
            self.painted_below = self.stack_low;
        }
        let in_registers = args.len().min(registers.len());
        let mut names: Vec<c_int> = registers[..in_registers].to_vec();
        let mut values: Vec<u64> = args[..in_registers].to_vec();
        names.push(arch.sp());
        values.push(sp);
        for (register, value) in arch.call_registers(interrupts, returns_to) {
            names.push(register);
            values.push(value);
        }
        self.uc()?.reg_write_batch(&names, &values)?;
        self.interrupts = interrupts;
        self.processor = processor;
        self.timestamps = timestamps;
        self.windows = 0;
        if let Some(irql) = irql {
            self.irql = irql;
        } else if !nested {
            self.irql = 0;
        }
        self.protect_stale(&pages)?;
        self.mirrors.push(Vec::new());
        if nested {
            self.share_outer_pages(&pages)?;
        }
        for (page, data) in pages {
            let present = self
                .mirrors
                .last()
                .is_some_and(|level| level.iter().any(|(served, _)| *served == page));
            if !present {
                self.install_page(page, data)?;
            }
        }
        if !nested && let Some(watchdog) = &self.watchdog {
            watchdog.arm();
        }
        let emulated = self.emulate(address, returns_to);
        let rax = self.reg(arch.result());
        if !nested && let Some(watchdog) = &self.watchdog {
            watchdog.disarm();
        }
        let writes = self.release_mirrors();
        emulated?;
        let mut lowest = self.lowest_touched(entry_sp);
        if !nested {
            self.painted_below = lowest;
            lowest = lowest.min(self.stack_floor);
        }
        let record = self.stack_report.entry(address).or_insert((0, 0));
        record.0 += 1;
        record.1 = record.1.max(entry_sp - lowest);
        let crash = self.crash.take();
        if nested && let Some(context) = self.contexts.get(level) {
            self.uc()?.context_restore(context)?;
        }
        self.restore_state(saved);
        let executed = self.counter.as_deref().copied().unwrap_or(0).wrapping_sub(start_count);
        let own = executed.wrapping_sub(self.nested_instructions);
        self.nested_instructions = outer_nested + if nested { executed } else { 0 };
        if let Some(crash) = crash {
            return Ok(self.crash_json(&crash));
        }
        let mut done = Message::new();
        done.insert("rax".to_owned(), json!(rax));
        done.insert("writes".to_owned(), Value::Array(writes));
        if self.verifier.as_ref().is_some_and(|verifier| verifier.count_instructions) {
            done.insert("instructions".to_owned(), json!(own));
        }
        Ok(done)
    }

    /// Puts back the state of the call a nested call interrupted.
    fn restore_state(&mut self, saved: CallState) {
        self.crash = saved.crash;
        self.interrupts = saved.interrupts;
        self.processor = saved.processor;
        self.irql = saved.irql;
        self.timestamps = saved.timestamps;
        self.windows = saved.windows;
    }

    /// Saves the registers of the call a nested call interrupts at nesting `level`.
    fn save_context(&mut self, level: usize) -> Outcome<()> {
        if level == self.contexts.len() {
            let context = self.uc()?.context_alloc()?;
            self.contexts.push(context);
        }
        let uc = self.uc.as_ref().ok_or_else(|| Fatal::new("no image loaded"))?;
        if let Some(context) = self.contexts.get(level) {
            uc.context_save(context)?;
        }
        Ok(())
    }

    /// Runs from `address` to `returns_to`, the call's return. A touch of a stale `ppm-sim`
    /// page stops the emulation, the page is fetched again, and the instruction restarts.
    fn emulate(&mut self, address: u64, returns_to: u64) -> Outcome<()> {
        let until = if returns_to == SENTINEL { UNREACHED } else { returns_to };
        let mut start = address;
        loop {
            self.refresh = None;
            let handle = self.uc()?.handle();
            let result = Engine::emu_start_handle(handle, start, until);
            if let Err(error) = result {
                if let Some(fatal) = self.fatal.take() {
                    return Err(fatal.into());
                }
                let fired = self.watchdog.as_ref().is_some_and(Watchdog::fired);
                if let Some(page) = self.refresh
                    && self.crash.is_none()
                    && !fired
                {
                    if let Err(stop) = self.fetch_page(page) {
                        match stop {
                            Stop::Crash(crash) => {
                                self.crash = Some(crash);
                                return Ok(());
                            }
                            Stop::Fatal(fatal) => return Err(fatal.into()),
                        }
                    }
                    start = self.pc();
                    let image = self.image.as_ref().map_or(0..0, |image| {
                        crate::layout::IMAGE_BASE..crate::layout::IMAGE_BASE + image.size
                    });
                    if let Some(count) = self.counter.as_deref_mut()
                        && image.contains(&start)
                    {
                        *count -= 1;
                    }
                    continue;
                }
                if self.crash.is_none() {
                    self.crash = Some(if fired { self.hang() } else { self.crash_from(&error) });
                }
                return Ok(());
            }
            if let Some(fatal) = self.fatal.take() {
                return Err(fatal.into());
            }
            if self.crash.is_none() && self.pc() != returns_to {
                let fired = self.watchdog.as_ref().is_some_and(Watchdog::fired);
                let pc = self.pc();
                self.crash = Some(if fired {
                    self.hang()
                } else {
                    Crash::new(0, [], "emulation stopped before the return", pc)
                });
            }
            return Ok(());
        }
    }

    /// The crash of a hang.
    fn hang(&self) -> Crash {
        let limit = self
            .watchdog
            .as_ref()
            .map_or(crate::layout::HANG_SECONDS, |watchdog| watchdog.limit_seconds);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let milliseconds = (limit * 1000.0) as u64;
        Crash::new(
            0,
            [milliseconds],
            format!("hang: the command ran longer than {} s", seconds_text(limit)),
            self.pc(),
        )
    }

    /// The crash of an emulation error.
    fn crash_from(&self, error: &unicorn::UcError) -> Crash {
        let pc = self.pc();
        if error.errno == unicorn::ERR_INSN_INVALID {
            return Crash::new(
                crate::layout::KMODE_EXCEPTION_NOT_HANDLED,
                [crate::layout::STATUS_ILLEGAL_INSTRUCTION, pc],
                "invalid instruction (#UD)",
                pc,
            );
        }
        Crash::new(
            PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, pc],
            format!("emulation stopped: {}", error.message()),
            pc,
        )
    }

    /// A crash as a `done`'s `{"crash"}`.
    pub fn crash_json(&self, crash: &Crash) -> Done {
        let address = if crash.address == 0 { self.pc() } else { crash.address };
        let mut done = Message::new();
        done.insert(
            "crash".to_owned(),
            json!({
                "code": crash.code,
                "parameters": crash.parameters,
                "what": crash.what,
                "address": address,
                "symbol": self.symbol(address),
            }),
        );
        done
    }

    /// A hook's failure: the first bugcheck is the machine's; a failure of the runner stops
    /// the command. The emulation stops either way.
    pub fn stop(&mut self, stop: Stop) {
        match stop {
            Stop::Crash(crash) => {
                if self.crash.is_none() {
                    self.crash = Some(crash);
                }
            }
            Stop::Fatal(fatal) => self.fatal = Some(fatal),
        }
        if let Some(uc) = &self.uc {
            uc.emu_stop();
        }
    }
}

/// The hang limit's seconds as the hang's text shows them: a whole number without `.0` (`10`),
/// else the shortest decimal that reads back as the value (`0.25`).
fn seconds_text(value: f64) -> String {
    let text = format!("{value}");
    text.strip_suffix(".0").map_or_else(|| text.clone(), str::to_owned)
}

impl Runner {
    // ---- commands ------------------------------------------------------------------------

    /// `call` (or a call nested in a host request).
    pub fn cmd_call(
        &mut self,
        message: &Message,
        pages: Vec<(Value, PageBytes)>,
        nested: bool,
    ) -> Outcome<Done> {
        self.uc()?;
        let address = integer(message, "address", 64)?;
        let args = match message.get("args") {
            None => Vec::new(),
            Some(Value::Array(args)) if args.len() <= crate::layout::MAX_CALL_ARGS => args
                .iter()
                .map(|arg| unsigned(Some(arg), "arg", 64))
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => {
                return Err(Fatal::new(format!(
                    "call: 'args' must be a list of at most {} integers",
                    crate::layout::MAX_CALL_ARGS
                ))
                .into());
            }
        };
        let interrupts = match message.get("interrupts") {
            None => true,
            Some(Value::Bool(flag)) => *flag,
            Some(_) => return Err(Fatal::new("call: 'interrupts' must be true or false").into()),
        };
        let processor = match message.get("processor") {
            None | Some(Value::Null) => None,
            Some(Value::Object(processor)) => Some(Processor {
                index: integer(processor, "index", 32)?,
                group: integer(processor, "group", 16)?,
                number: integer(processor, "number", 8)?,
            }),
            Some(_) => return Err(Fatal::new("call: 'processor' must be an object").into()),
        };
        let timestamps = timestamps_of(message)?;
        if timestamps.is_some() && processor.is_none() {
            return Err(Fatal::new("call: 'timestamps' is sent only with 'processor'").into());
        }
        let irql = match message.get("irql") {
            None => 0,
            Some(Value::Number(number)) if number.as_u64().is_some_and(|irql| irql <= 15) => {
                number.as_u64().unwrap_or(0)
            }
            Some(_) => return Err(Fatal::new("call: 'irql' must be an integer in 0..=15").into()),
        };
        let label = match message.get("label") {
            None | Some(Value::Null) => None,
            Some(Value::String(label)) => Some(label.clone()),
            Some(_) => return Err(Fatal::new("call: 'label' must be a string").into()),
        };
        let pages = pages_of(pages)?;
        let mut injected_before = false;
        if let Some(verifier) = &mut self.verifier {
            if !nested {
                verifier.phase = crate::verifier::Phase::Runtime;
            }
            injected_before = verifier.injected.is_some();
            verifier.depth += 1;
        }
        let call = Call {
            processor,
            pages,
            irql: Some(irql),
            timestamps,
            ..Call::plain(address, &args, interrupts, nested)
        };
        let done = self.run(call);
        if let Some(verifier) = &mut self.verifier {
            verifier.depth -= 1;
        }
        let done = done?;
        if let Some(verifier) = &mut self.verifier
            && let Some(rax) = done.get("rax").and_then(Value::as_u64)
        {
            if let (Some(label), Some(instructions)) =
                (&label, done.get("instructions").and_then(Value::as_u64))
            {
                verifier.cost(label, instructions);
            }
            // Faulted in this call, not in a notification nested in it.
            let faulted = !injected_before
                && verifier.injected.is_some()
                && verifier.injected_depth == verifier.depth + 1;
            let handle = args.first().copied().unwrap_or(0);
            verifier.call_done(label.as_deref(), handle, rax & 0xFF != 0, faulted);
        }
        Ok(done)
    }

    /// `execute`, a crash raised before the call (no stack left) as its answer.
    pub fn run(&mut self, call: Call<'_>) -> Outcome<Done> {
        match self.execute(call) {
            Err(Stop::Crash(crash)) => Ok(self.crash_json(&crash)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{OwnMemory, PAINT, PageBytes, Runner, Stop};
    use crate::layout::PAGE_BYTES;
    use crate::protocol::Channel;

    const STACK_LOW: u64 = 0x000F_F800_0010_0000;
    const STACK_BYTES: usize = 6 * PAGE_BYTES;

    /// A runner with no image, its stack at `STACK_LOW` and nothing else.
    fn with_stack() -> Runner {
        let mut runner = Runner::new(Channel::new(None));
        runner.stack_low = STACK_LOW;
        runner.stack_top = STACK_LOW + STACK_BYTES as u64;
        runner.set_stack(OwnMemory::new(STACK_BYTES).unwrap());
        runner
    }

    /// Writes a zero `depth` bytes below the stack's top, as a call would.
    fn touch(runner: &mut Runner, depth: usize) {
        let stack = runner.stack.as_mut().unwrap().bytes();
        stack[STACK_BYTES - depth] = 0;
    }

    #[test]
    fn the_low_water_mark_follows_the_stack_not_the_last_answer() {
        // The mark found below an address is reused only while the stack still shows it: a
        // deeper or a shallower touch below the same address is found anew.
        let mut runner = with_stack();
        let (low, top) = (runner.stack_low, runner.stack_top);
        runner.paint(low, top);
        assert_eq!(runner.lowest_touched(top), top, "untouched");
        touch(&mut runner, 64);
        assert_eq!(runner.lowest_touched(top), top - 64);
        touch(&mut runner, 300);
        assert_eq!(runner.lowest_touched(top), top - 300, "deeper");
        runner.paint(low, top);
        touch(&mut runner, 40);
        assert_eq!(runner.lowest_touched(top), top - 40, "shallower, below the same address");
        touch(&mut runner, STACK_BYTES);
        assert_eq!(runner.lowest_touched(top), low, "the very bottom");
        runner.paint(low, top);
        assert_eq!(runner.lowest_touched(top), top);
        // A byte written with the paint's own value is not seen: the paint's known limit.
        let stack = runner.stack.as_mut().unwrap().bytes();
        stack[STACK_BYTES - 16] = PAINT;
        assert_eq!(runner.lowest_touched(top), top);
    }

    #[test]
    fn the_low_water_mark_below_each_address_is_its_own() {
        let mut runner = with_stack();
        let (low, top) = (runner.stack_low, runner.stack_top);
        runner.paint(low, top);
        touch(&mut runner, 2000);
        assert_eq!(runner.lowest_touched(top), top - 2000);
        // Below a lower address, the same write is above it: nothing touched there.
        assert_eq!(runner.lowest_touched(top - 4096), top - 4096);
        assert_eq!(runner.lowest_touched(top), top - 2000);
    }

    #[test]
    fn pages_with_an_answer_need_a_call_under_way() {
        let mut runner = with_stack();
        let page: PageBytes = Box::new([0; PAGE_BYTES]);
        match runner.resume_pages(vec![(0x7000, page)]) {
            Err(Stop::Fatal(fatal)) => {
                assert_eq!(fatal.0, "an answer carried pages while no call was under way");
            }
            _ => panic!("pages without a call under way were taken"),
        }
        // Without pages, an answer needs no call.
        assert!(runner.resume_pages(Vec::new()).is_ok());
    }
}
