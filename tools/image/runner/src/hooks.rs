//! The runner's hooks on the emulated CPU: the machine-answered instruction sites, the stubs of
//! imports, KMDF functions and PoFx services, the stop at a command's return, coverage, memory
//! faults, interrupts and exception dispatch.
//!
//! Each hook is an `extern "C"` function whose user data is the runner itself: the runner is
//! boxed for the process's life (`main`), and no reference to it is held across `emu_start`
//! (`Engine::emu_start_handle`), so a hook's `&mut Runner` is the only one while it runs.

use std::ffi::{c_int, c_void};

use serde_json::{Value, json};

use crate::arch::{DAIF_I, DAIF_SHIFT, arm64, x86};
use crate::image::{Arch, Arm64Site, Site, SiteKind};
use crate::layout::{
    ATTEMPTED_WRITE_TO_READONLY_MEMORY, IMAGE_BASE, KMDF_STUBS, KMODE_EXCEPTION_NOT_HANDLED,
    NESTED_SENTINEL, PAGE, PAGE_FAULT_IN_NONPAGED_AREA, POFX_STUBS, RFLAGS_IF, SENTINEL,
    STACK_GUARD, STATUS_BREAKPOINT, STATUS_ILLEGAL_INSTRUCTION, STATUS_INTEGER_DIVIDE_BY_ZERO,
    STATUS_PRIVILEGED_INSTRUCTION, STUBS, UNEXPECTED_KERNEL_MODE_TRAP, UNLOAD_THUNK, USER_LIMIT,
};
use crate::protocol::{Fatal, integer};
use crate::runner::{Crash, Outcome, Runner, Stop, truthy};
use crate::unicorn::{self, Handle};
use crate::unwinding::Unwinding;
use crate::{arm64_unwind, seh};

/// Unicorn's ARM64 exception numbers (QEMU's `EXCP_*`).
const ARM64_EXCP_UDEF: u32 = 1;
/// A breakpoint (`BRK`).
const ARM64_EXCP_BKPT: u32 = 7;
/// `BRK #0xF003`: `__fastfail`.
const ARM64_BRK_FASTFAIL: u64 = 0xF003;
/// `MRS` of `CNTVCT_EL0`: ARM64's time-stamp read.
const CNTVCT_EL0: (u8, u8, u8, u8, u8) = (3, 3, 14, 0, 2);

impl seh::Memory for Runner {
    type Error = Stop;

    fn read(&mut self, address: u64, buffer: &mut [u8]) -> Result<(), Stop> {
        let data = Self::read(self, address, buffer.len() as u64)?;
        buffer.copy_from_slice(&data);
        Ok(())
    }
}

/// The runner behind a hook's user data.
///
/// # Safety
/// `data` is the runner `install` registered, alive and not otherwise borrowed while the hook
/// runs (see the module's comment).
unsafe fn runner<'a>(data: *mut c_void) -> &'a mut Runner {
    // SAFETY: the caller's promise (above).
    unsafe { &mut *data.cast::<Runner>() }
}

/// A machine-answered instruction.
unsafe extern "C" fn site_hook(_: Handle, address: u64, _: u32, data: *mut c_void) {
    // SAFETY: registered by `install` with the runner as its data.
    let runner = unsafe { runner(data) };
    let result = match runner.sites.get(&address).copied() {
        Some(Site::X64 { kind, length }) => runner.site_x64(kind, length, address),
        Some(Site::Arm64(site)) => runner.site_arm64(site, address),
        None => Ok(()),
    };
    if let Err(stop) = result {
        runner.stop(stop);
    }
}

/// A stub: an import, a KMDF function or a PoFx service.
unsafe extern "C" fn stub_hook(_: Handle, address: u64, _: u32, data: *mut c_void) {
    // SAFETY: registered by `install` with the runner as its data.
    let runner = unsafe { runner(data) };
    if let Err(stop) = runner.stub(address) {
        runner.stop(stop);
    }
}

/// The stop at a command's return address, before the instruction there runs.
unsafe extern "C" fn stop_hook(engine: Handle, _: u64, _: u32, _: *mut c_void) {
    crate::unicorn::Engine::stop_handle(engine);
}

/// A function's first instruction, once: coverage.
unsafe extern "C" fn function_hook(_: Handle, address: u64, _: u32, data: *mut c_void) {
    // SAFETY: registered by `install` with the runner as its data.
    let runner = unsafe { runner(data) };
    runner.executed.insert(address - IMAGE_BASE);
    if let Some(hook) = runner.function_hooks.remove(&address)
        && let Some(uc) = &runner.uc
    {
        let _ = uc.hook_del(hook);
    }
}

/// An access to unmapped or protected memory: whether it may go on.
unsafe extern "C" fn memory_hook(
    _: Handle,
    access: c_int,
    address: u64,
    size: c_int,
    _: i64,
    data: *mut c_void,
) -> bool {
    // SAFETY: registered by `install` with the runner as its data.
    let runner = unsafe { runner(data) };
    match runner.memory_fault(access, address, u64::try_from(size).unwrap_or(0)) {
        Ok(go_on) => go_on,
        Err(stop) => {
            runner.stop(stop);
            false
        }
    }
}

/// An interrupt or CPU exception.
unsafe extern "C" fn interrupt_hook(_: Handle, number: u32, data: *mut c_void) {
    // SAFETY: registered by `install` with the runner as its data.
    let runner = unsafe { runner(data) };
    let result = match runner.arch {
        Arch::X64 => runner.interrupt_x64(number),
        Arch::Arm64 => runner.interrupt_arm64(number),
    };
    if let Err(stop) = result {
        runner.stop(stop);
    }
}

/// Adds the runner's hooks: each site, the stubs, the stop, coverage of each function, memory
/// faults and interrupts.
pub fn install(runner: &mut Runner, sites: &[u64], functions: &[u64]) -> Outcome<()> {
    let data: *mut c_void = std::ptr::from_mut(runner).cast();
    let site: unicorn::CodeHook = site_hook;
    let stub: unicorn::CodeHook = stub_hook;
    let stop: unicorn::CodeHook = stop_hook;
    let function: unicorn::CodeHook = function_hook;
    let memory: unicorn::MemoryHook = memory_hook;
    let interrupt: unicorn::InterruptHook = interrupt_hook;
    let uc = runner.uc.as_ref().ok_or_else(|| Fatal::new("no image loaded"))?;
    for rva in sites {
        let address = IMAGE_BASE + rva;
        // SAFETY: a code hook's prototype; the runner outlives the engine.
        unsafe { uc.hook_add(unicorn::HOOK_CODE, site as *mut c_void, data, address, address) }?;
    }
    // SAFETY: as above.
    unsafe { uc.hook_add(unicorn::HOOK_CODE, stub as *mut c_void, data, STUBS, UNLOAD_THUNK - 1) }?;
    // SAFETY: as above; this hook uses no data.
    unsafe {
        uc.hook_add(
            unicorn::HOOK_CODE,
            stop as *mut c_void,
            std::ptr::null_mut(),
            SENTINEL,
            SENTINEL,
        )
    }?;
    let site_set: std::collections::HashSet<u64> = sites.iter().copied().collect();
    let mut hooks = Vec::new();
    for rva in functions {
        let address = IMAGE_BASE + rva;
        if site_set.contains(rva) || hooks.iter().any(|(hooked, _)| *hooked == address) {
            continue;
        }
        // SAFETY: as above.
        let hook = unsafe {
            uc.hook_add(unicorn::HOOK_CODE, function as *mut c_void, data, address, address)
        }?;
        hooks.push((address, hook));
    }
    let kinds = unicorn::HOOK_MEM_READ_UNMAPPED
        | unicorn::HOOK_MEM_WRITE_UNMAPPED
        | unicorn::HOOK_MEM_FETCH_UNMAPPED
        | unicorn::HOOK_MEM_READ_PROT
        | unicorn::HOOK_MEM_WRITE_PROT;
    // SAFETY: a memory event hook's prototype, over all addresses (begin 1 > end 0).
    unsafe { uc.hook_add(kinds, memory as *mut c_void, data, 1, 0) }?;
    // SAFETY: an interrupt hook's prototype.
    unsafe { uc.hook_add(unicorn::HOOK_INTR, interrupt as *mut c_void, data, 1, 0) }?;
    runner.function_hooks.extend(hooks);
    Ok(())
}

/// One more instruction of the image (the instruction counter of Driver Verifier's costs).
unsafe extern "C" fn count_hook(_: Handle, _: u64, _: u32, data: *mut c_void) {
    // SAFETY: registered by `count_instructions` with the runner's boxed count as its data.
    let count = unsafe { &mut *data.cast::<u64>() };
    *count += 1;
}

/// Counts every instruction the image executes (a code hook over the image).
pub fn count_instructions(runner: &mut Runner) -> Outcome<()> {
    let size = runner.image.as_ref().map_or(0, |image| image.size);
    let mut count = Box::new(0u64);
    let data: *mut c_void = std::ptr::from_mut(&mut *count).cast();
    let hook: unicorn::CodeHook = count_hook;
    let uc = runner.uc.as_ref().ok_or_else(|| Fatal::new("no image loaded"))?;
    // SAFETY: a code hook's prototype; the count is boxed in the runner for the process's life.
    unsafe {
        uc.hook_add(
            unicorn::HOOK_CODE,
            hook as *mut c_void,
            data,
            IMAGE_BASE,
            IMAGE_BASE + size - 1,
        )
    }?;
    runner.counter = Some(count);
    Ok(())
}

impl Runner {
    /// Driver Verifier's view of a call of `name`: a bug check raised, or the failure to
    /// return instead of serving the call.
    pub fn verify_call(&mut self, name: &str) -> Outcome<Option<u64>> {
        if self.verifier.is_none() {
            return Ok(None);
        }
        let address = self.return_address()?;
        let image_size = self.image.as_ref().map_or(0, |image| image.size);
        let site = if (IMAGE_BASE..IMAGE_BASE + image_size).contains(&address) {
            address - IMAGE_BASE
        } else {
            address
        };
        let irql = crate::verifier::effective_irql(
            u8::try_from(self.irql).unwrap_or(u8::MAX),
            self.interrupts,
        );
        let passive_only = if name == "DbgPrintEx" {
            let format = self.arg(2)?;
            let format = self.c_string(format)?;
            let format: Vec<u8> =
                format.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(0)).collect();
            crate::printf::unicode_conversions(&format).join(" ")
        } else {
            String::new()
        };
        let first = self.arg(0)?;
        let verifier = self.verifier.as_mut().ok_or_else(|| Fatal::new("no verifier"))?;
        Ok(verifier.check_call(name, site, irql, |_| first, address, &passive_only)?)
    }

    /// An x64 instruction the runner serves: asks `ppm-sim` or answers from what it sent, sets
    /// the registers and RIP past it.
    fn site_x64(&mut self, kind: SiteKind, length: u8, address: u64) -> Outcome<()> {
        if self.site_functions.contains(&(address - IMAGE_BASE)) {
            self.executed.insert(address - IMAGE_BASE);
        }
        match kind {
            SiteKind::Rdmsr | SiteKind::Wrmsr => {
                let msr = self.reg(x86::RCX) & 0xFFFF_FFFF;
                let name = if kind == SiteKind::Rdmsr { "rdmsr" } else { "wrmsr" };
                if let Some(verifier) = &mut self.verifier
                    && verifier.access(name, msr, address - IMAGE_BASE)
                {
                    return self.raise_exception(STATUS_PRIVILEGED_INSTRUCTION, address);
                }
                let answer = if kind == SiteKind::Rdmsr {
                    self.ask(json!({"host": "rdmsr", "msr": msr}))?
                } else {
                    let value = ((self.reg(x86::RDX) & 0xFFFF_FFFF) << 32)
                        | (self.reg(x86::RAX) & 0xFFFF_FFFF);
                    self.ask(json!({"host": "wrmsr", "msr": msr, "value": value}))?
                };
                if answer.get("fault").is_some_and(truthy) {
                    return self.raise_exception(STATUS_PRIVILEGED_INSTRUCTION, address);
                }
                if kind == SiteKind::Rdmsr {
                    let value = integer(&answer, "value", 64)?;
                    self.edx_eax(value)?;
                }
            }
            SiteKind::Rdtsc | SiteKind::Rdtscp => {
                let value = self.read_timestamp(json!({"host": "rdtsc"}))?;
                if kind == SiteKind::Rdtscp {
                    let index = self.current_processor()?.index;
                    self.set_reg(x86::RCX, index);
                }
                self.edx_eax(value)?;
            }
            SiteKind::Cpuid => {
                let leaf = self.reg(x86::RAX) & 0xFFFF_FFFF;
                let subleaf = self.reg(x86::RCX) & 0xFFFF_FFFF;
                let answer =
                    self.ask(json!({"host": "cpuid", "leaf": leaf, "subleaf": subleaf}))?;
                for (name, register) in
                    [("eax", x86::RAX), ("ebx", x86::RBX), ("ecx", x86::RCX), ("edx", x86::RDX)]
                {
                    let value = integer(&answer, name, 32)?;
                    self.set_reg(register, value);
                }
            }
            SiteKind::Cli | SiteKind::Sti => {
                let enabled = kind == SiteKind::Sti;
                self.set_interrupts(enabled)?;
                let flags = self.reg(x86::RFLAGS);
                self.set_reg(
                    x86::RFLAGS,
                    if enabled { flags | RFLAGS_IF } else { flags & !RFLAGS_IF },
                );
            }
            SiteKind::Rdpmc => {
                return Err(Crash::new(
                    KMODE_EXCEPTION_NOT_HANDLED,
                    [STATUS_PRIVILEGED_INSTRUCTION, address],
                    "RDPMC: the protocol has no host request for it",
                    address,
                )
                .into());
            }
        }
        self.set_reg(x86::RIP, address + u64::from(length));
        Ok(())
    }

    /// EDX:EAX = `value`, one batch (RIP is written on its own: written in a batch from a hook,
    /// Unicorn 2.1.4 loses it).
    fn edx_eax(&self, value: u64) -> Outcome<()> {
        self.uc()?.reg_write_batch(&[x86::RAX, x86::RDX], &[value & 0xFFFF_FFFF, value >> 32])?;
        Ok(())
    }

    /// An ARM64 MRS (but of DAIF), MSR or `DAIFSet`/`DAIFClr`: asks `ppm-sim`, sets the
    /// registers and writes PC past the instruction.
    fn site_arm64(&mut self, site: Arm64Site, address: u64) -> Outcome<()> {
        if self.site_functions.contains(&(address - IMAGE_BASE)) {
            self.executed.insert(address - IMAGE_BASE);
        }
        match site {
            Arm64Site::Mrs { register, rt } => {
                let field = (register.op0, register.op1, register.crn, register.crm, register.op2);
                let encoding =
                    [register.op0, register.op1, register.crn, register.crm, register.op2]
                        .map(u32::from);
                if crate::verifier::is_activity_monitor(encoding)
                    && let Some(verifier) = &mut self.verifier
                {
                    let packed = (u64::from(register.op0) << 14)
                        | (u64::from(register.op1) << 11)
                        | (u64::from(register.crn) << 7)
                        | (u64::from(register.crm) << 3)
                        | u64::from(register.op2);
                    if verifier.access("mrs", packed, address - IMAGE_BASE) {
                        return self.raise_exception(STATUS_ILLEGAL_INSTRUCTION, address);
                    }
                }
                let request = json!({
                    "host": "mrs", "op0": register.op0, "op1": register.op1,
                    "crn": register.crn, "crm": register.crm, "op2": register.op2,
                });
                let answer = if field == CNTVCT_EL0 {
                    let value = self.read_timestamp(request)?;
                    let mut answer = serde_json::Map::new();
                    answer.insert("value".to_owned(), json!(value));
                    answer
                } else {
                    self.ask(request)?
                };
                if answer.get("fault").is_some_and(truthy) {
                    return self.raise_exception(STATUS_ILLEGAL_INSTRUCTION, address);
                }
                if rt != 31 {
                    let value = integer(&answer, "value", 64)?;
                    self.set_reg(arm64::x(u32::from(rt)), value);
                }
            }
            Arm64Site::DaifSet { .. } | Arm64Site::DaifClr { .. } | Arm64Site::MsrDaif { .. } => {
                let pstate = self.reg(arm64::PSTATE);
                let daif = match site {
                    Arm64Site::MsrDaif { rt } => {
                        let value = if rt == 31 { 0 } else { self.reg(arm64::x(u32::from(rt))) };
                        value & (0xF << DAIF_SHIFT)
                    }
                    Arm64Site::DaifSet { imm } => pstate | (u64::from(imm) << DAIF_SHIFT),
                    Arm64Site::DaifClr { imm } => pstate & !(u64::from(imm) << DAIF_SHIFT),
                    _ => pstate,
                };
                self.set_interrupts(daif & DAIF_I == 0)?;
                let pstate = (pstate & !(0xF << DAIF_SHIFT)) | (daif & (0xF << DAIF_SHIFT));
                self.set_reg(arm64::PSTATE, pstate);
            }
            Arm64Site::Msr { register, .. } => {
                return Err(Crash::new(
                    KMODE_EXCEPTION_NOT_HANDLED,
                    [STATUS_ILLEGAL_INSTRUCTION, address],
                    format!(
                        "MSR S{}_{}_C{}_C{}_{}: the protocol has no host request for it",
                        register.op0, register.op1, register.crn, register.crm, register.op2
                    ),
                    address,
                )
                .into());
            }
        }
        self.set_reg(arm64::PC, address + 4);
        Ok(())
    }

    /// A call of an import, a KMDF function or a PoFx service: its stub's `ret` runs after this
    /// sets the return register.
    fn stub(&mut self, address: u64) -> Outcome<()> {
        let result = if address < KMDF_STUBS {
            let Some((dll, name)) = self.imports_by_stub.get(&address).cloned() else {
                let return_address = self.return_address()?;
                return Err(Crash::new(
                    KMODE_EXCEPTION_NOT_HANDLED,
                    [STATUS_ILLEGAL_INSTRUCTION, address],
                    format!("call of ?!{address:#x}: the runner does not translate it"),
                    return_address,
                )
                .into());
            };
            if let Some(failure) = self.verify_call(&name)? {
                self.set_reg(self.arch.result(), failure);
                return Ok(());
            }
            match self.import(&name)? {
                Some(result) => Some(result),
                None if !crate::services::translates(&name) => {
                    let return_address = self.return_address()?;
                    return Err(Crash::new(
                        KMODE_EXCEPTION_NOT_HANDLED,
                        [STATUS_ILLEGAL_INSTRUCTION, address],
                        format!("call of {dll}!{name}: the runner does not translate it"),
                        return_address,
                    )
                    .into());
                }
                None => None,
            }
        } else if address < POFX_STUBS {
            let index = (address - KMDF_STUBS) / self.arch.stub_bytes().len() as u64;
            self.kmdf(index)?
        } else {
            if let Some(verifier) = &mut self.verifier {
                verifier.pofx_calls += 1;
            }
            let mut args = Vec::with_capacity(4);
            for number in 0..4 {
                args.push(self.arg(number)?);
            }
            let answer = self.ask(
                json!({"host": "pofx_service", "offset": address - POFX_STUBS, "args": args}),
            )?;
            Some(integer(&answer, "rax", 64)?)
        };
        if let Some(result) = result {
            self.set_reg(self.arch.result(), result);
        }
        Ok(())
    }

    /// An access to unmapped or protected memory: whether it may go on. A `ppm-sim` page of the
    /// current call is made live (a stale one stops the emulation to be refreshed first); the
    /// stack's guard page, a verifier pool fault, a write to read-only memory and any other
    /// unmapped address bugcheck.
    fn memory_fault(&mut self, access: c_int, address: u64, size: u64) -> Outcome<bool> {
        if (STACK_GUARD..self.stack_low).contains(&address) {
            let pc = self.pc();
            return Err(Crash::new(
                UNEXPECTED_KERNEL_MODE_TRAP,
                [8],
                format!("stack overflow: touched the guard page at {address:#x}"),
                pc,
            )
            .into());
        }
        if address.saturating_add(size) <= USER_LIMIT && !self.mirrors.is_empty() {
            let page = address & !(PAGE - 1);
            let last = (address + size).wrapping_sub(1) & !(PAGE - 1);
            if self.stale.contains(&page) || self.stale.contains(&last) {
                self.refresh = Some(if self.stale.contains(&page) { page } else { page + PAGE });
                return Ok(false);
            }
            self.ensure(address, size.max(1))?;
            return Ok(true);
        }
        let pc = self.pc();
        let write = access == unicorn::MEM_WRITE_UNMAPPED || access == unicorn::MEM_WRITE_PROT;
        if let Some(verifier) = &mut self.verifier
            && let Some(crash) = verifier.pool_fault(address, write, pc)
        {
            return Err(crash.into());
        }
        if access == unicorn::MEM_WRITE_PROT {
            return Err(Crash::new(
                ATTEMPTED_WRITE_TO_READONLY_MEMORY,
                [address],
                format!("write to read-only memory at {address:#x} ({})", self.symbol(address)),
                pc,
            )
            .into());
        }
        Err(Crash::new(
            PAGE_FAULT_IN_NONPAGED_AREA,
            [address, u64::from(write), pc],
            format!("access to unmapped memory at {address:#x}"),
            pc,
        )
        .into())
    }

    /// An x64 interrupt: #DE and `int3` are dispatched, `int 0x29` is `__fastfail`.
    fn interrupt_x64(&mut self, number: u32) -> Outcome<()> {
        let rip = self.pc();
        match number {
            0x29 => {
                let code = self.arg(0)?;
                Err(Crash::new(0x139, [code], "__fastfail (int 0x29)", rip).into())
            }
            0 => self.raise_exception(STATUS_INTEGER_DIVIDE_BY_ZERO, rip),
            3 => self.raise_exception(STATUS_BREAKPOINT, rip - 1),
            _ => Err(Crash::new(
                UNEXPECTED_KERNEL_MODE_TRAP,
                [u64::from(number)],
                format!("interrupt {number}"),
                rip,
            )
            .into()),
        }
    }

    /// An ARM64 exception Unicorn raised: an undefined instruction or `BRK`, dispatched through
    /// the image's `__except` scopes; `__fastfail` and aborts bugcheck.
    fn interrupt_arm64(&mut self, number: u32) -> Outcome<()> {
        let pc = self.pc();
        match number {
            ARM64_EXCP_BKPT => {
                let (address, immediate) = self.brk(pc);
                if immediate == ARM64_BRK_FASTFAIL {
                    let code = self.arg(0)?;
                    return Err(
                        Crash::new(0x139, [code], "__fastfail (brk #0xf003)", address).into()
                    );
                }
                // `brk #0xf004`: an integer division by zero; any other (`brk #0xf000`,
                // `__debugbreak`, included): a breakpoint.
                let code = if immediate == 0xF004 {
                    STATUS_INTEGER_DIVIDE_BY_ZERO
                } else {
                    STATUS_BREAKPOINT
                };
                self.raise_exception(code, address)
            }
            ARM64_EXCP_UDEF => self.raise_exception(STATUS_ILLEGAL_INSTRUCTION, pc),
            3 | 4 => Err(Crash::new(
                PAGE_FAULT_IN_NONPAGED_AREA,
                [0, 0, pc],
                format!("abort (exception {number})"),
                pc,
            )
            .into()),
            _ => Err(Crash::new(
                UNEXPECTED_KERNEL_MODE_TRAP,
                [u64::from(number)],
                format!("exception {number}"),
                pc,
            )
            .into()),
        }
    }

    /// The `BRK` instruction at or just before `pc` and its 16-bit immediate.
    fn brk(&self, pc: u64) -> (u64, u64) {
        for address in [pc, pc.wrapping_sub(4)] {
            let mut word = [0u8; 4];
            if self.uc.as_ref().is_some_and(|uc| uc.mem_read(address, &mut word).is_ok()) {
                let word = u64::from(u32::from_le_bytes(word));
                if word & 0xFFE0_001F == 0xD420_0000 {
                    return (address, (word >> 5) & 0xFFFF);
                }
            }
        }
        (pc, 0)
    }

    /// Dispatches an exception raised at `address` through the image's `__except` scopes:
    /// resumes at the handler (the code in the return register, the frame's registers
    /// restored) or ends the command with `KMODE_EXCEPTION_NOT_HANDLED`.
    pub fn raise_exception(&mut self, code: u64, address: u64) -> Outcome<()> {
        let stop = |at: u64| at == SENTINEL || at == NESTED_SENTINEL;
        let mut unwinding = self.unwinder.take().ok_or_else(|| Fatal::new("no image loaded"))?;
        let outcome = match &mut unwinding {
            Unwinding::X64(unwinder) => {
                let nonvolatile = seh::NONVOLATILE.map(|register| self.reg(x64_register(register)));
                let registers = seh::X64Registers::new(address, self.reg(x86::RSP), nonvolatile);
                match unwinder.dispatch(&registers, stop, self) {
                    Ok(seh::Dispatch::Handled { target, registers }) => {
                        Ok(Ok((target, Resume::X64(registers))))
                    }
                    Ok(seh::Dispatch::Unhandled { reason }) => Ok(Err(reason)),
                    Err(failure) => Err(failure),
                }
            }
            Unwinding::Arm64(unwinder) => {
                // X19..X30, in order.
                let mut nonvolatile = [0u64; 12];
                for (slot, n) in nonvolatile.iter_mut().zip(19..) {
                    *slot = self.reg(arm64::x(n));
                }
                let registers =
                    arm64_unwind::Arm64Registers::new(address, self.reg(arm64::SP), nonvolatile);
                match unwinder.dispatch(&registers, stop, self) {
                    Ok(seh::Dispatch::Handled { target, registers }) => {
                        Ok(Ok((target, Resume::Arm64(registers))))
                    }
                    Ok(seh::Dispatch::Unhandled { reason }) => Ok(Err(reason)),
                    Err(failure) => Err(failure),
                }
            }
        };
        self.unwinder = Some(unwinding);
        let dispatch: Result<(u64, Resume), String> = match outcome {
            Ok(dispatch) => dispatch,
            Err(seh::Failure::Unwind(error)) => Err(format!("unwind failed: {error}")),
            Err(seh::Failure::Malformed(error)) => {
                return Err(Fatal::new(format!("runner bug in a hook: {}", error.text())).into());
            }
            Err(seh::Failure::Read(stop)) => return Err(stop),
        };
        let symbol = self.symbol(address);
        let (target, handled) = match &dispatch {
            Ok((target, _)) => (json!(target), true),
            Err(_) => (Value::Null, false),
        };
        self.seh_log.push(json!({
            "address": address, "symbol": symbol, "code": code, "handler": target, "handled": handled,
        }));
        match dispatch {
            Err(reason) => Err(Crash::new(
                KMODE_EXCEPTION_NOT_HANDLED,
                [code, address],
                format!("exception {code:#x} not handled: {reason}"),
                address,
            )
            .into()),
            Ok((target, Resume::X64(registers))) => {
                for (register, value) in seh::NONVOLATILE.iter().zip(registers.nonvolatile()) {
                    self.set_reg(x64_register(*register), value);
                }
                self.set_reg(x86::RSP, registers.rsp());
                self.set_reg(x86::RAX, code);
                self.set_reg(x86::RIP, target);
                Ok(())
            }
            Ok((target, Resume::Arm64(registers))) => {
                for (n, value) in (19..).zip(registers.nonvolatile()) {
                    self.set_reg(arm64::x(n), value);
                }
                self.set_reg(arm64::SP, registers.sp());
                self.set_reg(arm64::X0, code);
                self.set_reg(arm64::PC, target);
                Ok(())
            }
        }
    }
}

/// The registers a handled dispatch resumes with.
enum Resume {
    /// x64's.
    X64(seh::X64Registers),
    /// ARM64's.
    Arm64(arm64_unwind::Arm64Registers),
}

/// Unicorn's number of an x64 register the unwind restores.
const fn x64_register(register: seh::Gpr) -> c_int {
    match register {
        seh::Gpr::Rbx => x86::RBX,
        seh::Gpr::Rbp => x86::RBP,
        seh::Gpr::Rsi => x86::RSI,
        seh::Gpr::Rdi => x86::RDI,
        seh::Gpr::R12 => x86::R12,
        seh::Gpr::R13 => x86::R13,
        seh::Gpr::R14 => x86::R14,
        seh::Gpr::R15 => x86::R15,
        seh::Gpr::Rsp => x86::RSP,
        seh::Gpr::Rax => x86::RAX,
        seh::Gpr::Rcx => x86::RCX,
        seh::Gpr::Rdx => x86::RDX,
        seh::Gpr::R8 => x86::R8,
        seh::Gpr::R9 => x86::R9,
        seh::Gpr::R10 => 108,
        seh::Gpr::R11 => 109,
    }
}
