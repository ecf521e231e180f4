//! The service's registry keys through KMDF: the configuration in `Parameters`, and the
//! volatile `Parameters\State` key the validation scripts read.
//!
//! KMDF's registry objects are the simplest exact option: `WdfDriverOpenParametersRegistryKey`
//! opens (creating if needed) `HKLM\SYSTEM\CurrentControlSet\Services\ppm_pep\Parameters`,
//! `WdfRegistryQueryValue` returns any value's raw type and bytes (so one code path feeds every
//! value to the pure rules of `config_values`), `WdfRegistryCreateKey`,
//! `WdfRegistryAssignULong` and `WdfRegistryAssignValue` write the state, `WdfRegistryClose`
//! closes. Everything here runs at `PASSIVE_LEVEL`, in `DriverEntry`.

use ppm_engine::Config;
use wdk_sys::{
    ACCESS_MASK, KEY_READ, KEY_WRITE, NT_SUCCESS, NTSTATUS, STATUS_BUFFER_OVERFLOW,
    STATUS_INVALID_PARAMETER, STATUS_OBJECT_NAME_NOT_FOUND, STATUS_SUCCESS, STATUS_UNSUCCESSFUL,
    ULONG, UNICODE_STRING, WDF_NO_OBJECT_ATTRIBUTES, WDFDRIVER, WDFKEY,
    call_unsafe_wdf_function_binding,
};

use crate::config_values::{
    self, Lookup, MAX_NAME_UNITS, REG_OPTION_VOLATILE, REG_SZ, VALUE_BUFFER_BYTES, ValueSource,
};
use crate::log;

/// The largest `REG_SZ` state value, in bytes (127 UTF-16 units and the NUL).
const TEXT_BYTES: usize = 256;

/// An open WDF registry key, closed on drop.
struct Key(WDFKEY);

impl Key {
    /// The outcome of a WDF call that opened `key` with `status`.
    const fn opened(status: NTSTATUS, key: WDFKEY) -> Result<Self, NTSTATUS> {
        if !NT_SUCCESS(status) {
            Err(status)
        } else if key.is_null() {
            Err(STATUS_UNSUCCESSFUL)
        } else {
            Ok(Self(key))
        }
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

    /// Creates (or opens) subkey `name` with `access` and `options` (`REG_OPTION_*`).
    fn create_subkey(
        &self,
        name: &str,
        access: ACCESS_MASK,
        options: ULONG,
    ) -> Result<Self, NTSTATUS> {
        let mut units = [0u16; MAX_NAME_UNITS];
        let name = unicode_string(name, &mut units).ok_or(STATUS_INVALID_PARAMETER)?;
        let mut key: WDFKEY = core::ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL; the parent is open; `name` points into `units`, alive for the
        // call; no disposition is requested and no object attributes; `key` is valid to write.
        let status = unsafe {
            call_unsafe_wdf_function_binding!(
                WdfRegistryCreateKey,
                self.0,
                &raw const name,
                access,
                options,
                core::ptr::null_mut(),
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

/// Builds a `UNICODE_STRING` for the ASCII `name`, encoded into `units`.
fn unicode_string(name: &str, units: &mut [u16]) -> Option<UNICODE_STRING> {
    let length = config_values::encode_name(name, units)?;
    let bytes = u16::try_from(length.checked_mul(2)?).ok()?;
    Some(UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: units.as_mut_ptr() })
}

/// Raw values of the `Parameters` key.
struct ParameterValues {
    key: Key,
    buffer: [u8; VALUE_BUFFER_BYTES],
}

impl ValueSource for ParameterValues {
    fn read(&mut self, name: &'static str) -> Lookup<'_> {
        let mut units = [0u16; MAX_NAME_UNITS];
        let Some(name) = unicode_string(name, &mut units) else {
            return Lookup::Failed { status: STATUS_INVALID_PARAMETER };
        };
        let capacity = ULONG::try_from(self.buffer.len()).unwrap_or(0);
        let mut length: ULONG = 0;
        let mut value_type: ULONG = 0;
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

/// Reads the configuration from `Parameters`, logging every ignored value. Returns it with the
/// number of ignored values. A `Parameters` key that cannot be opened leaves every default in
/// place (logged, counted as one issue). `PASSIVE_LEVEL`. Not inlined: its 2 KB value buffer
/// and the pattern parser's scratch space then leave the stack before `Pep::new` runs.
#[inline(never)]
pub fn read_configuration(driver: WDFDRIVER) -> (Config, u32) {
    let mut issues = 0u32;
    let key = match Key::open_parameters(driver, KEY_READ) {
        Ok(key) => key,
        Err(status) => {
            log::error(format_args!(
                "cannot open the Parameters key ({status:#010X}): using the defaults"
            ));
            return (Config::new(), 1);
        }
    };
    let mut values = ParameterValues { key, buffer: [0; VALUE_BUFFER_BYTES] };
    let config = config_values::read_config(&mut values, |note| {
        issues = issues.saturating_add(1);
        log::error(format_args!("Parameters\\{note}"));
    });
    (config, issues)
}

/// The volatile `Parameters\State` key, written once per boot for the validation scripts.
pub struct StateKey {
    key: Key,
    failures: u32,
}

impl StateKey {
    /// Creates (or opens) `Parameters\State` as a volatile key. `PASSIVE_LEVEL`.
    ///
    /// # Errors
    /// The `NTSTATUS` of the failed open or create.
    pub fn create(driver: WDFDRIVER) -> Result<Self, NTSTATUS> {
        let parameters = Key::open_parameters(driver, KEY_WRITE)?;
        let key =
            parameters.create_subkey(config_values::state::KEY, KEY_WRITE, REG_OPTION_VOLATILE)?;
        Ok(Self { key, failures: 0 })
    }

    /// Writes `REG_DWORD` value `name`.
    pub fn dword(&mut self, name: &str, value: u32) {
        let mut units = [0u16; MAX_NAME_UNITS];
        let status = unicode_string(name, &mut units).map_or(STATUS_INVALID_PARAMETER, |name| {
            // SAFETY: PASSIVE_LEVEL; the key is open for writing; `name` points into `units`,
            // alive for the call.
            unsafe {
                call_unsafe_wdf_function_binding!(
                    WdfRegistryAssignULong,
                    self.key.0,
                    &raw const name,
                    value,
                )
            }
        });
        self.record(status);
    }

    /// Writes `REG_SZ` value `name` (the text and its NUL terminator).
    pub fn string(&mut self, name: &str, text: &str) {
        let mut units = [0u16; MAX_NAME_UNITS];
        let mut data = [0u8; TEXT_BYTES];
        let status = match (
            unicode_string(name, &mut units),
            config_values::encode_reg_sz(text, &mut data)
                .and_then(|bytes| ULONG::try_from(bytes).ok()),
        ) {
            (Some(name), Some(length)) => {
                // SAFETY: PASSIVE_LEVEL; the key is open for writing; `name` points into
                // `units` and the data's `length` bytes into `data`, both alive for the call
                // (WDF only reads the data, although the prototype says PVOID).
                unsafe {
                    call_unsafe_wdf_function_binding!(
                        WdfRegistryAssignValue,
                        self.key.0,
                        &raw const name,
                        REG_SZ,
                        length,
                        data.as_mut_ptr().cast(),
                    )
                }
            }
            _ => STATUS_INVALID_PARAMETER,
        };
        self.record(status);
    }

    const fn record(&mut self, status: NTSTATUS) {
        if status != STATUS_SUCCESS {
            self.failures = self.failures.saturating_add(1);
        }
    }

    /// How many writes failed.
    pub const fn failures(&self) -> u32 {
        self.failures
    }
}
