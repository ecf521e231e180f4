//! The image backend: the scenarios run against the machine code of the linked driver.
//!
//! The image, `ppm_pep.sys`, is executed by the dev-only runner process
//! (`scripts/image-runner.sh`: Unicorn, GPL-2.0, never inside `ppm-sim`). See
//! `docs/image-backend.md` for the design and the protocol.
//!
//! `ppm-sim` stays the kernel and the machine: `host` ([`ImageHost`]) answers every request
//! the runner makes for the image (a Windows or KMDF call, an `RDMSR`, a touch of a notification's payload) from
//! the same emulated kernel services and simulated processors the engine runs on. The PoFx
//! emulator calls the image through the two callbacks it registered, which here are
//! `callbacks`' [`ImageCallbacks`], a [`ppm_caller::Dispatch`]: each sends the call to the
//! runner.
//!
//! The submodules: `runner` (the process and the line protocol), `affinity` (where a run's two
//! processes run and how they hand over; the shared page a spinning run's two processes wait
//! on is the `ppm-doorbell` crate's), `host` (the requests),
//! `callbacks` (the image's callbacks as the emulator calls them), `measurements` (what the
//! runner measured, judged against the image's static figures), `pe` (the image and the files
//! beside it, checked before the runner starts), `symbols` (Rust symbols made readable for
//! messages), `verifier` (Driver Verifier's rules: what the runner is asked to hold the
//! image to, and the verdict).

use std::path::{Path, PathBuf};

mod affinity;
mod callbacks;
mod host;
mod measurements;
pub mod pe;
mod runner;
mod symbols;
pub mod verifier;

pub(crate) use affinity::Placement;
pub use affinity::{HANDOFF_VARIABLE, Handoff};
pub use callbacks::ImageCallbacks;
pub use host::{ImageHost, KernelKeys, KernelLedger};
pub use measurements::{
    Coverage, EntryNames, ImageReport, NOT_EXECUTED, RunFacts, StackFigure, coverage_check, judge,
};
pub use runner::{Crash, Runner, RunnerError, crash_of, hex, unhex};

/// The PEP a run drives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PepBackend {
    /// The engine, compiled for this host, called directly (the default).
    #[default]
    Engine,
    /// The linked driver image, executed by the runner: the one at this path, or (`None`)
    /// the one `scripts/build-driver-image.sh` builds for the scenario's architecture.
    Image(Option<PathBuf>),
}

impl PepBackend {
    /// The backend's name, as the report prints it.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Engine => "engine",
            Self::Image(_) => "image",
        }
    }
}

/// The repository the tool was built from (the runner and the image live there).
#[must_use]
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(PathBuf::new, Path::to_path_buf)
}

/// Where `scripts/build-driver-image.sh` writes the x64 image.
#[must_use]
pub fn default_image() -> PathBuf {
    repository().join("target/driver-image/x64/ppm_pep.sys")
}

/// Where `scripts/build-driver-image.sh --arch arm64` writes the ARM64 image.
#[must_use]
pub fn default_arm64_image() -> PathBuf {
    repository().join("target/driver-image/arm64/ppm_pep.sys")
}

/// The image a scenario runs on: `explicit`, or the default image of its architecture.
#[must_use]
pub fn image_for(scenario: &crate::scenario::Scenario, explicit: Option<&Path>) -> PathBuf {
    explicit.map_or_else(
        || if scenario.platform.cpu.is_arm64() { default_arm64_image() } else { default_image() },
        Path::to_path_buf,
    )
}

/// The architecture a scenario's processors need of the image (`x64`, `arm64`).
#[must_use]
pub const fn architecture_of(scenario: &crate::scenario::Scenario) -> &'static str {
    if scenario.platform.cpu.is_arm64() { "arm64" } else { "x64" }
}

/// Checks `image` and the files beside it before a run starts.
///
/// So that the runner never starts on unusable input: the image exists and is a whole PE image of `architecture`
/// ([`pe::PeImage`]), and its linker map and `stack.txt` are there and were written for it.
///
/// # Errors
/// One line naming the file and what is wrong with it; for a missing default image, how to
/// build it.
pub fn check_image(image: &Path, architecture: &str) -> Result<(), String> {
    let default = [default_image(), default_arm64_image()].iter().any(|path| path == image);
    if !image.exists() {
        return Err(if default {
            format!(
                "no driver image at {}: build and check both images with `bash \
                 scripts/check-driver-image.sh` (a few minutes the first time), or name one \
                 with --image FILE",
                image.display()
            )
        } else {
            format!("--image {}: no such file", image.display())
        });
    }
    if !image.is_file() {
        return Err(format!("--image {}: not a regular file", image.display()));
    }
    let pe = pe::PeImage::read(image)?;
    if pe.architecture != architecture {
        return Err(format!(
            "{}: an {} image, and the scenario's processors are {architecture}{}",
            image.display(),
            pe.architecture,
            if default { "" } else { " (ARM64 scenarios need the ARM64 image)" }
        ));
    }
    let map = image.with_extension("map");
    let text = std::fs::read_to_string(&map).map_err(|error| {
        format!(
            "{}: the linker map beside the image cannot be read ({error}): the image backend \
             needs the map that `scripts/build-driver-image.sh` writes with it",
            map.display()
        )
    })?;
    pe.check_map(&map, &text)?;
    let stack = image.with_file_name("stack.txt");
    let text = std::fs::read_to_string(&stack).map_err(|error| {
        format!(
            "{}: the stack figures beside the image cannot be read ({error}): image.stack \
             compares with the static figures `bash scripts/check-driver-image.sh` writes",
            stack.display()
        )
    })?;
    pe.check_stack(&stack, &text)
}

/// What the image did in one run, beside the observations every backend has.
#[derive(Clone, Debug, Default)]
pub struct ImageObservation {
    /// The bugcheck that stopped the image, if any.
    pub crash: Option<Crash>,
    /// What the kernel recorded (ETW events, runtime log lines, device state, faults raised).
    pub ledger: KernelLedger,
    /// The runner's `report` at the end of the run.
    pub report: Option<serde_json::Map<String, serde_json::Value>>,
    /// Where the image was mapped.
    pub image_base: u64,
    /// `FxDriverEntry`, `AcceptDeviceNotification`, `AcceptProcessorNotification`.
    pub entries: EntryNames,
    /// Why the run could not go on (the runner failed): the run is unusable.
    pub error: Option<RunnerError>,
}

/// The image's driver load, as the checks and the runtime need it.
///
/// `DriverEntry`, then what the I/O manager and `PnP` do with a driver that loaded
/// (`EvtDriverDeviceAdd` for the device node the INF installs; `DriverUnload` for a driver that
/// loaded without registering, which is unloadable), and whether the callbacks still reach a
/// PEP after a `DriverEntry` that did not register.
pub struct DriverLoad {
    /// `DriverEntry`, as the checks read it.
    pub record: crate::driver_entry::DriverEntryRecord,
    /// The callbacks, when `PoFx` accepted them.
    pub callbacks: Option<std::sync::Arc<ImageCallbacks>>,
    /// What the image did besides.
    pub observation: ImageObservation,
}

/// The registry path the I/O manager passes to `DriverEntry` (the service key).
pub const REGISTRY_PATH: &str = "\\Registry\\Machine\\System\\CurrentControlSet\\Services\\ppm_pep";

/// Narrows `&'k SimKernel<'a>` to `&'k SimKernel<'k>` (`'a: 'k`; the kernel is covariant).
const fn shorten<'k>(
    kernel: &'k crate::driver_entry::SimKernel<'_>,
) -> &'k crate::driver_entry::SimKernel<'k> {
    kernel
}

/// Loads the driver in the image of `runner` over `kernel` (see [`DriverLoad`]).
pub fn load_driver(
    kernel: &crate::driver_entry::SimKernel<'_>,
    runner: &std::sync::Arc<Runner>,
    platform: &crate::platform::SimPlatform,
) -> DriverLoad {
    use std::sync::Arc;

    use ppm_engine::abi::{PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, STATUS_SUCCESS};
    use serde_json::json;

    let mut observation =
        ImageObservation { image_base: runner.image_base, ..ImageObservation::default() };
    observation.entries.entry = runner.entry;
    let before = kernel.pmu_control();
    let host = ImageHost::driver_entry(shorten(kernel));
    let entered = {
        let _setup = crate::platform::DriverSetup::enter();
        let _on = crate::platform::OnProcessor::enter(None, 0);
        runner
            .command(&json!({"op": "driver_entry", "registry_path": REGISTRY_PATH}), &host)
            .and_then(|done| Ok((crash_of(&done)?, done)))
    };
    let (crash, done) = match entered {
        Ok(entered) => entered,
        Err(error) => {
            observation.error = Some(error);
            // The run is unusable (its error ends it with exit code 2); a record all the same.
            let record = kernel.image_record(None, before, host.outstanding());
            return DriverLoad { record, callbacks: None, observation };
        }
    };
    let status = done
        .get("status")
        .and_then(serde_json::Value::as_u64)
        .and_then(|status| u32::try_from(status).ok())
        .map(u32::cast_signed)
        .filter(|_| crash.is_none());
    let mut record = kernel.image_record(status, before, host.outstanding());
    record.image_time_date_stamp = runner.time_date_stamp;
    observation.crash = crash;
    let attempted = host.attempted();
    if let Some((dpm, ppm)) = attempted {
        observation.entries.dpm = Some(dpm);
        observation.entries.ppm = Some(ppm);
    }
    let loaded = observation.crash.is_none() && record.status == STATUS_SUCCESS;
    let mut steps = Vec::new();
    if loaded {
        steps.push(json!({"op": "device_add"}));
        if !record.published {
            steps.push(json!({"op": "unload"}));
        }
    }
    for step in steps {
        let _on = crate::platform::OnProcessor::enter(None, 0);
        match runner.command(&step, &host).and_then(|done| crash_of(&done)) {
            Ok(Some(crash)) => {
                observation.crash.get_or_insert(crash);
            }
            Ok(None) => {}
            Err(error) => observation.error = Some(error),
        }
    }
    observation.ledger = host.ledger();
    let callbacks = attempted
        .map(|addresses| ImageCallbacks::new(Arc::clone(runner), addresses, platform.clone()));
    // A `DriverEntry` that did not register: do the callbacks still reach a PEP?
    if !record.published
        && let Some(image) = &callbacks
    {
        let _on = crate::platform::OnProcessor::enter(None, 0);
        let answered =
            image.callbacks().query_count(PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES).handled();
        record.published = answered;
        if let Some(crash) = image.crash() {
            observation.crash.get_or_insert(crash);
        }
    }
    let callbacks =
        callbacks.filter(|_| host.registered().is_some() && observation.crash.is_none());
    DriverLoad { record, callbacks, observation }
}
