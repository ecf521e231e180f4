//! Driving the engine the way the kernel does: only through the `PEP_INFORMATION` callbacks,
//! with raw pointers to the C structures. Shared by the integration tests; each test crate
//! brings its own `Platform`.
#![allow(dead_code)]

use core::ffi::c_void;

use ppm_engine::abi::{
    PEP_DPM_PREPARE_DEVICE, PEP_DPM_REGISTER_DEVICE, PEP_DPM_UNREGISTER_DEVICE,
    PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_QUERY_CAPABILITIES,
    PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_FEEDBACK_READ__bindgen_ty_1, PEP_PPM_QUERY_CAPABILITIES,
    PEP_PPM_RESUME_FROM_SYSTEM_STATE, PEP_PREPARE_DEVICE, PEP_REGISTER_DEVICE_V2,
    PEP_UNREGISTER_DEVICE, PEPHANDLE, PepDeviceAccepted, PepDeviceNotAccepted, PowerSystemWorking,
    TRUE, ULONG, UNICODE_STRING,
};
use ppm_engine::x86::cpuid;
use ppm_engine::{CpuidResult, Platform, pep_information};

/// CPUID of an Intel processor (family 6 model 0xA5) under a hypervisor that exposes
/// APERF/MPERF (leaf 6 ECX[0]) and nothing model-specific, with a 2000 MHz base frequency
/// (leaf 16h): the engine selects `IA32_APERF`/`IA32_MPERF` and reads no other MSR than the pair.
pub fn intel_vm_cpuid(leaf: u32) -> CpuidResult {
    match leaf {
        cpuid::LEAF_VENDOR => CpuidResult {
            eax: cpuid::LEAF_FREQUENCY,
            ebx: cpuid::VENDOR_INTEL[0],
            edx: cpuid::VENDOR_INTEL[1],
            ecx: cpuid::VENDOR_INTEL[2],
        },
        cpuid::LEAF_FEATURES => CpuidResult {
            eax: 0x000A_0655,
            ecx: cpuid::FEATURES_ECX_HYPERVISOR,
            ..CpuidResult::default()
        },
        cpuid::LEAF_POWER => {
            CpuidResult { ecx: cpuid::POWER_ECX_APERFMPERF, ..CpuidResult::default() }
        }
        cpuid::LEAF_FREQUENCY => CpuidResult { eax: 2_000, ..CpuidResult::default() },
        _ => CpuidResult::default(),
    }
}

/// What a refused `FEEDBACK_READ` must leave in the union.
pub const UNTOUCHED: u64 = 0xDEAD_BEEF_DEAD_BEEF;

/// `AcceptDeviceNotification`.
pub fn dpm<P: Platform>(notification: ULONG, data: *mut c_void) -> bool {
    let callback = pep_information::<P>().AcceptDeviceNotification.expect("DPM callback");
    // SAFETY: every caller passes NULL or the documented structure for `notification`.
    let result = unsafe { callback(notification, data) };
    assert!(result <= TRUE, "BOOLEAN {result}");
    result == TRUE
}

/// `AcceptProcessorNotification`.
pub fn ppm<P: Platform>(handle: PEPHANDLE, notification: ULONG, data: *mut c_void) -> bool {
    let callback = pep_information::<P>().AcceptProcessorNotification.expect("PPM callback");
    // SAFETY: every caller passes NULL or the documented structure for `notification`.
    let result = unsafe { callback(handle, notification, data) };
    assert!(result <= TRUE, "BOOLEAN {result}");
    result == TRUE
}

/// A device id as the `UNICODE_STRING` PoFx passes (the units must outlive its use).
fn unicode(units: &mut [u16]) -> UNICODE_STRING {
    let length = u16::try_from(units.len() * 2).expect("short id");
    UNICODE_STRING { Length: length, MaximumLength: length, Buffer: units.as_mut_ptr() }
}

/// `PEP_DPM_PREPARE_DEVICE`: whether the device was accepted.
pub fn prepare<P: Platform>(id: &str) -> bool {
    let mut units: Vec<u16> = id.encode_utf16().collect();
    let string = unicode(&mut units);
    let mut data = PEP_PREPARE_DEVICE { DeviceId: &raw const string, DeviceAccepted: 0xAA };
    assert!(dpm::<P>(PEP_DPM_PREPARE_DEVICE, (&raw mut data).cast()), "PREPARE refused");
    assert!(data.DeviceAccepted <= TRUE);
    data.DeviceAccepted == TRUE
}

/// `PEP_DPM_REGISTER_DEVICE`: the handle, NULL when declined.
pub fn register<P: Platform>(id: &str) -> PEPHANDLE {
    let mut units: Vec<u16> = id.encode_utf16().collect();
    let string = unicode(&mut units);
    let mut data = PEP_REGISTER_DEVICE_V2 {
        DeviceId: &raw const string,
        KernelHandle: core::ptr::without_provenance_mut(0x1000),
        Register: core::ptr::null_mut(),
        DeviceHandle: core::ptr::without_provenance_mut(0x5A5A),
        DeviceAccepted: -1,
    };
    assert!(dpm::<P>(PEP_DPM_REGISTER_DEVICE, (&raw mut data).cast()), "REGISTER refused");
    let accepted = data.DeviceAccepted == PepDeviceAccepted;
    assert!(accepted || data.DeviceAccepted == PepDeviceNotAccepted, "{}", data.DeviceAccepted);
    assert_eq!(accepted, !data.DeviceHandle.is_null(), "DeviceAccepted and DeviceHandle agree");
    data.DeviceHandle
}

/// Prepares and registers `id`; the handle.
pub fn add_processor<P: Platform>(id: &str) -> PEPHANDLE {
    assert!(prepare::<P>(id), "{id} declined");
    let handle = register::<P>(id);
    assert!(!handle.is_null(), "{id} not registered");
    handle
}

/// `PEP_DPM_UNREGISTER_DEVICE`: whether it was handled.
pub fn unregister<P: Platform>(handle: PEPHANDLE) -> bool {
    let mut data = PEP_UNREGISTER_DEVICE { DeviceHandle: handle };
    dpm::<P>(PEP_DPM_UNREGISTER_DEVICE, (&raw mut data).cast())
}

/// `PEP_NOTIFY_PPM_FEEDBACK_READ` of counter `index`: (`NominalCount`, `ActualCount`), or
/// `None` when refused — after checking a refused read left the structure untouched.
pub fn read<P: Platform>(handle: PEPHANDLE, index: u32) -> Option<(u64, u64)> {
    let mut data = PEP_PPM_FEEDBACK_READ {
        CounterIndex: index,
        __bindgen_anon_1: PEP_PPM_FEEDBACK_READ__bindgen_ty_1 {
            __bindgen_anon_1: ppm_engine::abi::PEP_PPM_FEEDBACK_READ__bindgen_ty_1__bindgen_ty_1 {
                NominalCount: UNTOUCHED,
                ActualCount: UNTOUCHED,
            },
        },
    };
    let handled = ppm::<P>(handle, PEP_NOTIFY_PPM_FEEDBACK_READ, (&raw mut data).cast());
    assert_eq!(data.CounterIndex, index, "CounterIndex is an input");
    // SAFETY: the relative view was initialised above, and a handled read fills it.
    let counts = unsafe { data.__bindgen_anon_1.__bindgen_anon_1 };
    if handled {
        Some((counts.NominalCount, counts.ActualCount))
    } else {
        assert_eq!((counts.NominalCount, counts.ActualCount), (UNTOUCHED, UNTOUCHED));
        None
    }
}

/// `PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE` to `PowerSystemWorking`.
pub fn resume<P: Platform>(handle: PEPHANDLE) -> bool {
    let mut data = PEP_PPM_RESUME_FROM_SYSTEM_STATE { TargetState: PowerSystemWorking };
    ppm::<P>(handle, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, (&raw mut data).cast())
}

/// Whether `handle` is live (`QUERY_CAPABILITIES` accepts exactly the live handles).
pub fn live<P: Platform>(handle: PEPHANDLE) -> bool {
    let mut data = PEP_PPM_QUERY_CAPABILITIES::zeroed();
    ppm::<P>(handle, PEP_NOTIFY_PPM_QUERY_CAPABILITIES, (&raw mut data).cast())
}
