//! The runner's host requests, answered by the emulated kernel and the simulated machine: the
//! same [`SimPlatform`] the engine runs on (every `CPUID`, `RDMSR`, `WRMSR`, `RDTSC`, `CLI`/`STI`
//! and the current processor) and, while `DriverEntry` runs, the same [`SimKernel`] services
//! (registry, `Boot` key, pool, HAL reservation, `PoFxRegisterPluginEx`, debugger log).
//! Nothing here judges the image: it answers as the kernel would and records.

use std::cell::{Cell, RefCell};
use std::mem::offset_of;

use ppm_engine::Platform;
use ppm_engine::abi::{
    NTSTATUS, PEP_INFORMATION, PEP_KERNEL_INFORMATION_STRUCT_V3, PHYSICAL_COUNTER_RESOURCE_LIST,
    STATUS_INVALID_PARAMETER, STATUS_SUCCESS,
};
use ppm_engine::driver::registry::{Lookup, REG_SZ, state};
use ppm_engine::driver::{KernelServices, LogLevel, PoolBlock, StateKey};
use ppm_engine::platform::Passive;
use serde_json::{Value, json};

use super::runner::{Host, hex, unhex};
use crate::cpu::sysreg;
use crate::driver_entry::{PluginInformation, SimKernel, SimParameters, SimState};
use crate::platform::{OnProcessor, SimPlatform};

/// `STATUS_OBJECT_NAME_NOT_FOUND`.
const STATUS_OBJECT_NAME_NOT_FOUND: NTSTATUS = 0xC000_0034_u32.cast_signed();
/// `STATUS_BUFFER_OVERFLOW` (a warning: the value is larger than the buffer).
const STATUS_BUFFER_OVERFLOW: NTSTATUS = 0x8000_0005_u32.cast_signed();
/// `STATUS_NOT_SUPPORTED`.
const STATUS_NOT_SUPPORTED: NTSTATUS = 0xC000_00BB_u32.cast_signed();
/// `TRACE_LEVEL_VERBOSE`: the level the emulated trace session enables.
const ETW_LEVEL_VERBOSE: u64 = 5;
/// `ALL_PROCESSOR_GROUPS`.
const ALL_PROCESSOR_GROUPS: u64 = 0xFFFF;
/// Processors per group, as the emulated kernel lays them out.
const GROUP_SIZE: u32 = 64;

/// Processor `index` as `KeGetCurrentProcessorNumberEx` names it: the answer of a
/// `current_processor` request, and a `call`'s `processor`.
#[must_use]
pub fn processor_answer(index: u32) -> Value {
    json!({"index": index, "group": index / GROUP_SIZE, "number": index % GROUP_SIZE})
}

/// The handle `HalAllocateHardwareCounters` returns.
const COUNTER_RESERVATION_HANDLE: u64 = 0xFFFF_A000_0000_1000;
/// The `Name` of the `Parameters` subkey the installer creates (`driver::install_pending`).
const INSTALL_PENDING_KEY: &str = "InstallPending";

/// A registry key the image opened, by the number the runner hands it as a `WDFKEY`.
enum Key<'k> {
    Parameters(SimParameters<'k>),
    PersistentState,
    InstallPending,
    State(SimState<'k>),
}

/// The keys the image holds open (index + 1 is the key's number).
#[derive(Default)]
pub struct KernelKeys<'k> {
    keys: Vec<Option<Key<'k>>>,
}

impl<'k> KernelKeys<'k> {
    fn open(&mut self, key: Key<'k>) -> u64 {
        self.keys.push(Some(key));
        self.keys.len() as u64
    }

    fn get(&mut self, number: u64) -> Option<&mut Key<'k>> {
        let index = usize::try_from(number.checked_sub(1)?).ok()?;
        self.keys.get_mut(index)?.as_mut()
    }
}

/// What the image did through the kernel besides the services [`SimKernel`] records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelLedger {
    /// ETW events written (`EtwWriteTransfer`), by `TraceLogging` event name, in order.
    pub etw_events: Vec<String>,
    /// Debugger lines printed outside `DriverEntry` (a notification path must not log).
    pub runtime_log: Vec<String>,
    /// The `WDF_DEVICE_STATE.NotDisableable` `EvtDriverDeviceAdd` set (`WdfTrue` is 1).
    pub not_disableable: Option<u64>,
    /// Whether `WdfDeviceSetStaticStopRemove` was called with `Stoppable` FALSE.
    pub static_stop_remove: Option<bool>,
    /// Pool blocks with a tag the driver does not use for any [`PoolBlock`].
    pub untagged_blocks: Vec<u64>,
    /// `RDMSR`/`WRMSR` faults (#GP) the machine raised for the image.
    pub faults_raised: usize,
}

impl KernelLedger {
    /// Adds what `other` recorded.
    pub fn absorb(&mut self, other: Self) {
        self.etw_events.extend(other.etw_events);
        self.runtime_log.extend(other.runtime_log);
        self.untagged_blocks.extend(other.untagged_blocks);
        self.faults_raised += other.faults_raised;
        self.not_disableable = other.not_disableable.or(self.not_disableable);
        self.static_stop_remove = other.static_stop_remove.or(self.static_stop_remove);
    }
}

/// The answers to the runner's requests for one command.
pub struct ImageHost<'k> {
    platform: Option<SimPlatform>,
    kernel: Option<&'k SimKernel<'k>>,
    keys: RefCell<KernelKeys<'k>>,
    /// The processors `KeSetSystemGroupAffinityThread` moved the thread to, innermost last,
    /// each with the processor whose injected PMU fault it switched on.
    affinity: RefCell<Vec<(OnProcessor<'static>, Option<u32>)>>,
    /// The image's callbacks (`AcceptDeviceNotification`, `AcceptProcessorNotification`) as
    /// `PoFxRegisterPluginEx` received them.
    registered: Cell<Option<(u64, u64)>>,
    /// The same, whatever `PoFxRegisterPluginEx` answered.
    attempted: Cell<Option<(u64, u64)>>,
    ledger: RefCell<KernelLedger>,
    /// Pool blocks granted, by the address the runner chose.
    pool: RefCell<Vec<(u64, Option<PoolBlock>)>>,
}

impl<'k> ImageHost<'k> {
    /// A host with neither a machine nor kernel services: for `report`, which asks for
    /// neither.
    #[must_use]
    pub fn without_machine() -> Self {
        Self::with(None, None)
    }

    /// The host of the runtime: the machine, no kernel services (a notification path has
    /// none to call).
    #[must_use]
    pub fn runtime(platform: SimPlatform) -> Self {
        Self::with(Some(platform), None)
    }

    /// The host of `DriverEntry`: the machine and `kernel`'s services.
    #[must_use]
    pub fn driver_entry(kernel: &'k SimKernel<'k>) -> Self {
        Self::with(Some(kernel.platform()), Some(kernel))
    }

    fn with(platform: Option<SimPlatform>, kernel: Option<&'k SimKernel<'k>>) -> Self {
        Self {
            platform,
            kernel,
            keys: RefCell::new(KernelKeys::default()),
            affinity: RefCell::new(Vec::new()),
            registered: Cell::new(None),
            attempted: Cell::new(None),
            ledger: RefCell::new(KernelLedger::default()),
            pool: RefCell::new(Vec::new()),
        }
    }

    /// The image's two callback addresses, if it called `PoFxRegisterPluginEx` with both.
    #[must_use]
    pub const fn registered(&self) -> Option<(u64, u64)> {
        self.registered.get()
    }

    /// The image's two callback addresses as it passed them to `PoFxRegisterPluginEx`, whether
    /// or not the call succeeded.
    #[must_use]
    pub const fn attempted(&self) -> Option<(u64, u64)> {
        self.attempted.get()
    }

    /// What the kernel recorded besides [`SimKernel`]'s own records.
    #[must_use]
    pub fn ledger(&self) -> KernelLedger {
        self.ledger.borrow().clone()
    }

    /// The pool blocks still allocated (of the driver's tags).
    #[must_use]
    pub fn outstanding(&self) -> Vec<PoolBlock> {
        self.pool.borrow().iter().filter_map(|(_, block)| *block).collect()
    }

    /// Answers request `name` (`message` is the whole request).
    ///
    /// # Errors
    /// A request this host cannot answer (an unknown name, a missing argument, a kernel
    /// service outside `DriverEntry`): a mismatch between the runner and `ppm-sim`.
    pub fn answer_request(&self, name: &str, message: &Value) -> Result<Value, String> {
        let mut answer = self.answer(name, message)?;
        // An NTSTATUS travels as its unsigned 32-bit value, as the protocol's integers do.
        if let Some(status) = answer.get_mut("status")
            && let Some(signed) = status.as_i64()
            && let Ok(signed) = i32::try_from(signed)
        {
            *status = json!(signed.cast_unsigned());
        }
        Ok(answer)
    }

    fn answer(&self, name: &str, message: &Value) -> Result<Value, String> {
        let request = Request { name, message };
        match name {
            "cpuid"
            | "rdmsr"
            | "wrmsr"
            | "rdtsc"
            | "mrs"
            | "interrupts"
            | "current_processor"
            | "performance_counter"
            | "stall" => self.machine(&request),
            // A session enables every provider at every level, as the boot trace of
            // docs/windows.md does (`wpr -boottrace`): the image's events are written.
            "etw_register" => Ok(json!({
                "status": 0,
                "handle": 1,
                "enable": {"level": ETW_LEVEL_VERBOSE, "keywords": u64::MAX},
            })),
            "etw_write" => {
                self.etw_write(&request);
                Ok(json!({"status": 0}))
            }
            "etw_set_information" | "etw_unregister" => Ok(json!({"status": 0})),
            "log" => self.log(&request),
            "wdf" => self.wdf(&request),
            _ => self.kernel_service(&request),
        }
    }

    fn platform(&self, request: &Request<'_>) -> Result<&SimPlatform, String> {
        self.platform
            .as_ref()
            .ok_or_else(|| format!("`{}` before the image was started", request.name))
    }

    fn kernel(&self, request: &Request<'_>) -> Result<&'k SimKernel<'k>, String> {
        self.kernel.ok_or_else(|| {
            format!(
                "`{}`: a kernel service the emulated kernel offers only in DriverEntry",
                request.name
            )
        })
    }

    fn machine(&self, request: &Request<'_>) -> Result<Value, String> {
        let platform = self.platform(request)?;
        // SAFETY: the emulator's DriverEntry and its PASSIVE_LEVEL notifications run on host
        // threads at no raised IRQL; the token lives only for this request.
        let passive = unsafe { Passive::assume() };
        Ok(match request.name {
            "cpuid" => {
                let answer = platform.cpuid(request.u32("leaf")?, request.u32("subleaf")?);
                json!({"eax": answer.eax, "ebx": answer.ebx, "ecx": answer.ecx, "edx": answer.edx})
            }
            "rdmsr" => platform
                .read_msr(request.u32("msr")?)
                .map_or_else(|_| self.fault(), |value| json!({"value": value})),
            "wrmsr" => platform
                .write_msr(request.u32("msr")?, request.u64("value")?)
                .map_or_else(|_| self.fault(), |()| json!({})),
            "rdtsc" => json!({"value": platform.read_timestamp().unwrap_or(0)}),
            "mrs" => {
                let field = |key: &str, most: u32| {
                    request.u32(key).and_then(|value| {
                        (value <= most)
                            .then_some(value)
                            .ok_or_else(|| format!("`mrs`: {key} {value} over {most}"))
                    })
                };
                let number = sysreg::encode(
                    field("op0", 3)?,
                    field("op1", 7)?,
                    field("crn", 15)?,
                    field("crm", 15)?,
                    field("op2", 7)?,
                );
                if number == sysreg::CNTVCT_EL0 {
                    json!({"value": platform.read_timestamp().unwrap_or(0)})
                } else {
                    // A register the emulated processors do not model is undefined.
                    sysreg::register(number)
                        .and_then(|register| platform.read_system_register(register).ok())
                        .map_or_else(|| self.fault(), |value| json!({"value": value}))
                }
            }
            "interrupts" => {
                if request.bool("enabled")? {
                    platform.unmask_interrupts();
                } else {
                    platform.mask_interrupts();
                }
                json!({})
            }
            "current_processor" => processor_answer(platform.current_processor_index()),
            "performance_counter" => {
                let counter = platform.performance_counter(&passive);
                json!({"ticks": counter.ticks, "frequency": counter.frequency})
            }
            "stall" => {
                platform.stall_microseconds(&passive, request.u32("microseconds")?);
                json!({})
            }
            _ => unreachable!("routed by serve"),
        })
    }

    /// A #GP for the image, counted.
    fn fault(&self) -> Value {
        self.ledger.borrow_mut().faults_raised += 1;
        json!({"fault": true})
    }

    fn kernel_service(&self, request: &Request<'_>) -> Result<Value, String> {
        let kernel = self.kernel(request)?;
        Ok(match request.name {
            "processor_count" => {
                let group = request.u64("group")?;
                let count = match (request.str("which")?, group) {
                    ("maximum", ALL_PROCESSOR_GROUPS) => kernel.maximum_processor_count(),
                    ("active", ALL_PROCESSOR_GROUPS) => kernel.active_processor_count(),
                    (which, group) => {
                        return Err(format!(
                            "processor_count {which} of group {group}: the driver asks for ALL_PROCESSOR_GROUPS"
                        ));
                    }
                };
                json!({"count": count})
            }
            "processor_number" => kernel.active_processor(request.u32("index")?).map_or_else(
                || json!({"status": STATUS_INVALID_PARAMETER, "group": 0, "number": 0}),
                |processor| {
                    json!({"status": STATUS_SUCCESS, "group": processor / GROUP_SIZE, "number": processor % GROUP_SIZE})
                },
            ),
            "set_affinity" => self.set_affinity(kernel, request)?,
            "revert_affinity" => {
                let (on, faulting) = self.affinity.borrow_mut().pop().ok_or(
                    "KeRevertToUserGroupAffinityThread without KeSetSystemGroupAffinityThread",
                )?;
                if let Some(processor) = faulting {
                    kernel.end_pmu_fault(processor);
                }
                drop(on);
                json!({})
            }
            "pool_allocate" => {
                let tag = request.u32("tag")?;
                let block = PoolBlock::from_tag(tag);
                let granted = if let Some(block) = block {
                    kernel.grant_pool(block, request.u64("bytes")?)
                } else {
                    self.ledger.borrow_mut().untagged_blocks.push(u64::from(tag));
                    true
                };
                if granted {
                    self.pool.borrow_mut().push((request.u64("address")?, block));
                }
                json!({"granted": granted})
            }
            "pool_free" => {
                let address = request.u64("address")?;
                let mut pool = self.pool.borrow_mut();
                let position =
                    pool.iter().position(|(granted, _)| *granted == address).ok_or_else(|| {
                        format!("ExFreePool of {address:#x}, which the pool never granted")
                    })?;
                pool.swap_remove(position);
                json!({})
            }
            "hal_allocate_counters" => {
                let mut list = match request.message.get("list") {
                    None | Some(Value::Null) => None,
                    Some(bytes) => Some(counter_list(bytes)?),
                };
                match kernel.allocate_hardware_counters(list.as_mut()) {
                    Ok(()) => {
                        json!({"status": STATUS_SUCCESS, "handle": COUNTER_RESERVATION_HANDLE})
                    }
                    Err(status) => json!({"status": status, "handle": 0}),
                }
            }
            "hal_free_counters" => {
                if request.u64("handle")? != COUNTER_RESERVATION_HANDLE {
                    return Err(
                        "HalFreeHardwareCounters of a handle the HAL never returned".to_owned()
                    );
                }
                json!({"status": kernel.free_hardware_counters(())})
            }
            "register_plugin" => self.register_plugin(kernel, request)?,
            "pofx_service" => {
                // RequestWorker returns nothing; no RequestCommon request is supported.
                let offset = request.u64("offset")?;
                let common = offset_of!(PEP_KERNEL_INFORMATION_STRUCT_V3, RequestCommon) as u64;
                json!({"rax": if offset == common { STATUS_NOT_SUPPORTED.cast_unsigned() } else { 0 }})
            }
            name => return Err(format!("an unknown request `{name}`")),
        })
    }

    fn set_affinity(
        &self,
        kernel: &'k SimKernel<'k>,
        request: &Request<'_>,
    ) -> Result<Value, String> {
        let (group, mask) = (request.u32("group")?, request.u64("mask")?);
        if mask.count_ones() != 1 {
            return Err(format!(
                "KeSetSystemGroupAffinityThread with mask {mask:#x}: the driver sets one processor"
            ));
        }
        let processor = group * GROUP_SIZE + mask.trailing_zeros();
        let previous = crate::platform::current_processor();
        let faulting = kernel.begin_pmu_fault(processor).then_some(processor);
        let on = OnProcessor::enter(None, processor);
        self.affinity.borrow_mut().push((on, faulting));
        Ok(json!({"group": previous / GROUP_SIZE, "mask": 1_u64 << (previous % GROUP_SIZE)}))
    }

    fn register_plugin(
        &self,
        kernel: &'k SimKernel<'k>,
        request: &Request<'_>,
    ) -> Result<Value, String> {
        let bytes = request.bytes("information")?;
        let field = |offset: usize, width: usize| -> u64 {
            let mut word = [0u8; 8];
            if let Some(source) = bytes.get(offset..offset + width) {
                word[..width].copy_from_slice(source);
            }
            u64::from_le_bytes(word)
        };
        let dpm = field(offset_of!(PEP_INFORMATION, AcceptDeviceNotification), 8);
        let ppm = field(offset_of!(PEP_INFORMATION, AcceptProcessorNotification), 8);
        let acpi = field(offset_of!(PEP_INFORMATION, AcceptAcpiNotification), 8);
        if acpi != 0 {
            return Err("the image registered an ACPI notification callback, which the emulated PoFx does not call".to_owned());
        }
        // PoFx keeps the callbacks: here, their addresses in the image (`attempted`), which
        // the emulator calls through the runner.
        let information = PluginInformation {
            version: u16::try_from(field(offset_of!(PEP_INFORMATION, Version), 2)).unwrap_or(0),
            size: u16::try_from(field(offset_of!(PEP_INFORMATION, Size), 2)).unwrap_or(0),
            device_callback: dpm != 0,
            processor_callback: ppm != 0,
        };
        let status = kernel.register_foreign_plugin(information);
        if dpm != 0 && ppm != 0 {
            self.attempted.set(Some((dpm, ppm)));
            if status == STATUS_SUCCESS {
                self.registered.set(Some((dpm, ppm)));
            }
        }
        let mut answer = PEP_KERNEL_INFORMATION_STRUCT_V3::zeroed();
        let functions = kernel.kernel_information(&mut answer);
        // SAFETY: a repr(C) structure of integers and function pointers, read as its bytes;
        // the function pointers are replaced by the runner's stubs at `functions`.
        let raw = unsafe {
            std::slice::from_raw_parts(
                std::ptr::from_ref(&answer).cast::<u8>(),
                size_of::<PEP_KERNEL_INFORMATION_STRUCT_V3>(),
            )
        };
        let mut raw = raw.to_vec();
        for &offset in &functions {
            raw[offset..offset + 8].fill(0);
        }
        Ok(json!({"status": status, "kernel_information": hex(&raw), "functions": functions}))
    }

    fn log(&self, request: &Request<'_>) -> Result<Value, String> {
        let text = request.str("text")?;
        // The driver's line: "ppm-pep: MESSAGE\n" (src/log.rs); the kernel keeps the message.
        let message = text.strip_prefix("ppm-pep: ").unwrap_or(text).trim_end_matches('\n');
        let level = if request.u64("level")? == 0 { LogLevel::Error } else { LogLevel::Info };
        match self.kernel {
            Some(kernel) => kernel.log(level, format_args!("{message}")),
            None => self.ledger.borrow_mut().runtime_log.push(message.to_owned()),
        }
        Ok(json!({}))
    }

    /// Records a `TraceLogging` event by name: the event metadata (the second data descriptor)
    /// is its size (2 bytes), its tags (bytes while the high bit is set) and the NUL-terminated
    /// name.
    fn etw_write(&self, request: &Request<'_>) {
        let name = request
            .message
            .get("data")
            .and_then(Value::as_array)
            .and_then(|data| data.get(1))
            .and_then(Value::as_str)
            .and_then(unhex)
            .and_then(|metadata| {
                let rest = metadata.get(2..)?;
                let tags = rest.iter().take_while(|byte| **byte & 0x80 != 0).count() + 1;
                let name = rest.get(tags..)?;
                let end = name.iter().position(|byte| *byte == 0)?;
                String::from_utf8(name[..end].to_vec()).ok()
            })
            .unwrap_or_else(|| "(unnamed)".to_owned());
        self.ledger.borrow_mut().etw_events.push(name);
    }

    fn wdf(&self, request: &Request<'_>) -> Result<Value, String> {
        let function = request.str("function")?;
        let wdf = Request { name: function, message: request.message };
        Ok(match function {
            "WdfDriverCreate" | "WdfDeviceCreate" => json!({"status": STATUS_SUCCESS}),
            "WdfDeviceSetStaticStopRemove" => {
                self.ledger.borrow_mut().static_stop_remove = Some(!wdf.bool("stoppable")?);
                json!({})
            }
            "WdfDeviceSetDeviceState" => {
                let not_disableable = wdf
                    .message
                    .get("state")
                    .and_then(|state| state.get("NotDisableable"))
                    .and_then(Value::as_u64)
                    .ok_or("WdfDeviceSetDeviceState without NotDisableable")?;
                self.ledger.borrow_mut().not_disableable = Some(not_disableable);
                json!({})
            }
            _ => self.registry(&wdf)?,
        })
    }

    fn registry(&self, request: &Request<'_>) -> Result<Value, String> {
        let kernel = self.kernel(request)?;
        let mut keys = self.keys.borrow_mut();
        let opened = |keys: &mut KernelKeys<'k>, result: Result<Key<'k>, NTSTATUS>| match result {
            Ok(key) => json!({"status": STATUS_SUCCESS, "key": keys.open(key)}),
            Err(status) => json!({"status": status, "key": 0}),
        };
        Ok(match request.name {
            "WdfDriverOpenParametersRegistryKey" => {
                let result = kernel.open_parameters().map(Key::Parameters);
                opened(&mut keys, result)
            }
            "WdfDriverOpenPersistentStateRegistryKey" => {
                opened(&mut keys, Ok(Key::PersistentState))
            }
            "WdfRegistryOpenKey" => {
                let name = request.str("name")?;
                let result = match keys.get(request.u64("parent")?) {
                    Some(Key::Parameters(_))
                        if name.eq_ignore_ascii_case(INSTALL_PENDING_KEY)
                            && kernel.install_pending() =>
                    {
                        Ok(Key::InstallPending)
                    }
                    Some(_) => Err(STATUS_OBJECT_NAME_NOT_FOUND),
                    None => {
                        return Err(format!(
                            "WdfRegistryOpenKey under key {} that is not open",
                            request.u64("parent")?
                        ));
                    }
                };
                opened(&mut keys, result)
            }
            "WdfRegistryCreateKey" => {
                let name = request.str("name")?;
                let result = match keys.get(request.u64("parent")?) {
                    Some(Key::PersistentState) if name.eq_ignore_ascii_case(state::KEY) => {
                        kernel.create_state_key().map(Key::State)
                    }
                    Some(_) => Err(STATUS_INVALID_PARAMETER),
                    None => {
                        return Err(format!(
                            "WdfRegistryCreateKey under key {} that is not open",
                            request.u64("parent")?
                        ));
                    }
                };
                opened(&mut keys, result)
            }
            "WdfRegistryQueryValue" => {
                let capacity = request.u64("capacity")?;
                let name = request.str("name")?;
                let Some(Key::Parameters(parameters)) = keys.get(request.u64("key")?) else {
                    return Ok(
                        json!({"status": STATUS_OBJECT_NAME_NOT_FOUND, "type": 0, "length": 0, "data": ""}),
                    );
                };
                query_value(parameters, name, capacity)
            }
            "WdfRegistryAssignULong" => {
                let name = request.str("name")?;
                let value = request.u32("value")?;
                match keys.get(request.u64("key")?) {
                    Some(Key::State(state)) => json!({"status": state.dword(name, value)}),
                    _ => json!({"status": STATUS_INVALID_PARAMETER}),
                }
            }
            "WdfRegistryAssignValue" => {
                let name = request.str("name")?;
                let data = request.bytes("data")?;
                let text = (request.u32("type")? == REG_SZ).then(|| reg_sz(&data)).flatten();
                match (keys.get(request.u64("key")?), text) {
                    (Some(Key::State(state)), Some(text)) => {
                        json!({"status": state.string(name, &text)})
                    }
                    _ => json!({"status": STATUS_INVALID_PARAMETER}),
                }
            }
            "WdfRegistryClose" => {
                let number = request.u64("key")?;
                let index = usize::try_from(number.saturating_sub(1)).unwrap_or(usize::MAX);
                match keys.keys.get_mut(index) {
                    Some(slot @ Some(_)) => *slot = None,
                    _ => {
                        return Err(format!("WdfRegistryClose of key {number}, which is not open"));
                    }
                }
                json!({})
            }
            function => {
                return Err(format!(
                    "KMDF function {function}: the runner translated a function ppm-sim does not serve"
                ));
            }
        })
    }
}

impl Host for ImageHost<'_> {
    fn serve(&self, name: &str, message: &Value) -> Result<Value, String> {
        self.answer_request(name, message)
    }

    fn timestamps(&self) -> Option<Vec<u64>> {
        self.platform.as_ref().and_then(SimPlatform::timestamps_ahead)
    }
}

/// `WdfRegistryQueryValue` of `name` in the `Parameters` key, into a buffer of `capacity`
/// bytes: the value, or its length with `STATUS_BUFFER_OVERFLOW`, or the failure.
fn query_value(parameters: &mut SimParameters<'_>, name: &str, capacity: u64) -> Value {
    let (status, value_type, length, data) = match parameters.read_named(name) {
        Lookup::Found { value_type, data } if data.len() as u64 <= capacity => {
            (STATUS_SUCCESS, value_type, data.len() as u64, hex(data))
        }
        Lookup::Found { value_type, data } => {
            (STATUS_BUFFER_OVERFLOW, value_type, data.len() as u64, String::new())
        }
        Lookup::TooLarge { needed } => {
            (STATUS_BUFFER_OVERFLOW, 0, u64::from(needed), String::new())
        }
        Lookup::Absent => (STATUS_OBJECT_NAME_NOT_FOUND, 0, 0, String::new()),
        Lookup::Failed { status } => (status, 0, 0, String::new()),
    };
    json!({"status": status, "type": value_type, "length": length, "data": data})
}

/// A `REG_SZ` value's text: UTF-16LE with its NUL terminator (`None` when malformed).
fn reg_sz(data: &[u8]) -> Option<String> {
    if !data.len().is_multiple_of(2) {
        return None;
    }
    let units: Vec<u16> =
        data.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
    let (last, text) = units.split_last()?;
    (*last == 0).then(|| String::from_utf16(text).ok()).flatten()
}

/// A `PHYSICAL_COUNTER_RESOURCE_LIST` from its bytes (the one descriptor the structure holds).
fn counter_list(bytes: &Value) -> Result<PHYSICAL_COUNTER_RESOURCE_LIST, String> {
    let data = bytes.as_str().and_then(unhex).ok_or("a counter list that is not hex")?;
    let size = size_of::<PHYSICAL_COUNTER_RESOURCE_LIST>();
    // The structure declares one descriptor; a list of more (which the HAL refuses from this
    // driver: `Count` is checked) is read up to its first.
    if data.len() < size {
        return Err(format!("a counter list of {} bytes (the structure has {size})", data.len()));
    }
    let mut list = PHYSICAL_COUNTER_RESOURCE_LIST::zeroed();
    // SAFETY: `list` is a repr(C) structure of integers and a union of integers (every bit
    // pattern is valid), `size` bytes long, and `data` has exactly `size` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(
            data.as_ptr(),
            std::ptr::from_mut(&mut list).cast::<u8>(),
            size,
        );
    }
    Ok(list)
}

/// One request and its arguments.
struct Request<'m> {
    name: &'m str,
    message: &'m Value,
}

impl Request<'_> {
    fn u64(&self, key: &str) -> Result<u64, String> {
        self.message
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("`{}` without a number `{key}`", self.name))
    }

    fn u32(&self, key: &str) -> Result<u32, String> {
        u32::try_from(self.u64(key)?).map_err(|_| format!("`{}`: `{key}` over 32 bits", self.name))
    }

    fn bool(&self, key: &str) -> Result<bool, String> {
        self.message
            .get(key)
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("`{}` without a boolean `{key}`", self.name))
    }

    fn str(&self, key: &str) -> Result<&str, String> {
        self.message
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("`{}` without a text `{key}`", self.name))
    }

    fn bytes(&self, key: &str) -> Result<Vec<u8>, String> {
        unhex(self.str(key)?).ok_or_else(|| format!("`{}`: `{key}` is not hex", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reg_sz_needs_its_terminator() {
        let mut data: Vec<u8> = "x64".encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(reg_sz(&data), None);
        data.extend([0, 0]);
        assert_eq!(reg_sz(&data).as_deref(), Some("x64"));
        assert_eq!(reg_sz(&data[1..]), None);
    }

    #[test]
    fn system_registers_by_encoding() {
        use ppm_engine::arm64::SystemRegister;
        let register =
            |op0, op1, crn, crm, op2| sysreg::register(sysreg::encode(op0, op1, crn, crm, op2));
        assert_eq!(register(3, 3, 13, 4, 1), Some(SystemRegister::Amevcntr01El0));
        assert_eq!(register(3, 0, 0, 4, 0), Some(SystemRegister::IdAa64Pfr0El1));
        assert_eq!(register(3, 3, 14, 0, 0), Some(SystemRegister::CntfrqEl0));
        assert_eq!(register(3, 0, 0, 0, 0), None);
    }

    #[test]
    fn machine_requests_need_a_machine() {
        let host = ImageHost::without_machine();
        let error =
            host.serve("rdmsr", &json!({"host": "rdmsr", "msr": 0xE8})).expect_err("no machine");
        assert!(error.contains("rdmsr"), "{error}");
        let error = host.answer_request("pool_allocate", &json!({})).expect_err("no kernel");
        assert!(error.contains("DriverEntry"), "{error}");
    }
}
