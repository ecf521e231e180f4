//! The kernel and KMDF calls of the image, each translated into one host request to `ppm-sim`
//! (docs/image-backend.md, "Host requests (runner → `ppm-sim`)"). A handler returns the return
//! value, RAX or X0 (`None`: leave it). Each is written once for both architectures: `arg(n)`
//! follows the image's calling convention.

use serde_json::{Map, Value, json};

use crate::layout::{
    DRIVER_OBJECT, DRIVER_UNLOAD, EVENT_DATA_DESCRIPTOR_BYTES, EVENT_DATA_DESCRIPTOR_SIZE,
    GROUP_AFFINITY_GROUP, KMDF_STUBS, KMDF_TABLE, KMODE_EXCEPTION_NOT_HANDLED, MAX_COPY_BYTES,
    PAGE, PEP_INFORMATION_SIZE_FIELD, PEP_KERNEL_INFORMATION_SIZE_FIELD, POFX_STUBS, POOL,
    POOL_LIMIT, STATUS_INVALID_PARAMETER, STATUS_SUCCESS, UNLOAD_THUNK, WDF_BIND_INFO_FUNC_COUNT,
    WDF_BIND_INFO_FUNC_TABLE, WDF_DRIVER_CONFIG_DEVICE_ADD, WDF_DRIVER_CONFIG_UNLOAD, WDF_GLOBALS,
    WDFDEVICE, WDFDRIVER,
};
use crate::printf;
use crate::protocol::{
    Fatal, Message, encode_hex, hex_bytes, integer, shown_value, to_usize, unsigned,
};
use crate::runner::{Call, Crash, Outcome, Runner, Stop, truthy};

/// `EVENT_CONTROL_CODE_ENABLE_PROVIDER`.
const EVENT_CONTROL_CODE_ENABLE_PROVIDER: u64 = 1;
/// The most counters `HalAllocateHardwareCounters` lists.
const MAX_COUNTERS: u64 = 64;
/// The most data descriptors of one ETW event.
const MAX_ETW_DESCRIPTORS: u64 = 128;
/// The most bytes of one ETW data descriptor, `EtwSetInformation` or registry value.
const MAX_ETW_BYTES: u64 = 0x10000;
/// The most bytes of a `PEP_INFORMATION` or `PEP_KERNEL_INFORMATION` sent.
const MAX_INFORMATION_BYTES: u64 = 0x1000;

/// The imports the runner translates.
const IMPORTS: [&str; 30] = [
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "KeBugCheckEx",
    "__C_specific_handler",
    "DbgPrintEx",
    "ExAllocatePool2",
    "ExFreePool",
    "KeGetCurrentProcessorNumberEx",
    "KeGetProcessorNumberFromIndex",
    "KeQueryMaximumProcessorCountEx",
    "KeQueryActiveProcessorCountEx",
    "KeSetSystemGroupAffinityThread",
    "KeRevertToUserGroupAffinityThread",
    "PoFxRegisterPluginEx",
    "KeQueryPerformanceCounter",
    "KeStallExecutionProcessor",
    "HalAllocateHardwareCounters",
    "HalFreeHardwareCounters",
    "EtwRegister",
    "EtwWriteTransfer",
    "EtwSetInformation",
    "EtwUnregister",
    "WdfVersionBind",
    "WdfVersionUnbind",
    "",
    "",
    "",
    "",
];

/// Whether the runner translates the import `name`.
pub fn translates(name: &str) -> bool {
    !name.is_empty() && IMPORTS.contains(&name)
}

/// A status answer's `status`.
fn status(answer: &Message) -> Result<u64, Fatal> {
    integer(answer, "status", 32)
}

impl printf::Arguments for (&mut Runner, usize) {
    type Error = Stop;

    fn next_arg(&mut self) -> Result<u64, Stop> {
        let value = self.0.arg(self.1)?;
        self.1 += 1;
        Ok(value)
    }

    fn read_string(&mut self, address: u64) -> Result<String, Stop> {
        self.0.c_string(address)
    }

    fn read_wide_string(&mut self, address: u64) -> Result<String, Stop> {
        self.0.wide_string(address)
    }
}

impl Runner {
    /// The bytes of the NUL-terminated string at `address` (units of 2 bytes when `wide`).
    fn terminated(&mut self, address: u64, wide: bool) -> Outcome<Vec<u8>> {
        printf::read_terminated(address, wide, |at, unit: &mut [u8]| {
            let data = self.read(at, unit.len() as u64)?;
            unit.copy_from_slice(&data);
            Ok::<(), Stop>(())
        })
    }

    /// The NUL-terminated narrow string at `address` (Latin-1).
    pub fn c_string(&mut self, address: u64) -> Outcome<String> {
        Ok(printf::decode_narrow(&self.terminated(address, false)?))
    }

    /// The NUL-terminated UTF-16 string at `address`.
    pub fn wide_string(&mut self, address: u64) -> Outcome<String> {
        Ok(printf::decode_wide(&self.terminated(address, true)?))
    }

    /// The `UNICODE_STRING` at `address` ("" when null).
    pub fn unicode_string(&mut self, address: u64) -> Outcome<String> {
        if address == 0 {
            return Ok(String::new());
        }
        let length = self.u16(address)?;
        let buffer = self.u64(address + crate::layout::UNICODE_STRING_BUFFER)?;
        let bytes = self.read(buffer, length & !1)?;
        Ok(printf::decode_wide(&bytes))
    }

    /// Argument `index` as a length for the C library's functions (at most `MAX_COPY_BYTES`).
    fn length(&mut self, index: usize) -> Outcome<u64> {
        let length = self.arg(index)?;
        if length > MAX_COPY_BYTES {
            let pc = self.pc();
            return Err(Crash::new(
                KMODE_EXCEPTION_NOT_HANDLED,
                [0xC000_0005, pc],
                format!("memory operation of {length} bytes (limit {MAX_COPY_BYTES})"),
                0,
            )
            .into());
        }
        Ok(length)
    }

    /// The import `name`'s translation (`None`: not translated, or it returns nothing; the
    /// caller tells which by `translates`).
    // One arm per import: the table of translations reads in one place.
    #[allow(clippy::too_many_lines)]
    pub fn import(&mut self, name: &str) -> Outcome<Option<u64>> {
        Ok(match name {
            "memcpy" | "memmove" => {
                let length = self.length(2)?;
                let source = self.arg(1)?;
                let data = self.read(source, length)?;
                let target = self.arg(0)?;
                self.write(target, &data)?;
                Some(target)
            }
            "memset" => {
                let length = self.length(2)?;
                let byte = (self.arg(1)? & 0xFF) as u8;
                let target = self.arg(0)?;
                self.write(target, &vec![byte; to_usize(length, "memset's length")?])?;
                Some(target)
            }
            "memcmp" => {
                let length = self.length(2)?;
                let (first, second) = (self.arg(0)?, self.arg(1)?);
                let a = self.read(first, length)?;
                let b = self.read(second, length)?;
                let differ = a.iter().zip(&b).find(|(x, y)| x != y);
                Some(differ.map_or(0, |(x, y)| {
                    (i64::from(*x) - i64::from(*y)).cast_unsigned() & 0xFFFF_FFFF
                }))
            }
            "KeBugCheckEx" => {
                let code = self.arg32(0)?;
                let mut parameters = [0; 4];
                for (n, slot) in parameters.iter_mut().enumerate() {
                    *slot = self.arg(n + 1)?;
                }
                let address = self.return_address()?;
                return Err(Crash::new(code, parameters, "KeBugCheckEx", address).into());
            }
            "__C_specific_handler" => {
                return Err(Fatal::new(
                    "the image called __C_specific_handler itself (only the dispatcher may)",
                )
                .into());
            }
            "DbgPrintEx" => {
                let (component, level, format) = (self.arg32(0)?, self.arg32(1)?, self.arg(2)?);
                let format = self.terminated(format, false)?;
                let mut arguments = (&mut *self, 3usize);
                let text = printf::format_message(&format, &mut arguments)?;
                self.ask(
                    json!({"host": "log", "component": component, "level": level, "text": text}),
                )?;
                Some(STATUS_SUCCESS)
            }
            "ExAllocatePool2" => Some(self.allocate_pool()?),
            "ExFreePool" => {
                let address = self.arg(0)?;
                if self.verifier.as_ref().is_some_and(|verifier| verifier.skip_frees) {
                    return Ok(None);
                }
                if self.verifier.is_some() {
                    let block = self
                        .verifier
                        .as_ref()
                        .and_then(|verifier| verifier.block(address).copied());
                    let slack = match block {
                        Some(block) => {
                            self.read(block.first_page, block.address - block.first_page)?
                        }
                        None => Vec::new(),
                    };
                    let site = self.return_address()?;
                    let verifier =
                        self.verifier.as_mut().ok_or_else(|| Fatal::new("no verifier"))?;
                    let block = verifier.free(address, site, &slack)?;
                    self.uc()?.mem_unmap(block.first_page, block.pages * PAGE)?;
                }
                self.ask(json!({"host": "pool_free", "address": address}))?;
                None
            }
            "KeGetCurrentProcessorNumberEx" => {
                let processor = self.current_processor()?;
                let address = self.arg(0)?;
                self.processor_number(address, processor.group, processor.number)?;
                Some(processor.index)
            }
            "KeGetProcessorNumberFromIndex" => {
                let index = self.arg32(0)?;
                let answer = self.ask(json!({"host": "processor_number", "index": index}))?;
                let result = status(&answer)?;
                if result == STATUS_SUCCESS {
                    let group = integer(&answer, "group", 16)?;
                    let number = integer(&answer, "number", 8)?;
                    let address = self.arg(1)?;
                    self.processor_number(address, group, number)?;
                }
                Some(result)
            }
            "KeQueryMaximumProcessorCountEx" => Some(self.processor_count("maximum")?),
            "KeQueryActiveProcessorCountEx" => Some(self.processor_count("active")?),
            "KeSetSystemGroupAffinityThread" => {
                let affinity = self.arg(0)?;
                let (group, mask) =
                    (self.u16(affinity + GROUP_AFFINITY_GROUP)?, self.u64(affinity)?);
                let answer =
                    self.ask(json!({"host": "set_affinity", "group": group, "mask": mask}))?;
                let previous = self.arg(1)?;
                if previous != 0 {
                    let mut data = Vec::with_capacity(16);
                    data.extend_from_slice(&integer(&answer, "mask", 64)?.to_le_bytes());
                    // A USHORT (checked to 16 bits).
                    data.extend_from_slice(&integer(&answer, "group", 16)?.to_le_bytes()[..2]);
                    data.extend_from_slice(&[0; 6]);
                    self.write(previous, &data)?;
                }
                None
            }
            "KeRevertToUserGroupAffinityThread" => {
                let affinity = self.arg(0)?;
                let (group, mask) =
                    (self.u16(affinity + GROUP_AFFINITY_GROUP)?, self.u64(affinity)?);
                self.ask(json!({"host": "revert_affinity", "group": group, "mask": mask}))?;
                None
            }
            "PoFxRegisterPluginEx" => Some(self.register_plugin()?),
            "KeQueryPerformanceCounter" => {
                let answer = self.ask(json!({"host": "performance_counter"}))?;
                let frequency = self.arg(0)?;
                self.put(frequency, integer(&answer, "frequency", 64)?, 8)?;
                Some(integer(&answer, "ticks", 64)?)
            }
            "KeStallExecutionProcessor" => {
                let microseconds = self.arg32(0)?;
                self.ask(json!({"host": "stall", "microseconds": microseconds}))?;
                None
            }
            "HalAllocateHardwareCounters" => {
                let (resource_list, handle) = (self.arg(2)?, self.arg(3)?);
                let listing = if resource_list == 0 {
                    Value::Null
                } else {
                    let count = self.u32(resource_list)?;
                    if count > MAX_COUNTERS {
                        return Ok(Some(STATUS_INVALID_PARAMETER));
                    }
                    json!(encode_hex(&self.read(resource_list, 8 + 24 * count.max(1))?))
                };
                let answer = self.ask(json!({"host": "hal_allocate_counters", "list": listing}))?;
                let result = status(&answer)?;
                if result == STATUS_SUCCESS {
                    self.put(handle, integer(&answer, "handle", 64)?, 8)?;
                }
                Some(result)
            }
            "HalFreeHardwareCounters" => {
                let handle = self.arg(0)?;
                Some(status(&self.ask(json!({"host": "hal_free_counters", "handle": handle}))?)?)
            }
            "EtwRegister" => Some(self.etw_register()?),
            "EtwWriteTransfer" => Some(self.etw_write()?),
            "EtwSetInformation" => {
                let handle = self.arg(0)?;
                self.etw_handle("EtwSetInformation", handle)?;
                let length = self.arg32(3)?;
                if length > MAX_ETW_BYTES {
                    return Ok(Some(STATUS_INVALID_PARAMETER));
                }
                let (handle, class, data) = (self.arg(0)?, self.arg32(1)?, self.arg(2)?);
                let data = encode_hex(&self.read(data, length)?);
                let answer = self.ask(json!({"host": "etw_set_information", "handle": handle, "class": class, "data": data}))?;
                Some(status(&answer)?)
            }
            "EtwUnregister" => {
                let handle = self.arg(0)?;
                self.etw_handle("EtwUnregister", handle)?;
                if let Some(verifier) = &mut self.verifier {
                    verifier.etw_unregistered(handle);
                }
                Some(status(&self.ask(json!({"host": "etw_unregister", "handle": handle}))?)?)
            }
            "WdfVersionBind" => Some(self.version_bind()?),
            "WdfVersionUnbind" => Some(STATUS_SUCCESS),
            _ => None,
        })
    }

    /// Writes a `PROCESSOR_NUMBER` at `address` (nothing when null).
    fn processor_number(&mut self, address: u64, group: u64, number: u64) -> Outcome<()> {
        if address != 0 {
            // Group: a USHORT; Number: a UCHAR, then a reserved byte (the low bytes of each).
            let mut data = group.to_le_bytes()[..2].to_vec();
            data.extend_from_slice(&[number.to_le_bytes()[0], 0]);
            self.write(address, &data)?;
        }
        Ok(())
    }

    /// `KeQuery{Maximum,Active}ProcessorCountEx`.
    fn processor_count(&mut self, which: &str) -> Outcome<u64> {
        let group = self.arg(0)? & 0xFFFF;
        let answer =
            self.ask(json!({"host": "processor_count", "which": which, "group": group}))?;
        Ok(integer(&answer, "count", 32)?)
    }

    /// `ExAllocatePool2` (the pool without Driver Verifier's special pool).
    fn allocate_pool(&mut self) -> Outcome<u64> {
        let (flags, size, tag) = (self.arg(0)?, self.arg(1)?, self.arg32(2)?);
        let mut block = None;
        let address = if size > POOL_LIMIT {
            None
        } else if self.verifier.is_some() {
            // Driver Verifier's special pool: the block ends at the end of its own pages, the
            // page after it stays unmapped, the slack before it is filled to be checked at free.
            block = crate::verifier::Verifier::place(size, self.pool_next);
            block.map(|block| block.address)
        } else {
            let address = (self.pool_next + 15) & !15;
            (address + size <= POOL + POOL_LIMIT).then_some(address)
        };
        let Some(address) = address else {
            eprintln!("image-runner: pool limit of {POOL_LIMIT} bytes reached");
            return Ok(0);
        };
        let answer = self.ask(json!({"host": "pool_allocate", "flags": flags, "bytes": size, "tag": tag, "address": address}))?;
        if !answer.get("granted").is_some_and(truthy) {
            return Ok(0);
        }
        if let Some(mut block) = block {
            self.uc()?.mem_map(block.first_page, block.pages * PAGE, crate::unicorn::PROT_ALL)?;
            let slack_bytes = to_usize(address - block.first_page, "the slack")?;
            let slack = vec![crate::verifier::SLACK; slack_bytes];
            self.uc()?.mem_write(block.first_page, &slack)?;
            block.paged = flags & crate::ddi_rules::POOL_FLAG_PAGED != 0;
            self.pool_next = block.first_page + (block.pages + 1) * PAGE;
            if let Some(verifier) = &mut self.verifier {
                verifier.allocated(block);
            }
            return Ok(address);
        }
        let end = address + size.max(1);
        if end > self.pool_mapped {
            let top = (end + PAGE - 1) & !(PAGE - 1);
            self.uc()?.mem_map(
                self.pool_mapped,
                top - self.pool_mapped,
                crate::unicorn::PROT_ALL,
            )?;
            self.pool_mapped = top;
        }
        self.uc()?.mem_write(address, &vec![0; to_usize(size, "a pool block's size")?])?;
        self.pool_next = end;
        Ok(address)
    }

    /// `PoFxRegisterPluginEx`.
    fn register_plugin(&mut self) -> Outcome<u64> {
        let (information, flags, kernel) = (self.arg(0)?, self.arg(1)?, self.arg(2)?);
        let info_size = if information == 0 {
            0
        } else {
            self.u16(information + PEP_INFORMATION_SIZE_FIELD)?.min(MAX_INFORMATION_BYTES)
        };
        let kernel_size = if kernel == 0 {
            0
        } else {
            self.u16(kernel + PEP_KERNEL_INFORMATION_SIZE_FIELD)?.min(MAX_INFORMATION_BYTES)
        };
        let information_hex = if information == 0 {
            String::new()
        } else {
            encode_hex(&self.read(information, info_size)?)
        };
        let answer = self.ask(json!({
            "host": "register_plugin",
            "information": information_hex,
            "flags": flags,
            "kernel_information_bytes": kernel_size,
        }))?;
        let result = status(&answer)?;
        if result == STATUS_SUCCESS && kernel != 0 {
            let mut data = hex_bytes(&answer, "kernel_information")?;
            data.truncate(to_usize(kernel_size, "kernel_information_bytes")?);
            let functions = match answer.get("functions") {
                None => Vec::new(),
                Some(Value::Array(functions)) => functions.clone(),
                Some(_) => {
                    return Err(Fatal::new(
                        "register_plugin: 'functions' must be a list of offsets",
                    )
                    .into());
                }
            };
            for offset in functions {
                let offset = unsigned(Some(&offset), "offset", 32)?;
                if offset + 8 > data.len() as u64 || offset >= PAGE {
                    return Err(Fatal::new(format!(
                        "register_plugin: function offset {offset} outside the structure"
                    ))
                    .into());
                }
                if offset % self.arch.stub_bytes().len() as u64 != 0 {
                    return Err(Fatal::new(format!(
                        "register_plugin: function offset {offset} is not aligned"
                    ))
                    .into());
                }
                let at = to_usize(offset, "a function offset")?;
                data[at..at + 8].copy_from_slice(&(POFX_STUBS + offset).to_le_bytes());
            }
            self.write(kernel, &data)?;
            self.kernel_information = kernel;
        }
        Ok(result)
    }

    /// `EtwRegister`, and the provider's `EnableCallback` when a session already enables it.
    fn etw_register(&mut self) -> Outcome<u64> {
        let (provider, callback, context, handle_out) =
            (self.arg(0)?, self.arg(1)?, self.arg(2)?, self.arg(3)?);
        let guid = encode_hex(&self.read(provider, 16)?);
        let answer = self.ask(json!({"host": "etw_register", "provider": guid, "callback": callback, "context": context}))?;
        let result = status(&answer)?;
        if result == STATUS_SUCCESS {
            let handle = integer(&answer, "handle", 64)?;
            self.put(handle_out, handle, 8)?;
            self.etw_providers.insert(handle, (callback, context));
            if let Some(verifier) = &mut self.verifier {
                verifier.etw_registered(handle);
            }
            if let Some(enable) = answer.get("enable")
                && !enable.is_null()
                && callback != 0
            {
                let Value::Object(enable) = enable else {
                    return Err(Fatal::new(format!(
                        "etw_register: 'enable' must be an object, got {}",
                        shown_value(enable)
                    ))
                    .into());
                };
                let level = integer(enable, "level", 8)?;
                let keywords = integer(enable, "keywords", 64)?;
                let arguments =
                    [provider, EVENT_CONTROL_CODE_ENABLE_PROVIDER, level, keywords, 0, 0, context];
                let interrupts = self.interrupts;
                let done = self.execute(Call::plain(callback, &arguments, interrupts, true))?;
                self.protect_stale(&[])?;
                if let Some(crash) = done.get("crash") {
                    return Err(Crash::from_json(crash)?.into());
                }
            }
        }
        Ok(result)
    }

    /// `EtwWriteTransfer`.
    fn etw_write(&mut self) -> Outcome<u64> {
        let (handle, descriptor, count, data) =
            (self.arg(0)?, self.arg(1)?, self.arg32(4)?, self.arg(5)?);
        self.etw_handle("EtwWriteTransfer", handle)?;
        if count > MAX_ETW_DESCRIPTORS {
            return Ok(STATUS_INVALID_PARAMETER);
        }
        let mut pieces = Vec::new();
        for n in 0..count {
            let at = data + EVENT_DATA_DESCRIPTOR_BYTES * n;
            let pointer = self.u64(at)?;
            let size = self.u32(at + EVENT_DATA_DESCRIPTOR_SIZE)?;
            if size > MAX_ETW_BYTES {
                return Ok(STATUS_INVALID_PARAMETER);
            }
            pieces.push(Value::String(encode_hex(&self.read(pointer, size)?)));
        }
        let descriptor = encode_hex(&self.read(descriptor, 16)?);
        let answer = self.ask(json!({"host": "etw_write", "handle": handle, "descriptor": descriptor, "data": pieces}))?;
        Ok(status(&answer)?)
    }

    /// `WdfVersionBind`: the KMDF function table of stubs and zeroed globals.
    fn version_bind(&mut self) -> Outcome<u64> {
        let (bind_info, globals_out) = (self.arg(2)?, self.arg(3)?);
        let count = self.u32(bind_info + WDF_BIND_INFO_FUNC_COUNT)?;
        let table = self.u64(bind_info + WDF_BIND_INFO_FUNC_TABLE)?;
        if count > self.kmdf_max_functions {
            eprintln!(
                "image-runner: WdfVersionBind: FuncCount {count} exceeds KMDF 1.31's {}",
                self.kmdf_max_functions
            );
            return Ok(STATUS_INVALID_PARAMETER);
        }
        self.kmdf_count = count;
        let stub = self.arch.stub_bytes().len() as u64;
        let entries: Vec<u8> =
            (0..count).flat_map(|n| (KMDF_STUBS + n * stub).to_le_bytes()).collect();
        self.write(KMDF_TABLE, &entries)?;
        self.put(table, KMDF_TABLE, 8)?;
        self.write(WDF_GLOBALS, &[0; 0x40])?;
        self.put(globals_out, WDF_GLOBALS, 8)?;
        Ok(STATUS_SUCCESS)
    }

    /// A KMDF function by table index.
    pub fn kmdf(&mut self, index: u64) -> Outcome<Option<u64>> {
        *self.kmdf_calls.entry(index).or_insert(0) += 1;
        let name = self.kmdf_name(index);
        if let Some(failure) = self.verify_call(&name)? {
            return Ok(Some(failure));
        }
        let known = matches!(
            name.as_str(),
            "WdfDriverCreate"
                | "WdfDriverOpenParametersRegistryKey"
                | "WdfDriverOpenPersistentStateRegistryKey"
                | "WdfRegistryOpenKey"
                | "WdfRegistryCreateKey"
                | "WdfRegistryQueryValue"
                | "WdfRegistryAssignULong"
                | "WdfRegistryAssignValue"
                | "WdfRegistryClose"
                | "WdfDeviceCreate"
                | "WdfDeviceSetStaticStopRemove"
                | "WdfDeviceSetDeviceState"
        );
        if !known || index >= self.kmdf_count {
            let address = self.return_address()?;
            return Err(Crash::new(
                KMODE_EXCEPTION_NOT_HANDLED,
                [0xC000_0005, index],
                format!("KMDF function table index {index} ({name}): not translated by the runner"),
                address,
            )
            .into());
        }
        self.wdf_function(&name)
    }

    /// A `wdf` host request for `function` with `fields`.
    fn wdf(&mut self, function: &str, fields: Value) -> Outcome<Message> {
        let mut message = Map::new();
        message.insert("host".to_owned(), json!("wdf"));
        message.insert("function".to_owned(), json!(function));
        if let Value::Object(fields) = fields {
            message.extend(fields);
        }
        self.ask(Value::Object(message))
    }

    /// Opens a registry key: the key handle written to `key_out`.
    fn open_key(&mut self, function: &str, key_out: u64, fields: Value) -> Outcome<u64> {
        if let Some(parent) = fields.get("parent").and_then(Value::as_u64) {
            self.key(function, parent, true)?;
        }
        let answer = self.wdf(function, fields)?;
        let result = status(&answer)?;
        if result == STATUS_SUCCESS {
            let key = integer(&answer, "key", 64)?;
            self.put(key_out, key, 8)?;
            if let Some(verifier) = &mut self.verifier {
                verifier.key_opened(key);
            }
        }
        Ok(result)
    }

    /// Driver Verifier's handle check of a `WDFKEY` argument.
    fn key(&mut self, function: &str, key: u64, optional: bool) -> Outcome<()> {
        if let Some(verifier) = &mut self.verifier {
            verifier.key_used(function, key, optional)?;
        }
        Ok(())
    }

    /// Driver Verifier's handle check of an ETW registration handle.
    fn etw_handle(&mut self, function: &str, handle: u64) -> Outcome<()> {
        if let Some(verifier) = &mut self.verifier {
            verifier.etw_used(function, handle)?;
        }
        Ok(())
    }

    /// The KMDF function `name`.
    // One arm per KMDF function: the table of translations reads in one place.
    #[allow(clippy::too_many_lines)]
    fn wdf_function(&mut self, name: &str) -> Outcome<Option<u64>> {
        Ok(match name {
            "WdfDriverCreate" => {
                let (config, driver_out) = (self.arg(4)?, self.arg(5)?);
                let device_add =
                    if config == 0 { 0 } else { self.u64(config + WDF_DRIVER_CONFIG_DEVICE_ADD)? };
                let unload =
                    if config == 0 { 0 } else { self.u64(config + WDF_DRIVER_CONFIG_UNLOAD)? };
                let answer =
                    self.wdf(name, json!({"device_add": device_add != 0, "unload": unload != 0}))?;
                let result = status(&answer)?;
                if result == STATUS_SUCCESS {
                    self.device_add = device_add;
                    self.driver_unload = unload;
                    self.put(driver_out, WDFDRIVER, 8)?;
                    self.put(WDF_GLOBALS, WDFDRIVER, 8)?;
                    if unload != 0 {
                        let thunk = self.arch.unload_thunk(WDFDRIVER, unload);
                        self.uc()?.mem_write(UNLOAD_THUNK, &thunk)?;
                        self.put(DRIVER_OBJECT + DRIVER_UNLOAD, UNLOAD_THUNK, 8)?;
                    }
                }
                Some(result)
            }
            "WdfDriverOpenParametersRegistryKey" | "WdfDriverOpenPersistentStateRegistryKey" => {
                let (access, key_out) = (self.arg32(2)?, self.arg(4)?);
                Some(self.open_key(name, key_out, json!({"access": access}))?)
            }
            "WdfRegistryOpenKey" => {
                let (parent, name_at, access, key_out) =
                    (self.arg(1)?, self.arg(2)?, self.arg32(3)?, self.arg(5)?);
                let key_name = self.unicode_string(name_at)?;
                Some(self.open_key(
                    name,
                    key_out,
                    json!({"parent": parent, "name": key_name, "access": access}),
                )?)
            }
            "WdfRegistryCreateKey" => {
                let (parent, name_at, access, options) =
                    (self.arg(1)?, self.arg(2)?, self.arg32(3)?, self.arg32(4)?);
                self.key(name, parent, true)?;
                let key_name = self.unicode_string(name_at)?;
                let answer = self.wdf(name, json!({"parent": parent, "name": key_name, "access": access, "options": options}))?;
                let result = status(&answer)?;
                if result == STATUS_SUCCESS {
                    if answer.contains_key("disposition") {
                        let disposition = integer(&answer, "disposition", 32)?;
                        let at = self.arg(5)?;
                        self.put(at, disposition, 4)?;
                    }
                    let key = integer(&answer, "key", 64)?;
                    let at = self.arg(7)?;
                    self.put(at, key, 8)?;
                    if let Some(verifier) = &mut self.verifier {
                        verifier.key_opened(key);
                    }
                }
                Some(result)
            }
            "WdfRegistryQueryValue" => {
                let (capacity, value, length_out, type_out) =
                    (self.arg32(3)?, self.arg(4)?, self.arg(5)?, self.arg(6)?);
                let (key, name_at) = (self.arg(1)?, self.arg(2)?);
                self.key(name, key, false)?;
                let value_name = self.unicode_string(name_at)?;
                let answer =
                    self.wdf(name, json!({"key": key, "name": value_name, "capacity": capacity}))?;
                let result = status(&answer)?;
                if answer.contains_key("data") && value != 0 {
                    let mut data = hex_bytes(&answer, "data")?;
                    data.truncate(to_usize(capacity, "a value's capacity")?);
                    self.write(value, &data)?;
                }
                if answer.contains_key("length") {
                    self.put(length_out, integer(&answer, "length", 32)?, 4)?;
                }
                if answer.contains_key("type") {
                    self.put(type_out, integer(&answer, "type", 32)?, 4)?;
                }
                Some(result)
            }
            "WdfRegistryAssignULong" => {
                let (key, name_at, value) = (self.arg(1)?, self.arg(2)?, self.arg32(3)?);
                self.key(name, key, false)?;
                let value_name = self.unicode_string(name_at)?;
                Some(status(
                    &self.wdf(name, json!({"key": key, "name": value_name, "value": value}))?,
                )?)
            }
            "WdfRegistryAssignValue" => {
                let key = self.arg(1)?;
                self.key(name, key, false)?;
                let length = self.arg32(4)?;
                if length > MAX_ETW_BYTES {
                    return Ok(Some(STATUS_INVALID_PARAMETER));
                }
                let (key, name_at, kind, data_at) =
                    (self.arg(1)?, self.arg(2)?, self.arg32(3)?, self.arg(5)?);
                let value_name = self.unicode_string(name_at)?;
                let data = encode_hex(&self.read(data_at, length)?);
                Some(status(&self.wdf(
                    name,
                    json!({"key": key, "name": value_name, "type": kind, "data": data}),
                )?)?)
            }
            "WdfRegistryClose" => {
                let key = self.arg(1)?;
                if let Some(verifier) = &mut self.verifier {
                    verifier.key_closed(key)?;
                }
                self.wdf(name, json!({"key": key}))?;
                None
            }
            "WdfDeviceCreate" => {
                let (init_pointer, device_out) = (self.arg(1)?, self.arg(3)?);
                let result = status(&self.wdf(name, json!({}))?)?;
                if result == STATUS_SUCCESS {
                    self.put(device_out, WDFDEVICE, 8)?;
                    self.put(init_pointer, 0, 8)?;
                }
                Some(result)
            }
            "WdfDeviceSetStaticStopRemove" => {
                let stoppable = self.arg(2)? & 0xFF != 0;
                self.wdf(name, json!({"stoppable": stoppable}))?;
                None
            }
            "WdfDeviceSetDeviceState" => {
                let state = self.arg(2)?;
                let mut values = Map::new();
                for &(field, at) in crate::layout::WDF_DEVICE_STATE_FIELDS {
                    values.insert(field.to_owned(), json!(self.u32(state + at)?));
                }
                self.wdf(name, json!({"state": values}))?;
                None
            }
            _ => None,
        })
    }
}
