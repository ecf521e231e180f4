//! The kernel services `DriverEntry` needs, as a trait: the driver implements it over
//! `ntoskrnl`, `hal` and KMDF (`src/`), the emulator over its simulated machine (`ppm-sim`).
//!
//! Everything here runs at `PASSIVE_LEVEL`, in `DriverEntry`, on one thread: the trait takes
//! `&self` throughout so that an implementation can log while a registry key is open; it needs
//! no synchronisation beyond what its own state requires.

use core::fmt;
use core::ptr::NonNull;

use crate::Pep;
use crate::abi::{NTSTATUS, PEP_INFORMATION, PHYSICAL_COUNTER_RESOURCE_LIST};
use crate::driver::registry::ValueSource;
use crate::host::PepHost;
use crate::platform::Platform;

/// What a non-paged pool block is for: the log names it, and the emulator's fault injection
/// targets one block by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolBlock {
    /// The processor table (one `ProcessorSlot` per processor the system can ever have).
    ProcessorTable,
    /// The PMU control values found on each processor, kept until the registration is decided.
    SavedPmuControl,
}

impl PoolBlock {
    /// The block's name, as the log and the emulator's `[[fault]]` entries write it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::ProcessorTable => "processor-table",
            Self::SavedPmuControl => "saved-pmu-control",
        }
    }

    /// The block's pool tag (`ExAllocatePool2`'s `Tag`, as pool tools and Driver Verifier show
    /// it: `PpmT`, `PpmS`): one per block, so that a leak names its block.
    #[must_use]
    pub const fn tag(self) -> u32 {
        u32::from_le_bytes(match self {
            Self::ProcessorTable => *b"PpmT",
            Self::SavedPmuControl => *b"PpmS",
        })
    }

    /// The block a pool tag names, if any.
    #[must_use]
    pub const fn from_tag(tag: u32) -> Option<Self> {
        if tag == Self::ProcessorTable.tag() {
            Some(Self::ProcessorTable)
        } else if tag == Self::SavedPmuControl.tag() {
            Some(Self::SavedPmuControl)
        } else {
            None
        }
    }
}

/// The severity of a log line (`DPFLTR_INFO_LEVEL` / `DPFLTR_ERROR_LEVEL` in the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    /// What happened, for the debugger.
    Info,
    /// Something failed or was ignored.
    Error,
}

/// An open `Boot` key: every write is best effort and returns its `NTSTATUS`. Closed on drop.
pub trait StateKey {
    /// Writes `REG_DWORD` value `name`.
    fn dword(&mut self, name: &str, value: u32) -> NTSTATUS;
    /// Writes `REG_SZ` value `name` (the text and its NUL terminator).
    fn string(&mut self, name: &str, text: &str) -> NTSTATUS;
}

/// The kernel services of `DriverEntry`. `PASSIVE_LEVEL` for every method.
pub trait KernelServices {
    /// The engine's platform on this kernel.
    type Platform: Platform;
    /// Where the callbacks find the instance [`Self::publish`] publishes.
    type Host: PepHost<Platform = Self::Platform>;
    /// The open `Parameters` key: raw values (registry type and bytes).
    type Parameters<'a>: ValueSource
    where
        Self: 'a;
    /// The open `Boot` key.
    type State<'a>: StateKey
    where
        Self: 'a;
    /// The HAL's handle for a PMU reservation.
    type CounterReservation;

    /// The platform the PEP is built over.
    fn platform(&self) -> Self::Platform;

    /// The processor architecture the driver was built for, as `State\Architecture` names it
    /// (`x64`, `arm64`).
    fn architecture(&self) -> &'static str;

    /// The `TimeDateStamp` of the running image's PE header (its COFF file header): which
    /// build of the driver the kernel loaded, as `State\ImageTimeDateStamp` records it (a
    /// driver-store copy keeps the package's file times, so only the header tells a stale
    /// image from the package's). 0 when the header cannot be read ([`time_date_stamp_of`]).
    fn image_time_date_stamp(&self) -> u32;
    /// Opens the service's `Parameters` key for reading.
    ///
    /// # Errors
    /// The `NTSTATUS` of the failed open.
    fn open_parameters(&self) -> Result<Self::Parameters<'_>, NTSTATUS>;

    /// Whether a volatile `Parameters\InstallPending` key exists: the installer created it
    /// just before installing the package, so this `DriverEntry` runs in the session of the
    /// install, not at boot.
    fn install_pending(&self) -> bool;

    /// Creates (or opens) the `Boot` key for writing, emptied of a previous boot's values.
    ///
    /// # Errors
    /// The `NTSTATUS` of the failed open or create.
    fn create_state_key(&self) -> Result<Self::State<'_>, NTSTATUS>;

    /// `KeQueryMaximumProcessorCountEx(ALL_PROCESSOR_GROUPS)`: every processor the system can
    /// ever have, hot-added ones included (0 when unknown).
    fn maximum_processor_count(&self) -> u32;

    /// `KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS)`: the processors active now.
    fn active_processor_count(&self) -> u32;

    /// Runs `f` on active processor `index` (system-wide index, the thread's affinity set to it
    /// and restored afterwards); `None` when there is no such processor.
    fn run_on_processor<R>(&self, index: u32, f: impl FnOnce() -> R) -> Option<R>;

    /// Runs `f` with the thread's affinity set to the processor it is running on, restored
    /// afterwards (the engine's calibration needs two reads from one processor).
    fn run_on_current_processor<R>(&self, f: impl FnOnce() -> R) -> R;

    /// `ExAllocatePool2(POOL_FLAG_NON_PAGED, bytes, tag)`: a zero-filled block aligned to at
    /// least 16 bytes, or `None` when the pool is exhausted.
    fn allocate_non_paged(&self, block: PoolBlock, bytes: usize) -> Option<NonNull<u8>>;

    /// `ExFreePool`.
    ///
    /// # Safety
    /// `allocation` came from [`Self::allocate_non_paged`] for `block`, is freed once, and
    /// nothing uses it afterwards.
    unsafe fn free_non_paged(&self, block: PoolBlock, allocation: NonNull<u8>);

    /// `HalAllocateHardwareCounters(NULL, 0, list, &handle)` for every processor of every group:
    /// `list` is `None` for exclusive ownership of the PMU.
    ///
    /// # Errors
    /// The HAL's status: `STATUS_INSUFFICIENT_RESOURCES` while another owner holds the PMU.
    fn allocate_hardware_counters(
        &self,
        list: Option<&mut PHYSICAL_COUNTER_RESOURCE_LIST>,
    ) -> Result<Self::CounterReservation, NTSTATUS>;

    /// `HalFreeHardwareCounters`.
    fn free_hardware_counters(&self, reservation: Self::CounterReservation) -> NTSTATUS;

    /// Tells the platform whether the fixed counters are reserved and enabled on every active
    /// processor (its `fixed_counters_reserved`).
    fn set_fixed_counters_reserved(&self, reserved: bool);

    /// Moves the PEP into the storage the callbacks find it in and returns it.
    ///
    /// # Safety
    /// Called at most once per `DriverEntry`, before [`Self::publish`].
    unsafe fn install(&self, pep: Pep<Self::Platform>) -> &'static Pep<Self::Platform>;

    /// Makes `pep` the instance the callbacks serve (a release store).
    fn publish(&self, pep: &'static Pep<Self::Platform>);

    /// Withdraws the instance after a failed registration: the callbacks find none again.
    fn withdraw(&self);

    /// `PoFxRegisterPluginEx(information, 0, &kernel_information)`.
    ///
    /// # Safety
    /// Once per boot; the PEP the callbacks serve is published, and stays for good if the
    /// registration succeeds.
    unsafe fn register_plugin(&self, information: &PEP_INFORMATION) -> NTSTATUS;

    /// One line for the debugger (`DbgPrintEx`). Never called on a notification path.
    fn log(&self, level: LogLevel, message: fmt::Arguments<'_>);
}

/// The bytes of a PE image's start that [`time_date_stamp_of`] reads at most: 512, the smallest
/// `FileAlignment` the PE format allows, so every image's headers span at least this much.
pub const PE_HEADER_BYTES: usize = 512;

/// The `TimeDateStamp` of the PE image whose first bytes are `header`.
///
/// `header` is the image's start as mapped: the DOS header with `e_lfanew` at 0x3C, then
/// `PE\0\0` and the COFF file header, whose `TimeDateStamp` is at byte 8 (Microsoft's "PE
/// Format"); `None` when `header` is not a PE image's start or too short. Any IRQL: it only reads `header`.
#[must_use]
pub fn time_date_stamp_of(header: &[u8]) -> Option<u32> {
    let field =
        |at: usize| -> Option<[u8; 4]> { header.get(at..at.checked_add(4)?)?.try_into().ok() };
    if header.get(..2)? != b"MZ" {
        return None;
    }
    let pe = usize::try_from(u32::from_le_bytes(field(0x3C)?)).ok()?;
    if field(pe)? != *b"PE\0\0" {
        return None;
    }
    field(pe.checked_add(8)?).map(u32::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::time_date_stamp_of;

    #[test]
    fn the_stamp_is_read_from_the_coff_header_and_only_from_a_pe_image() {
        let mut header = [0u8; 0x100];
        header[..2].copy_from_slice(b"MZ");
        header[0x3C..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        header[0x80..0x84].copy_from_slice(b"PE\0\0");
        header[0x88..0x8C].copy_from_slice(&0x6B08_73C3u32.to_le_bytes());
        assert_eq!(time_date_stamp_of(&header), Some(0x6B08_73C3));
        // Cut inside the stamp, no PE signature, no MZ, an e_lfanew past the end.
        assert_eq!(time_date_stamp_of(&header[..0x8B]), None);
        let mut other = header;
        other[0x80] = b'N';
        assert_eq!(time_date_stamp_of(&other), None);
        other = header;
        other[0] = 0;
        assert_eq!(time_date_stamp_of(&other), None);
        other = header;
        other[0x3C..0x40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(time_date_stamp_of(&other), None);
    }
}
