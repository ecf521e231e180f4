//! Scenario files: the simulated machine, the emulated OS's timing, the PEP's configuration,
//! the load over time and the events to inject, read from TOML and validated.
//!
//! The schema (unknown keys are errors; times are integer milliseconds from the moment the
//! runtime starts, after every processor was started):
//!
//! ```toml
//! name = "turbo-burst"                 # required
//! description = "…"                    # optional
//! [platform]
//! processors = 8                       # required, 1..=2048, 64 per processor group
//! cpu = "intel-hwp"                    # intel-hwp (default) | amd-cppc | intel-legacy
//! counter_source = "aperf-mperf"       # aperf-mperf (default) | none | aperf-mperf-zeros
//!                                      # | aperf-mperf-faulting | fixed-pmc (Intel only:
//!                                      # no APERF/MPERF; CPUID.0AH announces PMU version 4,
//!                                      # 8 general and 3 fixed counters)
//! pmu = true                           # Intel: CPUID.0AH announces the architectural PMU
//!                                      # (default on Intel unless counter_source = none;
//!                                      # false: a hypervisor hides it)
//! pmc_width = 48                       # with the PMU: fixed-counter width, 32..=64
//! pmu_busy = false                     # with the PMU: another owner holds it, so
//!                                      # HalAllocateHardwareCounters refuses the reservation
//! nominal_mhz = 2000                   # required: MPERF's rate in C0 (Intel: a multiple of 100)
//! hypervisor = false                   # CPUID.1:ECX[31]
//! hwp_enabled = true                   # intel-hwp: IA32_PM_ENABLE bit 0
//! device_id_style = "sb-cpu"           # sb-cpu | pr-cpu (≤ 16) | sb-pr (≤ 256) | sb-p | pr-p
//!                                      # | sb-c | sb-pltf | sb-cpus | sb-sck (\_SB.SCK0.CP00,
//!                                      # ≤ 256 per socket) | sb-sck-c (\_SB.SCK0.C000);
//!                                      # default sb-cpu up to 16 processors, sb-c above
//! sockets = 2                          # socket styles and templates: 1..=16, processors
//!                                      # spread evenly (default: the fewest that fit)
//! device_id_template = "\\_SB.C{index:03X}"  # instead of a style: {index}, {socket},
//!                                      # {socket_index}, each :[0][width](d|x|X)
//! device_ids = ["\\_SB.CPU0", "…"]      # instead of a style: one id per processor
//! other_devices = ["\\_SB.PCI0"]       # replaces the CPU flavour's non-processor devices
//!                                      # (none may match the PEP's processor patterns)
//! [platform.perf]                      # hardware perf levels (HWP_CAPABILITIES, CPPC_CAP1,
//! highest = 40                         # ratios), each 0..=255; default derived from
//! nominal = 20                         # nominal_mhz and the fastest phase
//! lowest_nonlinear = 8
//! lowest = 4
//! [pofx]
//! duration_ms = 1000                   # required
//! sample_interval_ms = 15              # default 15
//! threads = "single"                   # single (default) | per-processor: one OS thread per
//!                                      # processor (at most 64, then each of 64 workers owns
//!                                      # a fixed set) reads concurrently while another thread
//!                                      # registers and unregisters devices
//! nested_notifications = false         # true: wherever interrupts are not masked during a
//!                                      # FEEDBACK_READ, a nested FEEDBACK_READ (same handle,
//!                                      # another processor's handle), QUERY_CAPABILITIES and
//!                                      # PERF_CHECK_COMPLETE arrive on the same processor
//! [config]                             # the PEP's configuration (registry values)
//! feedback_counters = "enabled"        # enabled | disabled
//! counter_source = "auto"              # auto | aperf-mperf | fixed-pmc | prefer-fixed-pmc
//!                                      # | none
//! pmu_reservation = "exclusive-pmu"    # exclusive-pmu | all-counter-indexes (PmuReservation)
//! performance_counter_view = false
//! nominal_mhz = 2000                   # override
//! perf_capabilities = { highest = 40, nominal = 20, lowest_nonlinear = 8, lowest = 4 }
//! device_id_patterns = ["\\_SB.CPU#"]
//! transition_latency_100ns = 0
//! [registry]                           # raw Parameters values (see `kernel`): integer =
//! SkipRegistration = 1                 # REG_DWORD, string = REG_SZ, list = REG_MULTI_SZ,
//!                                      # { type = "REG_…", bytes = […] } = raw
//! [install]                            # the DriverEntry of a fresh install, mid-session:
//! pending = true                       # a volatile Parameters\InstallPending key exists
//! [[fault]]                            # one kernel service fails in DriverEntry (see `kernel`)
//! step = "register-plugin"
//! status = "STATUS_INVALID_PEP_INFO_VERSION"
//! [[phase]]                            # piecewise-constant load
//! start_ms = 0
//! end_ms = 500                         # optional: until the end of the run
//! processors = "all"                   # or a list of indexes
//! frequency_mhz = 3200                 # delivered frequency in C0
//! busy_percent = 100                   # C0 residency, 0..=100
//! [[event]]                            # at most 512 (sleep: at most 64)
//! at_ms = 500
//! kind = "counter-reset"               # counter-reset | counter-near-wrap | msr-fault
//!                                      # | wrong-processor-read | pmu-reprogrammed
//!                                      # | counters-zero | hot-add | hot-remove | sleep
//! processors = [2]                     # or "all" (hot-add, hot-remove: a list; sleep: "all"
//!                                      # or left out)
//! duration_ms = 100                    # msr-fault, counters-zero (default: until the end);
//!                                      # pmu-reprogrammed: how long the counters stay
//!                                      # disabled (default 0);
//!                                      # sleep (required, >= 10): until the resume, at least
//!                                      # one sample interval before the run ends
//! state = "s3"                         # sleep only, required: s3 (PowerSystemSleeping3) | s4
//!                                      # (PowerSystemHibernate)
//! values = [0, 0]                      # pmu-reprogrammed only: written to IA32_FIXED_CTR1/2
//! on_processor = 3                     # wrong-processor-read only (default: the next one)
//! ```
//!
//! Where phases overlap, the one that started last wins (the later one in the file on a tie);
//! a processor no phase covers is idle (busy 0 %) at the nominal frequency. Events take effect
//! after the reads the emulated OS makes at the same instant (1 ns later on the processor's
//! clock).
//!
//! Lifecycle events ([`EventKind`] documents each kind):
//! - `counters-zero`: from `at_ms` on (for `duration_ms`, default: for good) the processors'
//!   counters read 0 (a hypervisor that stops exposing them after initialisation). The reads
//!   stay served and their totals stop growing; the checks expect no counts for that time and
//!   account no true activity for it (nothing can be measured), rather than expecting a PEP
//!   to guess; when the counters come back, that interval may be lost, never be a spike.
//!   Only where the platform has APERF/MPERF.
//! - `hot-add` / `hot-remove`: a processor whose first such event is a `hot-add` is not offered
//!   at boot; they alternate per processor (added only while absent, removed only while
//!   present); some processor is present at every moment; a hot-added processor is read at
//!   least once before it leaves; an explicit `on_processor` must be present when its read
//!   happens (by default the next present processor is used).
//! - `counter-near-wrap`: at most one per processor (its counters start the run just below
//!   the wrap once).
//! - `smi` with `period_ms`: each SMI shorter than its period (`duration_us` <
//!   `period_ms` × 1000).
//! - `sleep`: nothing else may happen while the system sleeps (an event at the sleep's own
//!   `at_ms` must come earlier in the file); a `counter-near-wrap` overflows no later than
//!   the first sleep.

// One-way layers, each file using only those listed before it:
// - `types` (each table's spec types and the schema's limits), `error` ([`ScenarioError`]);
// - `raw` (the file as serde reads it, unknown keys refused; the value checks whose bounds
//   depend on other fields);
// - `presence` (which processors are present when, from the hot-plug events);
// - `kernel` (`[registry]`, `[install]`, `[[fault]]`: the kernel `DriverEntry` meets);
// - `spec` ([`Scenario`], the whole description);
// - `timeline` (the phases expanded per processor; presence and sleeps from the events);
// - `validation` (cross-field checks), `expected` (what a correct PEP does: the oracle's
//   expectations, from the description alone);
// - `parse` (the file read by `raw` to a validated [`Scenario`]; its errors located by line).
// The simulation (`crate::cpu`, `crate::machine`) builds on this module, never the reverse.

mod error;
mod expected;
pub mod kernel;
mod parse;
mod presence;
mod raw;
mod spec;
pub mod timeline;
mod types;
mod validation;

pub use error::ScenarioError;
pub use expected::ExpectedSource;
pub use kernel::{KernelSpec, RegistryValue, ServiceFault};
pub use parse::CONFIG_KEYS;
pub use spec::Scenario;
pub use types::{
    ArmSpec, BARE_METAL_MSR_READ_NS, ConfigSpec, CounterSourceKind, CpuKind, DEFAULT_CNTFRQ_HZ,
    DEFAULT_PMC_WIDTH, DEFAULT_SAMPLE_INTERVAL_MS, DeviceIdStyle, DeviceIds, Event, EventKind,
    HYPERVISOR_MSR_READ_NS, HardwarePerf, INTEL_BUS_MHZ, MAX_DEVICE_ID_UNITS, MAX_DURATION_MS,
    MAX_EVENTS, MAX_FREQUENCY_MHZ, MAX_MSR_READ_NS, MAX_NAME_CHARS, MAX_PMC_WIDTH,
    MAX_PROCESSOR_THREADS, MAX_PROCESSORS, MAX_READS, MAX_SLEEPS, MAX_SMI_US, MAX_SOCKETS,
    MIN_PMC_WIDTH, MIN_SLEEP_MS, PROCESSORS_PER_GROUP, Phase, PlatformSpec, PofxSpec, ProcessorSet,
    Radix, SleepState, TemplateNumber, TemplatePart, ThreadMode, read_count,
};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod schema_tests;

#[cfg(test)]
mod limits_tests;
