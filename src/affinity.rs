//! Running code on a chosen processor (`KeSetSystemGroupAffinityThread`). `PASSIVE_LEVEL`.

use wdk_sys::ntddk::{
    KeGetCurrentProcessorNumberEx, KeGetProcessorNumberFromIndex,
    KeRevertToUserGroupAffinityThread, KeSetSystemGroupAffinityThread,
};
use wdk_sys::{GROUP_AFFINITY, KAFFINITY, NT_SUCCESS, PROCESSOR_NUMBER};

/// The group and number of the processor running the caller. Any IRQL.
pub fn current() -> PROCESSOR_NUMBER {
    let mut number = PROCESSOR_NUMBER::default();
    // SAFETY: callable at any IRQL; `number` is a valid PROCESSOR_NUMBER to write (the returned
    // index is not needed).
    unsafe { KeGetCurrentProcessorNumberEx(&raw mut number) };
    number
}

/// The group and number of the processor with system-wide index `index`, if it exists.
/// `<= DISPATCH_LEVEL`.
pub fn number_of(index: u32) -> Option<PROCESSOR_NUMBER> {
    let mut number = PROCESSOR_NUMBER::default();
    // SAFETY: callable at <= DISPATCH_LEVEL; `number` is a valid PROCESSOR_NUMBER to write.
    let status = unsafe { KeGetProcessorNumberFromIndex(index, &raw mut number) };
    NT_SUCCESS(status).then_some(number)
}

/// Runs `f` with the thread's affinity set to processor `number` only, then restores the
/// previous affinity. `PASSIVE_LEVEL` (`KeSetSystemGroupAffinityThread` requires
/// `<= APC_LEVEL`); `number` must name an active processor.
pub fn run_on<R>(number: PROCESSOR_NUMBER, f: impl FnOnce() -> R) -> R {
    let one: KAFFINITY = 1;
    let mut affinity = GROUP_AFFINITY {
        Mask: one.checked_shl(u32::from(number.Number)).unwrap_or(one),
        Group: number.Group,
        ..GROUP_AFFINITY::default()
    };
    let mut previous = GROUP_AFFINITY::default();
    // SAFETY: PASSIVE_LEVEL; `affinity` names exactly one active processor (the caller's
    // contract); `previous` is a valid GROUP_AFFINITY to write. The thread then runs only there.
    unsafe { KeSetSystemGroupAffinityThread(&raw mut affinity, &raw mut previous) };
    let result = f();
    // SAFETY: PASSIVE_LEVEL; `previous` is what KeSetSystemGroupAffinityThread saved for this
    // thread just above, restored once.
    unsafe { KeRevertToUserGroupAffinityThread(&raw mut previous) };
    result
}
