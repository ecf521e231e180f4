//! Debugger output through `DbgPrintEx`, component `DPFLTR_IHVDRIVER_ID`.
//!
//! Used only from `DriverEntry` (`PASSIVE_LEVEL`), never on a notification path. Errors use
//! `DPFLTR_ERROR_LEVEL`, which the kernel always shows; information uses `DPFLTR_INFO_LEVEL`,
//! shown once the `IHVDRIVER` component's filter allows it (`ed nt!Kd_IHVDRIVER_Mask 0xF` in
//! the debugger, or the `Debug Print Filter` registry key). Each line is formatted into a
//! 512-byte stack buffer (no allocation) and truncated if longer.

use core::fmt::{self, Write};

use ppm_engine::driver::line::Line;

use ppm_engine::driver::LogLevel;
use wdk_sys::_DPFLTR_TYPE::DPFLTR_IHVDRIVER_ID;
use wdk_sys::ntddk::DbgPrintEx;
use wdk_sys::{DPFLTR_ERROR_LEVEL, DPFLTR_INFO_LEVEL, ULONG};

/// The largest line `DbgPrintEx` takes in one call, in bytes (with the NUL).
const LINE_BYTES: usize = 512;

/// Prints one line at `level` (`DPFLTR_ERROR_LEVEL` or `DPFLTR_INFO_LEVEL`). `PASSIVE_LEVEL`.
pub fn print(level: LogLevel, args: fmt::Arguments<'_>) {
    let level = match level {
        LogLevel::Error => DPFLTR_ERROR_LEVEL,
        LogLevel::Info => DPFLTR_INFO_LEVEL,
    };
    let mut line = Line::<LINE_BYTES>::new();
    // An overlong line is cut at the buffer's end: the buffer keeps what fits, NUL-terminated.
    let _ = writeln!(line, "ppm-pep: {args}");
    let component = ULONG::try_from(DPFLTR_IHVDRIVER_ID).unwrap_or(0);
    // SAFETY: IRQL <= DIRQL (callers are at PASSIVE_LEVEL); the format is the literal "%s" and
    // its one argument is a NUL-terminated string that outlives the call, so DbgPrintEx reads
    // no other argument and interprets nothing in the text.
    let _ = unsafe { DbgPrintEx(component, level, c"%s".as_ptr(), line.as_c_ptr()) };
}
