//! DPM registration, unregistration, abandon and start interleaved with PPM feedback reads,
//! resumes, counter resets/wraps/jumps, faults and processor switches, on a realistic platform
//! (Intel APERF/MPERF, AMD read-only copies, or reserved fixed counters), checked against a
//! model of what PoFx may rely on:
//!
//! - a device holds at most one slot: a well-formed `PREPARE` is accepted iff the id is a
//!   processor and it already holds a slot or one is free; `REGISTER` returns a fresh,
//!   never-seen handle iff the device is prepared; `ABANDON` says whether the device held a slot
//!   and frees it (its handle goes stale); `registered_count()` always equals the live handles;
//! - stale and forged handles are refused by everything; live ones are accepted;
//! - per live handle: the first read reports 0/0, reported counts never decrease, and (for the
//!   64-bit APERF/MPERF sources) equal exactly the sum of hardware deltas since the first read,
//!   an interval whose raw values went backwards (or after a resume) contributing zero, a
//!   reading of zero for both counters being no reading (the next one is a baseline);
//! - a handle is bound to the processor of its first read; reads on any other processor are
//!   refused;
//! - a refused call leaves its buffer untouched, a handled one writes only its output fields.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ppm_engine::abi::{
    PEP_DPM_ABANDON_DEVICE, PEP_DPM_DEVICE_STARTED, PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, PEPHANDLE,
};
use ppm_engine_fuzz::calls::{DpmParts, dpm_call, ppm_call};
use ppm_engine_fuzz::engine::ConfigSetup;
use ppm_engine_fuzz::input::{Fill, IdSpec};
use ppm_engine_fuzz::platform::{CounterSetup, CpuSetup, MsrSetup, Regs, Vendor};
use ppm_engine_fuzz::strings::{DeviceString, StringShape, StringSpec};
use ppm_engine_fuzz::{Engine, FuzzPlatform, Setup};

/// Processors reads run on (few, so binding conflicts are common).
const PROCESSORS: u8 = 4;
/// Device ids: `\_SB.CPU0` .. `\_SB.CPU9`, then two that are not processors.
const DEVICES: u8 = 12;
const PROCESSOR_DEVICES: usize = 10;

#[derive(Arbitrary, Debug)]
enum Hardware {
    IntelAperfMperf,
    AmdReadOnly,
    FixedCounters { width: u8, timestamp: bool },
}

#[derive(Arbitrary, Debug)]
struct Input {
    hardware: Hardware,
    performance_view: bool,
    capacity: u8,
    start: (u32, u32),
    ops: Vec<Op>,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum HandleRef {
    Live(u8),
    Stale(u8),
    Forged(u64),
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Op {
    Prepare(u8),
    Register(u8),
    Abandon(u8),
    Unregister(HandleRef),
    Started(HandleRef),
    Read { handle: HandleRef, processor: u8, index: u8 },
    Resume { handle: Option<HandleRef>, state: u8 },
    Enter { handle: Option<HandleRef>, state: u8 },
    Advance { processor: u8, actual: u32, nominal: u32 },
    Reset { processor: u8, actual: u16, nominal: u16 },
    ResetOne { processor: u8, nominal: bool, value: u16 },
    Jump { processor: u8, actual: u64, nominal: u64 },
    Fault { processor: u8, on: bool },
}

fn setup(input: &Input) -> Setup {
    let intel_features = Regs { eax: 0x000A_0655, ..Regs::default() };
    let mut cpu = CpuSetup {
        vendor: Vendor::Intel,
        max_leaf: 0x16,
        features: intel_features,
        power: Regs { eax: 0x82, ecx: 1, ..Regs::default() },
        pmu: Regs::default(),
        frequency: Regs { eax: 2_000, ..Regs::default() },
        max_extended: 0x8000_0008,
        extended_power: Regs::default(),
        extended_features: Regs::default(),
    };
    let mut msrs = MsrSetup {
        platform_info: Some(0x14 << 8),
        pm_enable: Some(1),
        hwp_capabilities: Some(0x0408_1428),
        ..MsrSetup::default()
    };
    let mut fixed_reserved = false;
    let mut timestamp = false;
    match input.hardware {
        Hardware::IntelAperfMperf => {}
        Hardware::AmdReadOnly => {
            cpu.vendor = Vendor::Amd;
            cpu.features = Regs { eax: 0x0080_0F12, ..Regs::default() };
            cpu.power = Regs { ecx: 1, ..Regs::default() };
            cpu.extended_power = Regs { edx: 1 << 10, ..Regs::default() };
            cpu.extended_features = Regs { ebx: 1 << 27, ..Regs::default() };
            msrs = MsrSetup { cppc_cap1: Some(0xFF80_4010), ..MsrSetup::default() };
        }
        Hardware::FixedCounters { width, timestamp: with_timestamp } => {
            let width = 32 + u32::from(width) % 33;
            cpu.features.ecx = 1 << 31;
            cpu.power = Regs::default();
            cpu.pmu = Regs { eax: 0x0730_0804, edx: 3 | (width & 0xFF) << 5, ..Regs::default() };
            fixed_reserved = true;
            timestamp = with_timestamp;
        }
    }
    Setup {
        cpu,
        msrs,
        counters: CounterSetup {
            start_actual: u64::from(input.start.0),
            start_nominal: u64::from(input.start.1),
            actual_per_us: 3_000,
            nominal_per_us: 2_000,
            ticks_per_us: 10,
            frequency: 10_000_000,
            timestamp,
            fixed_reserved,
            fault_at_start: false,
        },
        config: ConfigSetup {
            disabled: false,
            source: 0,
            performance_view: input.performance_view,
            nominal_mhz: None,
            perf: None,
            patterns: None,
            latency: 0,
        },
        capacity: 1 + input.capacity % 8,
        processor: 0,
    }
}

fn device_id(device: u8) -> IdSpec {
    match device % DEVICES {
        10 => IdSpec::Other(0),
        11 => IdSpec::Other(2),
        number => IdSpec::Processor { shape: 0, number: u16::from(number), lowercase: false },
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    No,
    To(u32),
    /// Bound to this processor or not at all (a first read that faulted).
    Maybe(u32),
}

#[derive(Debug)]
struct Live {
    handle: PEPHANDLE,
    device: usize,
    bound: Bound,
    /// Raw values of the last read; `None` = the next read is a baseline.
    last: Option<(u64, u64)>,
    /// A baseline is due (the handle's first read, or the first after a resume): a reading of
    /// zero for both counters is then that baseline, not "no reading".
    due: bool,
    /// Exact sums of hardware deltas (actual, nominal).
    totals: (u128, u128),
    /// What the last handled read reported (nominal, actual).
    reported: Option<(u64, u64)>,
}

struct Model {
    live: Vec<Live>,
    stale: Vec<PEPHANDLE>,
    seen: Vec<PEPHANDLE>,
    prepared: [bool; DEVICES as usize],
    capacity: usize,
    counters: u32,
    exact: bool,
}

impl Model {
    fn resolve(&self, reference: HandleRef) -> PEPHANDLE {
        let pick = |list: &[PEPHANDLE], index: u8| {
            list.get(usize::from(index) % list.len().max(1)).copied()
        };
        match reference {
            HandleRef::Live(index) => {
                let handles: Vec<PEPHANDLE> = self.live.iter().map(|live| live.handle).collect();
                pick(&handles, index).unwrap_or(std::ptr::null_mut())
            }
            HandleRef::Stale(index) => pick(&self.stale, index).unwrap_or(std::ptr::null_mut()),
            HandleRef::Forged(value) => {
                std::ptr::without_provenance_mut(usize::try_from(value).unwrap_or(usize::MAX))
            }
        }
    }

    fn live_index(&self, handle: PEPHANDLE) -> Option<usize> {
        self.live.iter().position(|live| live.handle == handle)
    }

    fn holds(&self, device: usize) -> bool {
        self.prepared[device] || self.live.iter().any(|live| live.device == device)
    }

    fn occupied(&self) -> usize {
        self.prepared.iter().filter(|&&prepared| prepared).count() + self.live.len()
    }

    fn retire(&mut self, index: usize) {
        let live = self.live.swap_remove(index);
        self.stale.push(live.handle);
    }
}

fn plain_fill(bytes: &[u8]) -> Fill {
    Fill { null: 0xFF, extra: 0, misalign: 0, pad: 0xEE, bytes: bytes.to_vec() }
}

/// Whether `handle` is live, asked the engine without changing anything.
fn probe(engine: &Engine, handle: PEPHANDLE) -> bool {
    let call = ppm_call(PEP_NOTIFY_PPM_QUERY_CAPABILITIES, &plain_fill(&[]), None);
    // SAFETY: a 12-byte PEP_PPM_QUERY_CAPABILITIES.
    let handled = unsafe { engine.ppm(handle, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, call.pointer()) };
    call.check(handled, "QUERY_CAPABILITIES");
    handled
}

fn read(engine: &Engine, model: &mut Model, reference: HandleRef, processor: u8, index: u8) {
    let handle = model.resolve(reference);
    let processor = u32::from(processor % PROCESSORS);
    let platform: &FuzzPlatform = engine.platform();
    platform.set_processor(processor);
    let index = u32::from(index % 3);
    let mut bytes = index.to_le_bytes().to_vec();
    bytes.extend_from_slice(&[0xC3; 20]);
    let call = ppm_call(PEP_NOTIFY_PPM_FEEDBACK_READ, &plain_fill(&bytes), None);
    // SAFETY: a 24-byte PEP_PPM_FEEDBACK_READ.
    let handled = unsafe { engine.ppm(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, call.pointer()) };
    call.check(handled, "FEEDBACK_READ");
    let Some(position) = model.live_index(handle) else {
        assert!(!handled, "read with a stale or forged handle {handle:p} handled");
        return;
    };
    let exact = model.exact;
    let counters = model.counters;
    let live = &mut model.live[position];
    if index >= counters {
        assert!(!handled, "read of counter {index} of {counters} handled");
        return;
    }
    let faulting = platform.faulting(processor);
    match live.bound {
        Bound::To(bound) if bound != processor => {
            assert!(!handled, "read on processor {processor} of a handle bound to {bound}");
            return;
        }
        // Bound to `bound` (then refused), or unbound (then served unless faulting).
        Bound::Maybe(bound) if bound != processor && !handled => {
            if !faulting {
                live.bound = Bound::To(bound);
            }
            return;
        }
        _ => {}
    }
    assert_eq!(handled, !faulting, "read on processor {processor} (faulting: {faulting})");
    if !handled {
        if live.bound == Bound::No {
            live.bound = Bound::Maybe(processor);
        }
        return;
    }
    live.bound = Bound::To(processor);
    let data = call.data().expect("a buffer");
    let reported = (data.u64_at(8).unwrap_or(0), data.u64_at(16).unwrap_or(0));
    let (actual, nominal) = platform.counters(processor);
    if (actual, nominal) == (0, 0) {
        // Zero for both counters is the baseline when one is due (counters restarted by a
        // sleep); otherwise no reading (a hypervisor hiding them): the totals stay and the next
        // real reading is a new baseline.
        live.last = live.due.then_some((0, 0));
    } else {
        match live.last {
            Some((last_actual, last_nominal))
                if actual >= last_actual && nominal >= last_nominal =>
            {
                live.totals.0 += u128::from(actual - last_actual);
                live.totals.1 += u128::from(nominal - last_nominal);
            }
            _ => {}
        }
        live.last = Some((actual, nominal));
    }
    live.due = false;
    match live.reported {
        None => assert_eq!(reported, (0, 0), "the first read of a handle reports 0/0"),
        Some(previous) => {
            let fits =
                live.totals.0 <= u128::from(u64::MAX) && live.totals.1 <= u128::from(u64::MAX);
            let small = previous.0 < 1 << 62 && previous.1 < 1 << 62;
            if (exact && fits) || (!exact && small) {
                assert!(
                    reported.0 >= previous.0 && reported.1 >= previous.1,
                    "reported counts decreased: {previous:?} -> {reported:?}"
                );
            }
        }
    }
    if exact {
        // Truncation is the point: the engine's totals are the exact sums modulo 2^64.
        #[allow(clippy::cast_possible_truncation)]
        let expected = (live.totals.1 as u64, live.totals.0 as u64);
        assert_eq!(reported, expected, "reported (nominal, actual) != sum of hardware deltas");
    }
    live.reported = Some(reported);
}

fn system_state(
    engine: &Engine,
    model: &mut Model,
    reference: Option<HandleRef>,
    state: u8,
    resume: bool,
) {
    let handle = reference.map_or(std::ptr::null_mut(), |reference| model.resolve(reference));
    let notification = if resume {
        PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE
    } else {
        PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE
    };
    let target = i32::from(state % 9);
    let call = ppm_call(notification, &plain_fill(&target.to_le_bytes()), None);
    // SAFETY: a 4-byte PEP_PPM_{ENTER,RESUME_FROM}_SYSTEM_STATE.
    let handled = unsafe { engine.ppm(handle, notification, call.pointer()) };
    call.check(handled, "system state");
    let live = model.live_index(handle);
    if handled {
        assert!(handle.is_null() || live.is_some(), "system state with a dead handle handled");
    } else {
        assert!(
            !(1..=6).contains(&target) || (!handle.is_null() && live.is_none()),
            "system state {target} refused"
        );
    }
    if handled && resume {
        match live {
            Some(index) => {
                model.live[index].last = None;
                model.live[index].due = true;
            }
            None => model.live.iter_mut().for_each(|live| {
                live.last = None;
                live.due = true;
            }),
        }
    }
}

fn abandon(engine: &Engine, model: &mut Model, device: u8) {
    let id = device_id(device);
    let device = usize::from(device % DEVICES);
    let string = StringSpec { id, shape: StringShape::Exact, maximum_length: 0 };
    let parts = DpmParts {
        string: DeviceString::from_spec(&string),
        handle: std::ptr::null_mut(),
        kernel_handle: 0,
        register_block: false,
        block_fill: &[],
    };
    let call = dpm_call(PEP_DPM_ABANDON_DEVICE, &plain_fill(&[]), parts);
    let before = engine.pep().registered_count();
    // SAFETY: a 16-byte PEP_ABANDON_DEVICE with a valid id.
    let handled = unsafe { engine.dpm(PEP_DPM_ABANDON_DEVICE, call.pointer()) };
    call.check(handled, "ABANDON_DEVICE");
    assert!(handled, "ABANDON_DEVICE of a well-formed id refused");
    let owned = call.data().map_or(0, |data| data.bytes()[8]);
    assert_eq!(owned == 1, model.holds(device), "ABANDON DeviceAccepted");
    let after = engine.pep().registered_count();
    if let Some(index) = model.live.iter().position(|live| live.device == device) {
        assert_eq!(after + 1, before, "ABANDON of a registered device");
        assert!(!probe(engine, model.live[index].handle), "an abandoned device's handle");
        model.retire(index);
    } else {
        assert_eq!(after, before, "ABANDON of a device that is not registered");
        model.prepared[device] = false;
    }
}

fn started(engine: &Engine, model: &Model, reference: HandleRef) {
    let handle = model.resolve(reference);
    let parts = DpmParts {
        string: DeviceString::from_spec(&StringSpec {
            id: IdSpec::Raw(Vec::new()),
            shape: StringShape::NullString,
            maximum_length: 0,
        }),
        handle,
        kernel_handle: 0,
        register_block: false,
        block_fill: &[],
    };
    let call = dpm_call(PEP_DPM_DEVICE_STARTED, &plain_fill(&[]), parts);
    // SAFETY: an 8-byte PEP_DEVICE_STARTED.
    let handled = unsafe { engine.dpm(PEP_DPM_DEVICE_STARTED, call.pointer()) };
    call.check(handled, "DEVICE_STARTED");
    assert_eq!(handled, model.live_index(handle).is_some(), "DEVICE_STARTED of {handle:p}");
}

fn step(engine: &Engine, model: &mut Model, op: Op) {
    let platform = engine.platform();
    match op {
        Op::Prepare(device) => {
            let index = usize::from(device % DEVICES);
            let holds = model.holds(index);
            let expected =
                index < PROCESSOR_DEVICES && (holds || model.occupied() < model.capacity);
            assert_eq!(engine.prepare(&device_id(device)), expected, "PREPARE of device {index}");
            if expected && !holds {
                model.prepared[index] = true;
            }
        }
        Op::Register(device) => {
            let index = usize::from(device % DEVICES);
            let handle = engine.register(&device_id(device));
            assert_eq!(!handle.is_null(), model.prepared[index], "REGISTER of device {index}");
            if !handle.is_null() {
                assert!(!model.seen.contains(&handle), "REGISTER reused handle {handle:p}");
                model.seen.push(handle);
                model.prepared[index] = false;
                model.live.push(Live {
                    handle,
                    device: index,
                    bound: Bound::No,
                    last: None,
                    due: true,
                    totals: (0, 0),
                    reported: None,
                });
            }
        }
        Op::Abandon(device) => abandon(engine, model, device),
        Op::Unregister(reference) => {
            let handle = model.resolve(reference);
            let live = model.live_index(handle);
            assert_eq!(engine.unregister(handle), live.is_some(), "UNREGISTER of {handle:p}");
            if let Some(index) = live {
                model.retire(index);
            }
        }
        Op::Started(reference) => started(engine, model, reference),
        Op::Read { handle, processor, index } => read(engine, model, handle, processor, index),
        Op::Resume { handle, state } => system_state(engine, model, handle, state, true),
        Op::Enter { handle, state } => system_state(engine, model, handle, state, false),
        Op::Advance { processor, actual, nominal } => {
            platform.advance(u32::from(processor % PROCESSORS), actual.into(), nominal.into());
        }
        Op::Reset { processor, actual, nominal } => {
            platform.set_counters(u32::from(processor % PROCESSORS), actual.into(), nominal.into());
        }
        Op::ResetOne { processor, nominal, value } => {
            let processor = u32::from(processor % PROCESSORS);
            let (raw_actual, raw_nominal) = platform.counters(processor);
            let value = u64::from(value);
            let (actual, nominal) =
                if nominal { (raw_actual, value) } else { (value, raw_nominal) };
            platform.set_counters(processor, actual, nominal);
        }
        Op::Jump { processor, actual, nominal } => {
            platform.set_counters(u32::from(processor % PROCESSORS), actual, nominal);
        }
        Op::Fault { processor, on } => platform.set_fault(u32::from(processor % PROCESSORS), on),
    }
    assert_eq!(engine.pep().registered_count(), model.live.len(), "registered_count");
}

fuzz_target!(|input: Input| {
    let setup = setup(&input);
    let engine = Engine::new(&setup);
    let counters = engine.pep().feedback_counter_count();
    assert!(counters >= 1, "the realistic platform has counters");
    let mut model = Model {
        live: Vec::new(),
        stale: Vec::new(),
        seen: Vec::new(),
        prepared: [false; DEVICES as usize],
        capacity: engine.pep().capacity(),
        counters,
        exact: !matches!(input.hardware, Hardware::FixedCounters { .. }),
    };
    for &op in input.ops.iter().take(1024) {
        step(&engine, &mut model, op);
    }
});
