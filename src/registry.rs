//! The service's registry keys through KMDF: raw values of `Parameters` (settings, read only),
//! and the volatile state key `Boot` under the driver's persistent-state key
//! (`WdfDriverOpenPersistentStateRegistryKey`: driver-isolation rules keep run-time writes out of
//! `Parameters`). `PASSIVE_LEVEL`, in `DriverEntry`.
//!
//! `WdfDriverOpenParametersRegistryKey` opens
//! `HKLM\SYSTEM\CurrentControlSet\Services\ppm_pep\Parameters`; `WdfRegistryQueryValue` returns
//! any value's raw type and bytes, which the engine's registry rules
//! (`ppm_engine::driver::registry`) judge; `WdfRegistryCreateKey`, `WdfRegistryAssignULong` and
//! `WdfRegistryAssignValue` write the state; `WdfRegistryClose` closes.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

use ppm_engine::driver::StateKey;
use ppm_engine::driver::registry::{
    Lookup, MAX_NAME_UNITS, REG_OPTION_VOLATILE, REG_SZ, VALUE_BUFFER_BYTES, ValueSource,
    encode_name, encode_reg_sz, state,
};
use wdk_sys::{
    ACCESS_MASK, KEY_READ, KEY_WRITE, NT_SUCCESS, NTSTATUS, STATUS_BUFFER_OVERFLOW,
    STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_PARAMETER, STATUS_OBJECT_NAME_NOT_FOUND,
    STATUS_SUCCESS, STATUS_UNSUCCESSFUL, ULONG, UNICODE_STRING, WDF_NO_OBJECT_ATTRIBUTES,
    WDFDRIVER, WDFKEY, call_unsafe_wdf_function_binding,
};

/// The largest `REG_SZ` state value, in bytes (127 UTF-16 units and the NUL).
const TEXT_BYTES: usize = 256;

/// The buffer values are read into: static, so that `DriverEntry`'s stack does not carry it.
struct ValueBuffer(UnsafeCell<[u8; VALUE_BUFFER_BYTES]>);

// SAFETY: only `Parameters::open` hands out a reference, and only while it holds `BUFFER_TAKEN`.
unsafe impl Sync for ValueBuffer {}

static BUFFER: ValueBuffer = ValueBuffer(UnsafeCell::new([0; VALUE_BUFFER_BYTES]));
static BUFFER_TAKEN: AtomicBool = AtomicBool::new(false);

/// An open WDF registry key, closed on drop.
struct Key(WDFKEY);

impl Key {
    /// The outcome of a WDF call that opened `key` with `status`.
    const fn opened(status: NTSTATUS, key: WDFKEY) -> Result<Self, NTSTATUS> {
        match (NT_SUCCESS(status), key.is_null()) {
            (false, _) => Err(status),
            (true, true) => Err(STATUS_UNSUCCESSFUL),
            (true, false) => Ok(Self(key)),
        }
    }

    /// Opens the driver's persistent-state key (KMDF 1.25+) with `access`: where a driver keeps
    /// what it writes at run time (`Parameters` is for the INF's settings).
    fn open_persistent_state(driver: WDFDRIVER, access: ACCESS_MASK) -> Result<Self, NTSTATUS> {
        let mut key: WDFKEY = core::ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; `driver` is the WDFDRIVER WdfDriverCreate returned; no object
        // attributes; `key` is a valid WDFKEY to write.
        let status = unsafe {
            call_unsafe_wdf_function_binding!(
                WdfDriverOpenPersistentStateRegistryKey,
                driver,
                access,
                WDF_NO_OBJECT_ATTRIBUTES,
                &raw mut key,
            )
        };
        Self::opened(status, key)
    }

    /// Opens the driver's `Parameters` key with `access`.
    fn open_parameters(driver: WDFDRIVER, access: ACCESS_MASK) -> Result<Self, NTSTATUS> {
        let mut key: WDFKEY = core::ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; `driver` is the WDFDRIVER WdfDriverCreate returned; no object
        // attributes; `key` is a valid WDFKEY to write.
        let status = unsafe {
            call_unsafe_wdf_function_binding!(
                WdfDriverOpenParametersRegistryKey,
                driver,
                access,
                WDF_NO_OBJECT_ATTRIBUTES,
                &raw mut key,
            )
        };
        Self::opened(status, key)
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        // SAFETY: PASSIVE_LEVEL; the key was opened by WDF and is closed exactly once.
        unsafe { call_unsafe_wdf_function_binding!(WdfRegistryClose, self.0) };
    }
}

/// `name` as a `UNICODE_STRING` over `units` (`None`: not ASCII or too long).
fn unicode_string(name: &str, units: &mut [u16; MAX_NAME_UNITS]) -> Option<UNICODE_STRING> {
    let bytes = u16::try_from(encode_name(name, units)?.checked_mul(2)?).ok()?;
    Some(UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: units.as_mut_ptr() })
}

/// Whether `Parameters` has a subkey `name` (the installer's volatile `InstallPending`).
/// `PASSIVE_LEVEL`.
pub fn parameters_subkey_exists(driver: WDFDRIVER, name: &str) -> bool {
    let Ok(parameters) = Key::open_parameters(driver, KEY_READ) else { return false };
    let mut units = [0u16; MAX_NAME_UNITS];
    let Some(name) = unicode_string(name, &mut units) else { return false };
    let mut key: WDFKEY = core::ptr::null_mut();
    // SAFETY: PASSIVE_LEVEL; the parent is open; `name` points into `units`, alive for the
    // call; no object attributes; `key` is a valid WDFKEY to write.
    let status = unsafe {
        call_unsafe_wdf_function_binding!(
            WdfRegistryOpenKey,
            parameters.0,
            &raw const name,
            KEY_READ,
            WDF_NO_OBJECT_ATTRIBUTES,
            &raw mut key,
        )
    };
    // Opened: it exists (the key is closed again when the `Key` drops).
    Key::opened(status, key).is_ok()
}

/// The open `Parameters` key and the static value buffer.
pub struct Parameters {
    key: Key,
    buffer: &'static mut [u8; VALUE_BUFFER_BYTES],
}

impl Parameters {
    /// Opens `Parameters` for reading.
    ///
    /// # Errors
    /// The failed open's status; `STATUS_INSUFFICIENT_RESOURCES` if a `Parameters` is open.
    pub fn open(driver: WDFDRIVER) -> Result<Self, NTSTATUS> {
        if BUFFER_TAKEN.swap(true, Ordering::Acquire) {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        let key = Key::open_parameters(driver, KEY_READ).inspect_err(|_| {
            BUFFER_TAKEN.store(false, Ordering::Release);
        })?;
        // SAFETY: `BUFFER_TAKEN` was false and is now ours, so no other reference to the
        // buffer exists until `drop` clears it.
        let buffer = unsafe { &mut *BUFFER.0.get() };
        Ok(Self { key, buffer })
    }
}

impl Drop for Parameters {
    fn drop(&mut self) {
        BUFFER_TAKEN.store(false, Ordering::Release);
    }
}

impl ValueSource for Parameters {
    fn read(&mut self, name: &'static str) -> Lookup<'_> {
        let mut units = [0u16; MAX_NAME_UNITS];
        let Some(name) = unicode_string(name, &mut units) else {
            return Lookup::Failed { status: STATUS_INVALID_PARAMETER };
        };
        let capacity = ULONG::try_from(self.buffer.len()).unwrap_or(0);
        let (mut length, mut value_type): (ULONG, ULONG) = (0, 0);
        // SAFETY: PASSIVE_LEVEL; the key is open; `name` points into `units`, alive for the
        // call; the buffer has `capacity` writable bytes; both out-pointers are valid.
        let status = unsafe {
            call_unsafe_wdf_function_binding!(
                WdfRegistryQueryValue,
                self.key.0,
                &raw const name,
                capacity,
                self.buffer.as_mut_ptr().cast(),
                &raw mut length,
                &raw mut value_type,
            )
        };
        match status {
            STATUS_SUCCESS => {
                let bytes = usize::try_from(length).unwrap_or(usize::MAX);
                self.buffer.get(..bytes).map_or(Lookup::TooLarge { needed: length }, |data| {
                    Lookup::Found { value_type, data }
                })
            }
            STATUS_OBJECT_NAME_NOT_FOUND => Lookup::Absent,
            STATUS_BUFFER_OVERFLOW => Lookup::TooLarge { needed: length },
            status => Lookup::Failed { status },
        }
    }
}

/// The volatile state key: subkey `Boot` of the driver's persistent-state key.
pub struct State(Key);

impl State {
    /// Creates (or opens) the volatile state key.
    ///
    /// # Errors
    /// The `NTSTATUS` of the failed open or create.
    pub fn create(driver: WDFDRIVER) -> Result<Self, NTSTATUS> {
        let parameters = Key::open_persistent_state(driver, KEY_WRITE)?;
        let mut units = [0u16; MAX_NAME_UNITS];
        let name = unicode_string(state::KEY, &mut units).ok_or(STATUS_INVALID_PARAMETER)?;
        let mut key: WDFKEY = core::ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; the parent is open; `name` points into `units`, alive for the
        // call; no disposition is requested and no object attributes; `key` is valid to write.
        let status = unsafe {
            call_unsafe_wdf_function_binding!(
                WdfRegistryCreateKey,
                parameters.0,
                &raw const name,
                KEY_WRITE,
                REG_OPTION_VOLATILE,
                core::ptr::null_mut(),
                WDF_NO_OBJECT_ATTRIBUTES,
                &raw mut key,
            )
        };
        Key::opened(status, key).map(Self)
    }
}

impl StateKey for State {
    fn dword(&mut self, name: &str, value: u32) -> NTSTATUS {
        let mut units = [0u16; MAX_NAME_UNITS];
        let Some(name) = unicode_string(name, &mut units) else {
            return STATUS_INVALID_PARAMETER;
        };
        // SAFETY: PASSIVE_LEVEL; the key is open for writing; `name` points into `units`, alive
        // for the call.
        unsafe {
            call_unsafe_wdf_function_binding!(
                WdfRegistryAssignULong,
                self.0.0,
                &raw const name,
                value
            )
        }
    }

    fn string(&mut self, name: &str, text: &str) -> NTSTATUS {
        let mut units = [0u16; MAX_NAME_UNITS];
        let mut data = [0u8; TEXT_BYTES];
        let length = encode_reg_sz(text, &mut data).and_then(|bytes| ULONG::try_from(bytes).ok());
        let (Some(name), Some(length)) = (unicode_string(name, &mut units), length) else {
            return STATUS_INVALID_PARAMETER;
        };
        // SAFETY: PASSIVE_LEVEL; the key is open for writing; `name` points into `units` and
        // the data's `length` bytes into `data`, both alive for the call (WDF only reads the
        // data, although the prototype says PVOID).
        unsafe {
            call_unsafe_wdf_function_binding!(
                WdfRegistryAssignValue,
                self.0.0,
                &raw const name,
                REG_SZ,
                length,
                data.as_mut_ptr().cast(),
            )
        }
    }
}
