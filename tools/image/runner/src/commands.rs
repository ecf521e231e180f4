//! The commands `ppm-sim` sends (docs/image-backend.md, "Commands (`ppm-sim` → runner)"):
//! `load`, `driver_entry`, `call`, `device_add`, `unload`, `report`, `quit`, and the runner's
//! serving loop.

use std::path::Path;

use serde_json::{Value, json};

use crate::arch::arm64;
use crate::hooks;
use crate::image::{self, Arch, Image};
use crate::layout::{
    DATA, DATA_SIZE, DRIVER_INIT, DRIVER_OBJECT, DRIVER_OBJECT_SIZE, DRIVER_OBJECT_SIZE_FIELD,
    DRIVER_OBJECT_TYPE, DRIVER_SIZE, DRIVER_START, DRIVER_UNLOAD, IMAGE_BASE, IMPORT_STUBS,
    IO_TYPE_DRIVER, KMDF_STUBS, MAX_STACK_BYTES, PAGE, REGISTRY_PATH, REGISTRY_PATH_BUFFER,
    REGISTRY_PATH_MAX_BYTES, STACK_GUARD, STUBS, STUBS_SIZE, WDFDEVICE_INIT, WDFDRIVER,
};
use crate::protocol::{Fatal, Message, integer, shown_value, to_usize};
use crate::runner::{Call, Done, Outcome, OwnMemory, Runner, Stop};
use crate::unicorn::{self, Engine};
use crate::watchdog::Watchdog;

/// FP/SIMD not trapped at EL1 (Windows enables it for drivers).
const ARM64_CPACR_FPEN: u64 = 3 << 20;

impl Runner {
    /// `function+0xOFFSET` (the map), an import's `dll!name`, a KMDF table entry, or the
    /// address.
    pub fn symbol(&self, address: u64) -> String {
        if let Some(image) = &self.image
            && (IMAGE_BASE..IMAGE_BASE + image.size).contains(&address)
        {
            return match self.symbols.lookup(address - IMAGE_BASE) {
                Some((name, offset)) => format!("{name}+{offset:#x}"),
                None => format!("ppm_pep+{:#x}", address - IMAGE_BASE),
            };
        }
        if let Some((dll, name)) = self.imports_by_stub.get(&address) {
            return format!("{dll}!{name}");
        }
        let stub = self.arch.stub_bytes().len() as u64;
        if (KMDF_STUBS..KMDF_STUBS + self.kmdf_max_functions * stub).contains(&address) {
            return format!("WdfFunctions[{}]", (address - KMDF_STUBS) / stub);
        }
        format!("{address:#x}")
    }

    /// A KMDF table index's name.
    pub fn kmdf_name(&self, index: u64) -> String {
        self.kmdf_index_names
            .get(&index)
            .cloned()
            .unwrap_or_else(|| format!("KMDF 1.31 function {index}"))
    }

    /// `load`.
    pub fn cmd_load(&mut self, message: &Message) -> Outcome<Done> {
        if self.uc.is_some() {
            return Err(Fatal::new("load: an image is already loaded").into());
        }
        let arch_name = match message.get("arch") {
            None => "x64".to_owned(),
            Some(Value::String(name)) => name.clone(),
            Some(other) => shown_value(other),
        };
        let arch = Arch::from_name(&arch_name)
            .ok_or_else(|| Fatal::new(format!("load: arch '{arch_name}': x64 or arm64")))?;
        self.arch = arch;
        let (Some(Value::String(path)), Some(Value::String(map_path))) =
            (message.get("image"), message.get("map"))
        else {
            return Err(Fatal::new("load: 'image' and 'map' must be paths").into());
        };
        let stack_bytes = integer(message, "stack_bytes", 32)?;
        if !(PAGE..=MAX_STACK_BYTES).contains(&stack_bytes) || stack_bytes % PAGE != 0 {
            return Err(Fatal::new(format!(
                "load: stack_bytes {stack_bytes}: a multiple of 4096 up to {MAX_STACK_BYTES}"
            ))
            .into());
        }
        let image = image::parse_image(Path::new(path), IMAGE_BASE, arch, arch.max_imports())
            .map_err(Fatal::new)?;
        let symbols = image::parse_map(Path::new(map_path), &image).map_err(Fatal::new)?;
        (self.kmdf_index_names, self.kmdf_max_functions) =
            crate::kmdf::kmdf_header().map_err(Fatal::new)?;
        let (uc_arch, uc_mode) = arch.unicorn();
        let uc = Engine::open(uc_arch, uc_mode)?;
        if arch == Arch::Arm64 {
            uc.set_cpu_model(unicorn::CPU_ARM64_MAX)?;
            uc.reg_write(arm64::CPACR_EL1, ARM64_CPACR_FPEN);
        }
        self.watchdog = Some(Watchdog::start(&uc, self.hang_seconds));
        self.map_image(&uc, &image, arch)?;
        let c_specific: Vec<u64> = symbols
            .rvas
            .iter()
            .zip(&symbols.names)
            .filter(|(_, name)| name.as_str() == "__C_specific_handler")
            .map(|(rva, _)| *rva)
            .collect();
        protect_sections(&uc, &image)?;
        self.map_stack(&uc, stack_bytes)?;
        uc.mem_map(DATA, DATA_SIZE, unicorn::PROT_READ | unicorn::PROT_WRITE)?;
        self.unwinder = Some(crate::unwinding::Unwinding::new(arch, &image, &c_specific));
        let capstone = if arch == Arch::X64 {
            let path = crate::capstone::find_library().map_err(Fatal::new)?;
            Some(crate::capstone::Library::load(&path).map_err(Fatal::new)?)
        } else {
            None
        };
        let sites = image::find_sites(&image, arch, capstone.as_ref()).map_err(Fatal::new)?;
        let function_rvas: std::collections::HashSet<u64> = symbols.rvas.iter().copied().collect();
        self.site_functions =
            sites.keys().copied().filter(|rva| function_rvas.contains(rva)).collect();
        self.sites = sites.iter().map(|(rva, site)| (IMAGE_BASE + rva, *site)).collect();
        self.uc = Some(uc);
        let done = json!({
            "image_base": IMAGE_BASE,
            "image_size": image.size,
            "entry": IMAGE_BASE + image.entry_rva,
        });
        let rvas: Vec<u64> = symbols.rvas.clone();
        self.symbols = symbols;
        self.image = Some(image);
        hooks::install(self, &sites.keys().copied().collect::<Vec<_>>(), &rvas)?;
        if let Some(options) = message.get("verifier").filter(|options| !options.is_null()) {
            let imports = self
                .image
                .as_ref()
                .map(|image| {
                    image.imports.iter().map(|import| import.name.clone()).collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let verifier = crate::verifier::Verifier::new(options, imports)?;
            if verifier.count_instructions {
                hooks::count_instructions(self)?;
            }
            self.verifier = Some(verifier);
        }
        Ok(object(done))
    }

    /// `load`'s mapping of `image`, built for `arch`, into `uc`: its headers and sections,
    /// relocated, and the stub pages, with each import's IAT entry pointing to its stub.
    fn map_image(&mut self, uc: &Engine, image: &Image, arch: Arch) -> Outcome<()> {
        uc.mem_map(IMAGE_BASE, image.size, unicorn::PROT_ALL)?;
        uc.mem_write(IMAGE_BASE, &image.headers)?;
        for (rva, raw) in &image.contents {
            uc.mem_write(IMAGE_BASE + rva, raw)?;
        }
        let delta = IMAGE_BASE.wrapping_sub(image.preferred_base);
        for rva in &image.relocations {
            let mut value = [0u8; 8];
            uc.mem_read(IMAGE_BASE + rva, &mut value)?;
            let relocated = u64::from_le_bytes(value).wrapping_add(delta);
            uc.mem_write(IMAGE_BASE + rva, &relocated.to_le_bytes())?;
        }
        uc.mem_map(STUBS, STUBS_SIZE, unicorn::PROT_READ | unicorn::PROT_EXEC)?;
        let stub_bytes = arch.stub_bytes();
        let stubs_size = to_usize(STUBS_SIZE, "the stub pages' size")?;
        uc.mem_write(STUBS, &stub_bytes.repeat(stubs_size / stub_bytes.len()))?;
        for (number, import) in image.imports.iter().enumerate() {
            let stub = IMPORT_STUBS + number as u64 * stub_bytes.len() as u64;
            self.imports_by_stub.insert(stub, (import.dll.clone(), import.name.clone()));
            uc.mem_write(IMAGE_BASE + import.iat_rva, &stub.to_le_bytes())?;
        }
        Ok(())
    }

    /// `load`'s stack of `stack_bytes`, above its unmapped guard page, on the runner's own
    /// memory.
    fn map_stack(&mut self, uc: &Engine, stack_bytes: u64) -> Outcome<()> {
        self.stack_low = STACK_GUARD + PAGE;
        self.stack_top = self.stack_low + stack_bytes;
        let stack = OwnMemory::new(to_usize(stack_bytes, "stack_bytes")?)?;
        // SAFETY: the stack's memory lives in the runner for the process's life.
        unsafe {
            uc.mem_map_ptr(
                self.stack_low,
                stack_bytes,
                unicorn::PROT_READ | unicorn::PROT_WRITE,
                stack.pointer(),
            )
        }?;
        self.set_stack(stack);
        Ok(())
    }

    /// A command of the driver's life outside notifications (`driver_entry`, `device_add`,
    /// `unload`) starts: an image is loaded, and Driver Verifier's rules are in their boot
    /// phase.
    fn enter_boot(&mut self) -> Outcome<()> {
        self.uc()?;
        if let Some(verifier) = &mut self.verifier {
            verifier.phase = crate::verifier::Phase::Boot;
        }
        Ok(())
    }

    /// Calls `address` with `args` as the I/O manager or the framework does (interrupts
    /// enabled, `PASSIVE_LEVEL`): its return register, or the `{"crash"}` it ended with.
    fn boot_call(&mut self, address: u64, args: &[u64]) -> Outcome<Result<u64, Done>> {
        let done = self.run(Call::plain(address, args, true, false))?;
        if done.contains_key("crash") {
            return Ok(Err(done));
        }
        Ok(Ok(done.get("rax").and_then(Value::as_u64).unwrap_or(0)))
    }

    /// `driver_entry`.
    pub fn cmd_driver_entry(&mut self, message: &Message) -> Outcome<Done> {
        self.enter_boot()?;
        let Some(Value::String(path)) = message.get("registry_path") else {
            return Err(Fatal::new("driver_entry: 'registry_path' must be a string").into());
        };
        let encoded: Vec<u8> = path.encode_utf16().flat_map(u16::to_le_bytes).collect();
        if encoded.len() as u64 > REGISTRY_PATH_MAX_BYTES - 2 || encoded.len() > 0xFFFE {
            return Err(Fatal::new(format!(
                "driver_entry: registry_path longer than {} characters",
                REGISTRY_PATH_MAX_BYTES / 2 - 1
            ))
            .into());
        }
        let (size, entry_rva) =
            self.image.as_ref().map_or((0, 0), |image| (image.size, image.entry_rva));
        let entry = IMAGE_BASE + entry_rva;
        let mut driver = vec![0u8; to_usize(DRIVER_OBJECT_SIZE, "DRIVER_OBJECT's size")?];
        let mut put = |offset: u64, bytes: &[u8]| -> Result<(), Fatal> {
            let at = to_usize(offset, "a DRIVER_OBJECT field's offset")?;
            driver[at..at + bytes.len()].copy_from_slice(bytes);
            Ok(())
        };
        put(DRIVER_OBJECT_TYPE, &IO_TYPE_DRIVER.to_le_bytes())?;
        // Size: a USHORT; DriverSize: a ULONG (the low bytes of each, little-endian).
        put(DRIVER_OBJECT_SIZE_FIELD, &DRIVER_OBJECT_SIZE.to_le_bytes()[..2])?;
        put(DRIVER_START, &IMAGE_BASE.to_le_bytes())?;
        put(DRIVER_SIZE, &size.to_le_bytes()[..4])?;
        put(DRIVER_INIT, &entry.to_le_bytes())?;
        let uc = self.uc()?;
        uc.mem_write(DRIVER_OBJECT, &driver)?;
        // Both fit a USHORT: the path's length was checked above.
        let too_long = |_| Fatal::new("driver_entry: registry_path too long");
        let length = u16::try_from(encoded.len()).map_err(too_long)?;
        let maximum_length = u16::try_from(encoded.len() + 2).map_err(too_long)?;
        let mut string = Vec::new();
        string.extend_from_slice(&length.to_le_bytes());
        string.extend_from_slice(&maximum_length.to_le_bytes());
        string.extend_from_slice(&[0; 4]);
        string.extend_from_slice(&REGISTRY_PATH_BUFFER.to_le_bytes());
        uc.mem_write(REGISTRY_PATH, &string)?;
        let mut buffer = encoded;
        buffer.extend_from_slice(&[0, 0]);
        uc.mem_write(REGISTRY_PATH_BUFFER, &buffer)?;
        Ok(match self.boot_call(entry, &[DRIVER_OBJECT, REGISTRY_PATH])? {
            Ok(rax) => object(json!({"status": rax & 0xFFFF_FFFF})),
            Err(crash) => crash,
        })
    }

    /// `device_add`.
    pub fn cmd_device_add(&mut self) -> Outcome<Done> {
        self.enter_boot()?;
        if self.device_add == 0 {
            return Ok(object(json!({"status": null})));
        }
        Ok(match self.boot_call(self.device_add, &[WDFDRIVER, WDFDEVICE_INIT])? {
            Ok(rax) => object(json!({"status": rax & 0xFFFF_FFFF})),
            Err(crash) => crash,
        })
    }

    /// `unload`.
    pub fn cmd_unload(&mut self) -> Outcome<Done> {
        self.enter_boot()?;
        let unload = self.u64(DRIVER_OBJECT + DRIVER_UNLOAD)?;
        if unload == 0 {
            return Ok(object(json!({"called": false})));
        }
        Ok(match self.boot_call(unload, &[DRIVER_OBJECT])? {
            Ok(_) => object(json!({"called": true})),
            Err(crash) => crash,
        })
    }

    /// `report`: the measurements.
    pub fn cmd_report(&self) -> Outcome<Done> {
        self.uc()?;
        let mut executed: Vec<u64> = self.executed.iter().map(|rva| IMAGE_BASE + rva).collect();
        executed.sort_unstable();
        let stack: Vec<Value> = self
            .stack_report
            .iter()
            .map(|(entry, (calls, deepest))| {
                let symbol = self.symbol(*entry);
                let symbol =
                    symbol.strip_suffix("+0x0").map_or_else(|| symbol.clone(), str::to_owned);
                json!({"entry": entry, "symbol": symbol, "calls": calls, "deepest_bytes": deepest})
            })
            .collect();
        let kmdf: Vec<Value> = self
            .kmdf_calls
            .iter()
            .map(|(index, calls)| json!({"index": index, "name": self.kmdf_name(*index), "calls": calls}))
            .collect();
        Ok(object(json!({
            "stack": stack,
            "kmdf": kmdf,
            "kmdf_function_count": self.kmdf_count,
            "seh": self.seh_log,
            "functions": {"total": self.symbols.rvas.len(), "executed": executed},
            "page_protections": self.page_protections,
            "verifier": self.verifier.as_ref().map(|verifier| verifier.report(self.kmdf_calls.keys().map(|index| self.kmdf_name(*index)))),
        })))
    }

    /// Serves commands until `quit` or the end of the input: the exit status.
    pub fn serve(&mut self) -> u8 {
        loop {
            let received = match self.channel.receive() {
                Ok(Some(received)) => received,
                Ok(None) => return 0,
                Err(fatal) => return self.fail(&fatal),
            };
            let message = received.message;
            let op = message.get("op").and_then(Value::as_str).unwrap_or("");
            let done = match op {
                "quit" => return 0,
                "load" => self.cmd_load(&message),
                "driver_entry" => self.cmd_driver_entry(&message),
                "call" => self.cmd_call(&message, received.pages, false),
                "device_add" => self.cmd_device_add(),
                "unload" => self.cmd_unload(),
                "report" => self.cmd_report(),
                _ => {
                    let shown = message.get("op").map_or_else(|| "None".to_owned(), shown_value);
                    Err(Fatal::new(format!("unknown command {shown}")).into())
                }
            };
            let done = match done {
                Ok(done) => done,
                Err(Stop::Fatal(fatal)) => return self.fail(&fatal),
                Err(Stop::Crash(crash)) => self.crash_json(&crash),
            };
            let answer = self.with_deferred(json!({"done": done}));
            if let Err(fatal) = self.channel.send(&answer) {
                return self.fail(&fatal);
            }
        }
    }

    /// Answers `{"error"}`, says so on stderr: exit status 2.
    fn fail(&self, fatal: &Fatal) -> u8 {
        let _ = self.channel.send(&json!({"error": fatal.0}));
        eprintln!("image-runner: {}", fatal.0);
        2
    }
}

/// `load`'s protections of `image`'s pages in `uc`, as its headers say (after the relocations
/// and the IAT writes): the headers read-only, each section as its characteristics (at least
/// readable).
fn protect_sections(uc: &Engine, image: &Image) -> Outcome<()> {
    uc.mem_protect(IMAGE_BASE, PAGE, unicorn::PROT_READ)?;
    for section in &image.sections {
        let size = (section.size.max(1) + PAGE - 1) & !(PAGE - 1);
        let protection = (if section.readable { unicorn::PROT_READ } else { 0 })
            | (if section.writable { unicorn::PROT_WRITE } else { 0 })
            | (if section.executable { unicorn::PROT_EXEC } else { 0 });
        uc.mem_protect(
            IMAGE_BASE + section.rva,
            size,
            if protection == 0 { unicorn::PROT_READ } else { protection },
        )?;
    }
    Ok(())
}

/// A JSON object's map.
fn object(value: Value) -> Message {
    match value {
        Value::Object(map) => map,
        _ => Message::new(),
    }
}
