//! The TOML reader: each table of a scenario file read into its spec type, then the
//! cross-field checks of [`super::validation`].

use ppm_engine::config::{
    COUNTER_SOURCE_CHOICES, FEEDBACK_COUNTER_CHOICES, MAX_NOMINAL_MHZ, PMU_RESERVATION_CHOICES,
};
use ppm_engine::device_id::{MAX_DEVICE_ID_PATTERNS, MAX_PATTERN_UNITS};
use ppm_engine::driver::registry::{MAX_PERFORMANCE_LEVEL, MAX_TRANSITION_LATENCY_100NS};
use ppm_engine::perf::PerfCapabilities;
use toml::{Table, Value};

use super::boot;
use super::error::{ScenarioError, shown};
use super::presence::Presence;
use super::reader::{Reader, describe, quoted_list};
use super::spec::Scenario;
use super::types::{
    ArmSpec, BARE_METAL_MSR_READ_NS, ConfigSpec, CounterSourceKind, CpuKind, DEFAULT_CNTFRQ_HZ,
    DEFAULT_PMC_WIDTH, DEFAULT_SAMPLE_INTERVAL_MS, DeviceIdStyle, DeviceIds, Event, EventKind,
    HYPERVISOR_MSR_READ_NS, HardwarePerf, INTEL_BUS_MHZ, MAX_DEVICE_ID_UNITS, MAX_DURATION_MS,
    MAX_EVENTS, MAX_FREQUENCY_MHZ, MAX_MSR_READ_NS, MAX_NAME_CHARS, MAX_PMC_WIDTH, MAX_PROCESSORS,
    MAX_READS, MAX_SLEEPS, MAX_SMI_US, MAX_SOCKETS, MIN_PMC_WIDTH, MIN_SLEEP_MS, Phase,
    PlatformSpec, PofxSpec, ProcessorSet, Radix, SleepState, TemplateNumber, TemplatePart,
    ThreadMode,
};
use super::validation::check_phases_in_perf_range;

impl Scenario {
    /// Reads and validates a scenario.
    ///
    /// # Errors
    /// [`ScenarioError`] naming the field and what was expected, for TOML syntax errors, unknown
    /// keys, wrong types, values out of range and inconsistent settings.
    pub fn from_toml_str(text: &str) -> Result<Self, ScenarioError> {
        let table: Table =
            toml::from_str(text).map_err(|error| ScenarioError::syntax(text, &error))?;
        Self::from_table(&table)
    }

    /// Reads and validates a scenario from a parsed TOML table.
    ///
    /// # Errors
    /// As [`Self::from_toml_str`].
    pub fn from_table(table: &Table) -> Result<Self, ScenarioError> {
        let top = Reader::new(
            String::new(),
            table,
            &[
                "name",
                "description",
                "platform",
                "pofx",
                "config",
                "registry",
                "fault",
                "install",
                "phase",
                "event",
            ],
        )?;
        let name = top.required_string("name")?;
        // Characters, not UTF-8 bytes: 40 "Ä" are 40 characters.
        if name.is_empty()
            || name.chars().count() > MAX_NAME_CHARS
            || name.chars().any(char::is_control)
        {
            return Err(
                top.error(
                    "name",
                    &format!(
                        "expected a non-empty name of at most {MAX_NAME_CHARS} printable characters, found {} characters",
                        name.chars().count()
                    ),
                )
            );
        }
        let description = top.optional_string("description")?.map(str::to_owned);

        let (mut platform, explicit_perf) = read_platform(top.required_table("platform")?)?;
        let processors = platform.processors;
        let pofx = read_pofx(top.required_table("pofx")?, processors)?;
        let duration_ms = pofx.duration_ms;

        let mut phases = Vec::new();
        for (index, phase_table) in top.array_of_tables("phase")?.into_iter().enumerate() {
            phases.push(read_phase(
                &format!("phase[{index}]"),
                phase_table,
                processors,
                duration_ms,
            )?);
        }
        let events = read_events(&top, processors, pofx)?;

        let nominal_mhz = platform.nominal_mhz;
        let fastest = phases
            .iter()
            .map(|phase| phase.frequency_mhz)
            .max()
            .unwrap_or(nominal_mhz)
            .max(nominal_mhz);
        let slowest = phases
            .iter()
            .map(|phase| phase.frequency_mhz)
            .min()
            .unwrap_or(nominal_mhz)
            .min(nominal_mhz);
        platform.perf = match explicit_perf {
            Some(perf) => {
                check_phases_in_perf_range(&phases, perf, platform.cpu, nominal_mhz)?;
                perf
            }
            None => default_hardware_perf(platform.cpu, nominal_mhz, fastest, slowest),
        };

        let config_table = top.optional_table("config")?;
        let config = match config_table {
            Some(config_table) => read_config(config_table)?,
            None => ConfigSpec::default(),
        };
        let boot = boot::read_boot(
            top.optional_table("registry")?,
            &top.array_of_tables("fault")?,
            &config,
            config_table,
            processors,
        )?;
        let mut boot = boot;
        if let Some(install) = top.optional_table("install")? {
            let install = Reader::new("install".to_owned(), install, &["pending"])?;
            boot.install_pending = install.bool("pending", false)?;
        }
        // What the driver will read: `[config]` plus the raw values it accepts.
        let config = boot::effective_config(&boot);

        let presence = Presence::new(processors, &events);
        let scenario = Self {
            name: name.to_owned(),
            description,
            platform,
            pofx,
            config,
            phases,
            events,
            boot,
            presence,
        };
        scenario.check()?;
        Ok(scenario)
    }
}

/// The `[[event]]`s: at most [`MAX_EVENTS`], of which at most [`MAX_SLEEPS`] sleeps.
fn read_events(
    top: &Reader<'_>,
    processors: u32,
    pofx: PofxSpec,
) -> Result<Vec<Event>, ScenarioError> {
    let event_tables = top.array_of_tables("event")?;
    if event_tables.len() > MAX_EVENTS {
        return Err(top.error(
            "event",
            &format!("expected at most {MAX_EVENTS} [[event]]s, found {}", event_tables.len()),
        ));
    }
    let mut events = Vec::new();
    for (index, event_table) in event_tables.into_iter().enumerate() {
        events.push(read_event(&format!("event[{index}]"), event_table, processors, pofx)?);
    }
    let sleeps = events.iter().filter(|event| matches!(event.kind, EventKind::Sleep { .. }));
    if let Some((number, _)) = events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event.kind, EventKind::Sleep { .. }))
        .nth(MAX_SLEEPS)
    {
        return Err(ScenarioError::field(
            format!("event[{number}].kind"),
            format!("expected at most {MAX_SLEEPS} sleep events, found {}", sleeps.count()),
        ));
    }
    Ok(events)
}

/// The keys of `[platform]`.
const PLATFORM_KEYS: [&str; 18] = [
    "processors",
    "cpu",
    "counter_source",
    "nominal_mhz",
    "hypervisor",
    "hwp_enabled",
    "device_id_style",
    "device_id_template",
    "device_ids",
    "sockets",
    "other_devices",
    "perf",
    "pmu",
    "pmc_width",
    "pmu_busy",
    "msr_read_ns",
    "cntfrq_hz",
    "amu_enabled",
];

/// `[platform]`; the perf levels are `None` unless `[platform.perf]` gives them (the default
/// depends on the phases).
fn read_platform(table: &Table) -> Result<(PlatformSpec, Option<HardwarePerf>), ScenarioError> {
    let platform = Reader::new("platform".to_owned(), table, &PLATFORM_KEYS)?;
    let processors = platform.required_u32("processors", 1..=MAX_PROCESSORS)?;
    let cpu = platform.choice(
        "cpu",
        &[
            ("intel-hwp", CpuKind::IntelHwp),
            ("amd-cppc", CpuKind::AmdCppc),
            ("intel-legacy", CpuKind::IntelLegacy),
            ("arm64", CpuKind::Arm64),
        ],
        CpuKind::IntelHwp,
    )?;
    let counter_source = platform.choice(
        "counter_source",
        &[
            ("aperf-mperf", CounterSourceKind::AperfMperf),
            ("none", CounterSourceKind::None),
            ("aperf-mperf-zeros", CounterSourceKind::AperfMperfZeros),
            ("aperf-mperf-faulting", CounterSourceKind::AperfMperfFaulting),
            ("fixed-pmc", CounterSourceKind::FixedPmc),
            ("amu", CounterSourceKind::Amu),
        ],
        if cpu.is_arm64() { CounterSourceKind::Amu } else { CounterSourceKind::AperfMperf },
    )?;
    let arm = read_arm_fields(&platform, cpu, counter_source)?;
    let (pmc_width, pmu_busy) = read_pmu_fields(&platform, cpu, counter_source)?;
    let nominal_limit = if cpu.is_intel() { 255 * INTEL_BUS_MHZ } else { MAX_FREQUENCY_MHZ };
    let nominal_mhz = platform.required_u32("nominal_mhz", 1..=nominal_limit)?;
    if cpu.is_intel() && nominal_mhz % INTEL_BUS_MHZ != 0 {
        return Err(platform.error(
            "nominal_mhz",
            &format!(
                "expected a multiple of {INTEL_BUS_MHZ} on an Intel CPU (ratio × 100 MHz bus clock), found {nominal_mhz}"
            ),
        ));
    }
    let hypervisor = platform.bool("hypervisor", false)?;
    if hypervisor && cpu.is_arm64() {
        return Err(platform.error(
            "hypervisor",
            "is CPUID.1:ECX[31], x86 only (an ARM64 guest differs only in what its ID registers announce)",
        ));
    }
    let hwp_enabled = platform.bool("hwp_enabled", true)?;
    if platform.get("hwp_enabled").is_some() && cpu != CpuKind::IntelHwp {
        return Err(platform.error("hwp_enabled", "is only valid with cpu = \"intel-hwp\""));
    }
    let device_ids = read_device_ids(&platform, processors)?;
    let other_devices = platform.optional_string_list("other_devices", 0..=256, 1..=256)?;
    let perf = platform.optional_table("perf")?.map(read_hardware_perf).transpose()?;
    let msr_read_ns = read_msr_read_ns(&platform)?;
    let spec = PlatformSpec {
        processors,
        cpu,
        counter_source,
        nominal_mhz,
        hypervisor,
        hwp_enabled,
        device_ids,
        other_devices,
        perf: perf
            .unwrap_or_else(|| default_hardware_perf(cpu, nominal_mhz, nominal_mhz, nominal_mhz)),
        pmc_width,
        pmu_busy,
        msr_read_ns,
        arm,
    };
    Ok((spec, perf))
}

/// The processor device ids: `device_id_style` (default `sb-cpu` up to 16 processors, `sb-c`
/// above), `device_id_template` or `device_ids` — one of them — and `sockets` for the
/// socket styles and templates.
fn read_device_ids(platform: &Reader<'_>, processors: u32) -> Result<DeviceIds, ScenarioError> {
    let given: Vec<&str> = ["device_id_style", "device_id_template", "device_ids"]
        .into_iter()
        .filter(|key| platform.get(key).is_some())
        .collect();
    if let [first, second, ..] = given.as_slice() {
        return Err(platform
            .error(second, &format!("give the processors' ids one way: {first} is set already")));
    }
    let sockets = platform.optional_u32("sockets", 1..=MAX_SOCKETS.min(processors))?;
    if let Some(ids) = platform.optional_string_list(
        "device_ids",
        processors..=processors,
        1..=MAX_DEVICE_ID_UNITS,
    )? {
        if sockets.is_some() {
            return Err(platform.error(
                "sockets",
                "is only valid with a socket style (sb-sck, sb-sck-c) or a device_id_template",
            ));
        }
        return Ok(DeviceIds::List(ids));
    }
    let per_socket = |sockets: u32| processors.div_ceil(sockets.max(1));
    if let Some(template) = platform.optional_string("device_id_template")? {
        let parts = parse_template(template)
            .map_err(|problem| platform.error("device_id_template", &problem))?;
        return Ok(DeviceIds::Template { parts, per_socket: per_socket(sockets.unwrap_or(1)) });
    }
    // Without a style: `\_SB.CPU#` where 16 processors or fewer can be so named, else AMD's
    // `\_SB.C###`, which names every supported count.
    let default_style = if processors <= DeviceIdStyle::SbCpu.capacity() {
        DeviceIdStyle::SbCpu
    } else {
        DeviceIdStyle::SbC
    };
    let style = platform.choice("device_id_style", &DeviceIdStyle::CHOICES, default_style)?;
    if !style.per_socket() {
        if sockets.is_some() {
            return Err(platform.error(
                "sockets",
                &format!(
                    "is only valid with a socket style (sb-sck, sb-sck-c) or a device_id_template, found style \"{}\"",
                    style.name()
                ),
            ));
        }
        if processors > style.capacity() {
            return Err(platform.error(
                "device_id_style",
                &format!(
                    "style \"{}\" names at most {} processors, but platform.processors is {processors}",
                    style.name(),
                    style.capacity()
                ),
            ));
        }
        return Ok(DeviceIds::Style { style, per_socket: processors });
    }
    // Socket styles: by default the fewest sockets that can name every processor.
    let capacity = style.capacity();
    let sockets = sockets.unwrap_or_else(|| processors.div_ceil(capacity).max(1));
    let per_socket = per_socket(sockets);
    if per_socket > capacity || processors.div_ceil(per_socket) > MAX_SOCKETS {
        let fewest = processors.div_ceil(capacity);
        return Err(platform.error(
            "sockets",
            &format!(
                "style \"{}\" names at most {capacity} processors per socket and {MAX_SOCKETS} sockets: {processors} processors in {sockets} socket{} are {per_socket} per socket; expected sockets >= {fewest}",
                style.name(),
                if sockets == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(DeviceIds::Style { style, per_socket })
}

#[allow(clippy::literal_string_with_formatting_args)] // The placeholders a user writes.
/// A `device_id_template`: text with `{index}`, `{socket}` or `{socket_index}`, each
/// optionally `:[0][width](d|x|X)` (decimal by default; `x`/`X` hexadecimal, upper case), and
/// `{{`/`}}` for a literal brace.
fn parse_template(template: &str) -> Result<Vec<TemplatePart>, String> {
    let syntax = "expected text with {index}, {socket} or {socket_index}, each optionally :[0][width](d|x|X) (e.g. \"\\\\_SB.C{index:03X}\"), {{ and }} for braces";
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '}' => return Err(format!("{syntax}; found a lone }}")),
            '{' => {
                let mut field = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) if field.len() < 32 => field.push(c),
                        _ => return Err(format!("{syntax}; found an unclosed {{")),
                    }
                }
                let (name, spec) = field.split_once(':').unwrap_or((field.as_str(), ""));
                let what = match name {
                    "index" => TemplateNumber::Index,
                    "socket" => TemplateNumber::Socket,
                    "socket_index" => TemplateNumber::SocketIndex,
                    _ => return Err(format!("{syntax}; found {{{}}}", shown(&field))),
                };
                let (digits, radix) = match spec.chars().last() {
                    Some('x') => (&spec[..spec.len() - 1], Radix::LowerHex),
                    Some('X') => (&spec[..spec.len() - 1], Radix::UpperHex),
                    Some('d') => (&spec[..spec.len() - 1], Radix::Decimal),
                    _ => (spec, Radix::Decimal),
                };
                let width = if digits.is_empty() {
                    0
                } else {
                    digits
                        .parse::<usize>()
                        .ok()
                        .filter(|width| *width <= 8 && digits.starts_with('0'))
                        .ok_or_else(|| format!("{syntax}; found {{{}}}", shown(&field)))?
                };
                if !text.is_empty() {
                    parts.push(TemplatePart::Text(std::mem::take(&mut text)));
                }
                parts.push(TemplatePart::Number { what, width, radix });
            }
            c => text.push(c),
        }
    }
    if !text.is_empty() {
        parts.push(TemplatePart::Text(text));
    }
    if !parts.iter().any(|part| {
        matches!(
            part,
            TemplatePart::Number { what: TemplateNumber::Index | TemplateNumber::SocketIndex, .. }
        )
    }) {
        return Err(format!(
            "{syntax}; found no {{index}} or {{socket_index}}, so every processor would get the same id"
        ));
    }
    Ok(parts)
}

/// `msr_read_ns`: `"bare-metal"` (the default), `"hypervisor"` or a number of nanoseconds.
fn read_msr_read_ns(platform: &Reader<'_>) -> Result<u32, ScenarioError> {
    match platform.get("msr_read_ns") {
        Some(Value::String(preset)) if preset == "bare-metal" => Ok(BARE_METAL_MSR_READ_NS),
        Some(Value::String(preset)) if preset == "hypervisor" => Ok(HYPERVISOR_MSR_READ_NS),
        Some(Value::Integer(_)) => platform.required_u32("msr_read_ns", 0..=MAX_MSR_READ_NS),
        Some(other) => Err(platform.error(
            "msr_read_ns",
            &format!(
                "expected \"bare-metal\", \"hypervisor\" or an integer in 0..={MAX_MSR_READ_NS} (ns), found {}",
                describe(other)
            ),
        )),
        None => Ok(BARE_METAL_MSR_READ_NS),
    }
}

/// `cntfrq_hz` and `amu_enabled` (ARM64 only); an ARM64 CPU has the AMU or nothing, an x86
/// one never the AMU.
fn read_arm_fields(
    platform: &Reader<'_>,
    cpu: CpuKind,
    counter_source: CounterSourceKind,
) -> Result<Option<ArmSpec>, ScenarioError> {
    if !cpu.is_arm64() {
        if counter_source == CounterSourceKind::Amu {
            return Err(platform.error(
                "counter_source",
                &format!("\"amu\" needs cpu = \"arm64\", found cpu = \"{}\"", cpu.name()),
            ));
        }
        for key in ["cntfrq_hz", "amu_enabled"] {
            if platform.get(key).is_some() {
                return Err(platform.error(key, "is only valid with cpu = \"arm64\""));
            }
        }
        return Ok(None);
    }
    if !matches!(counter_source, CounterSourceKind::Amu | CounterSourceKind::None) {
        return Err(platform.error(
            "counter_source",
            &format!(
                "cpu = \"arm64\" has \"amu\" or \"none\", found \"{}\"",
                counter_source.name()
            ),
        ));
    }
    let cntfrq_hz =
        platform.optional_u32("cntfrq_hz", 1_000_000..=1_000_000_000)?.unwrap_or(DEFAULT_CNTFRQ_HZ);
    if platform.get("amu_enabled").is_some() && counter_source != CounterSourceKind::Amu {
        return Err(platform.error("amu_enabled", "is only valid with counter_source = \"amu\""));
    }
    let amu_enabled = platform.bool("amu_enabled", true)?;
    Ok(Some(ArmSpec { cntfrq_hz, amu_enabled }))
}

/// `pmc_width` and `pmu_busy`: only with `counter_source = "fixed-pmc"`, which needs an Intel
/// CPU (CPUID leaf 0Ah is Intel's architectural PMU).
fn read_pmu_fields(
    platform: &Reader<'_>,
    cpu: CpuKind,
    counter_source: CounterSourceKind,
) -> Result<(Option<u32>, bool), ScenarioError> {
    let fixed = counter_source == CounterSourceKind::FixedPmc;
    if fixed && !cpu.is_intel() {
        return Err(platform.error(
            "counter_source",
            &format!(
                "\"fixed-pmc\" needs an Intel CPU (cpu = \"intel-hwp\" or \"intel-legacy\"), found cpu = \"{}\"",
                cpu.name()
            ),
        ));
    }
    // Intel CPUs announce the architectural PMU (CPUID leaf 0Ah) beside APERF/MPERF, as real
    // ones do; a hypervisor may hide it (`pmu = false`). `fixed-pmc` is the PMU without
    // APERF/MPERF; `none` has no counter of either kind unless `pmu = true`.
    let pmu = platform.bool("pmu", cpu.is_intel() && counter_source != CounterSourceKind::None)?;
    if pmu && !cpu.is_intel() {
        return Err(platform.error("pmu", "the architectural PMU is modelled for Intel CPUs only"));
    }
    if fixed && !pmu {
        return Err(
            platform.error("pmu", "counter_source = \"fixed-pmc\" is the PMU's fixed counters")
        );
    }
    if !pmu {
        for key in ["pmc_width", "pmu_busy"] {
            if platform.get(key).is_some() {
                return Err(platform.error(
                    key,
                    "is only valid with the architectural PMU (an Intel CPU, pmu = true)",
                ));
            }
        }
        return Ok((None, false));
    }
    let width = platform
        .optional_u32("pmc_width", MIN_PMC_WIDTH..=MAX_PMC_WIDTH)?
        .unwrap_or(DEFAULT_PMC_WIDTH);
    Ok((Some(width), platform.bool("pmu_busy", false)?))
}

/// `[pofx]`, limited so that a run makes at most [`MAX_READS`] reads.
fn read_pofx(table: &Table, processors: u32) -> Result<PofxSpec, ScenarioError> {
    let pofx_reader = Reader::new(
        "pofx".to_owned(),
        table,
        &["duration_ms", "sample_interval_ms", "threads", "nested_notifications"],
    )?;
    let duration_ms = pofx_reader.required_u32("duration_ms", 1..=MAX_DURATION_MS)?;
    let default_interval = DEFAULT_SAMPLE_INTERVAL_MS.min(duration_ms);
    let sample_interval_ms = pofx_reader
        .optional_u32("sample_interval_ms", 1..=duration_ms)?
        .unwrap_or(default_interval);
    let reads = u64::from(processors) * (u64::from(duration_ms / sample_interval_ms) + 1);
    if reads > MAX_READS {
        return Err(pofx_reader.error(
            "sample_interval_ms",
            &format!(
                "expected at most {MAX_READS} reads in all (processors × (duration_ms / sample_interval_ms + 1)), found {reads}: raise the interval, shorten the run or simulate fewer processors"
            ),
        ));
    }
    let threads = pofx_reader.choice(
        "threads",
        &[("single", ThreadMode::Single), ("per-processor", ThreadMode::PerProcessor)],
        ThreadMode::Single,
    )?;
    let nested_notifications = pofx_reader.bool("nested_notifications", false)?;
    let pofx = PofxSpec { duration_ms, sample_interval_ms, threads, nested_notifications };
    Ok(pofx)
}

fn read_phase(
    path: &str,
    table: &Table,
    processors: u32,
    duration_ms: u32,
) -> Result<Phase, ScenarioError> {
    let reader = Reader::new(
        path.to_owned(),
        table,
        &["start_ms", "end_ms", "processors", "frequency_mhz", "busy_percent"],
    )?;
    let start_ms = reader.required_u32("start_ms", 0..=duration_ms)?;
    let end_ms = reader.optional_u32("end_ms", start_ms.saturating_add(1)..=u32::MAX)?;
    let processors = reader.processor_set("processors", processors)?;
    let frequency_mhz = reader.required_u32("frequency_mhz", 1..=MAX_FREQUENCY_MHZ)?;
    let busy_percent = reader.required_u32("busy_percent", 0..=100)?;
    Ok(Phase { start_ms, end_ms, processors, frequency_mhz, busy_percent })
}

/// The keys of an `[[event]]`: the common ones, then those of particular kinds.
const EVENT_KEYS: [&str; 9] = [
    "at_ms",
    "kind",
    "processors",
    "duration_ms",
    "on_processor",
    "values",
    "state",
    "duration_us",
    "period_ms",
];

fn read_event(
    path: &str,
    table: &Table,
    processors: u32,
    pofx: PofxSpec,
) -> Result<Event, ScenarioError> {
    let reader = Reader::new(path.to_owned(), table, &EVENT_KEYS)?;
    let at_ms = reader.required_u32("at_ms", 0..=pofx.duration_ms)?;
    let kind_name = reader.required_string("kind")?;
    // A system sleep involves every processor: `processors` may be left out.
    let set = if kind_name == "sleep" && reader.get("processors").is_none() {
        ProcessorSet::All
    } else {
        reader.processor_set("processors", processors)?
    };
    let allowed: &[&str] = match kind_name {
        "counter-reset" | "counter-near-wrap" | "hot-add" | "hot-remove" => &[],
        "msr-fault" | "counters-zero" => &["duration_ms"],
        "wrong-processor-read" => &["on_processor"],
        "pmu-reprogrammed" => &["duration_ms", "values"],
        "sleep" => &["state", "duration_ms"],
        "smi" => &["duration_us", "period_ms"],
        _ => {
            return Err(reader.error(
                "kind",
                &format!(
                    "expected one of {}, found {}",
                    quoted_list(&EventKind::NAMES),
                    describe(&Value::String(kind_name.to_owned()))
                ),
            ));
        }
    };
    for &key in &EVENT_KEYS[3..] {
        if reader.get(key).is_some() && !allowed.contains(&key) {
            return Err(reader.error(key, &format!("is not a field of kind \"{kind_name}\"")));
        }
    }
    let kind = match kind_name {
        "counter-reset" => EventKind::CounterReset,
        "counters-zero" => EventKind::CountersZero {
            duration_ms: reader.optional_u32("duration_ms", 1..=MAX_DURATION_MS)?,
        },
        "hot-add" | "hot-remove" => {
            if set == ProcessorSet::All {
                return Err(reader.error(
                    "processors",
                    &format!(
                        "{kind_name}: expected a list of processor indexes (some processor must stay present), found \"all\""
                    ),
                ));
            }
            if kind_name == "hot-add" { EventKind::HotAdd } else { EventKind::HotRemove }
        }
        "sleep" => read_sleep(&reader, &set, at_ms, pofx)?,
        "counter-near-wrap" => {
            if at_ms == 0 {
                return Err(reader.error(
                    "at_ms",
                    "counter-near-wrap: expected the time APERF overflows, after 0, found 0",
                ));
            }
            EventKind::CounterNearWrap
        }
        "msr-fault" => EventKind::MsrFault {
            duration_ms: reader.optional_u32("duration_ms", 1..=MAX_DURATION_MS)?,
        },
        "smi" => read_smi(&reader)?,
        "pmu-reprogrammed" => EventKind::PmuReprogrammed {
            values: reader.counter_values("values")?.unwrap_or([0, 0]),
            duration_ms: reader.optional_u32("duration_ms", 1..=MAX_DURATION_MS)?,
        },
        _ => {
            if processors < 2 {
                return Err(reader.error(
                    "kind",
                    "wrong-processor-read needs at least 2 processors (platform.processors is 1)",
                ));
            }
            let on_processor = reader.optional_u32("on_processor", 0..=processors - 1)?;
            if let Some(on) = on_processor
                && set.contains(on)
            {
                return Err(reader.error(
                    "on_processor",
                    &format!(
                        "expected a processor that is not among the event's processors, found {on}"
                    ),
                ));
            }
            EventKind::WrongProcessorRead { on_processor }
        }
    };
    Ok(Event { at_ms, processors: set, kind })
}

/// The fields of an `smi` event: `duration_us` (required) and `period_ms`, each SMI shorter
/// than its period (a storm whose SMIs last as long never leaves SMM).
fn read_smi(reader: &Reader<'_>) -> Result<EventKind, ScenarioError> {
    let duration_us = reader.required_u32("duration_us", 1..=MAX_SMI_US)?;
    let period_ms = reader.optional_u32("period_ms", 1..=MAX_DURATION_MS)?;
    if let Some(period_ms) = period_ms
        && u64::from(duration_us) >= u64::from(period_ms) * 1000
    {
        return Err(reader.error(
            "duration_us",
            &format!(
                "smi: expected each SMI shorter than its period ({period_ms} ms = {} µs), found {duration_us} µs",
                u64::from(period_ms) * 1000
            ),
        ));
    }
    Ok(EventKind::Smi { duration_us, period_ms })
}

/// The fields of a `sleep` event: `state` (required), `duration_ms` (required; the system
/// resumes before the run ends) and `processors` ("all" or left out).
fn read_sleep(
    reader: &Reader<'_>,
    set: &ProcessorSet,
    at_ms: u32,
    pofx: PofxSpec,
) -> Result<EventKind, ScenarioError> {
    if *set != ProcessorSet::All {
        return Err(reader.error(
            "processors",
            "sleep: a system sleep state involves every processor: expected \"all\" or no processors field",
        ));
    }
    let choices = [("s3", SleepState::S3), ("s4", SleepState::S4)];
    if reader.get("state").is_none() {
        return Err(reader.error("state", "missing; expected one of \"s3\", \"s4\""));
    }
    let state = reader.choice("state", &choices, SleepState::S3)?;
    let duration_ms = reader.required_u32("duration_ms", MIN_SLEEP_MS..=MAX_DURATION_MS)?;
    let resume_ms = u64::from(at_ms) + u64::from(duration_ms);
    let last_resume = u64::from(pofx.duration_ms.saturating_sub(pofx.sample_interval_ms));
    if resume_ms > last_resume {
        return Err(reader.error(
            "duration_ms",
            &format!(
                "sleep: expected the system to resume at least one sample interval before the run ends (at_ms + duration_ms <= {last_resume}), found {at_ms} + {duration_ms}"
            ),
        ));
    }
    Ok(EventKind::Sleep { state, duration_ms })
}

fn read_hardware_perf(table: &Table) -> Result<HardwarePerf, ScenarioError> {
    let reader = Reader::new(
        "platform.perf".to_owned(),
        table,
        &["highest", "nominal", "lowest_nonlinear", "lowest"],
    )?;
    let byte = |key: &str| -> Result<u8, ScenarioError> {
        let value = reader.required_u32(key, 0..=255)?;
        Ok(u8::try_from(value).unwrap_or(u8::MAX))
    };
    Ok(HardwarePerf {
        highest: byte("highest")?,
        nominal: byte("nominal")?,
        lowest_nonlinear: byte("lowest_nonlinear")?,
        lowest: byte("lowest")?,
    })
}

/// The perf levels a CPU of this flavour reports by default: Intel ratios (MHz / 100); AMD
/// CPPC levels on a 0..=255 scale with nominal at 120.
fn default_hardware_perf(
    cpu: CpuKind,
    nominal_mhz: u32,
    fastest_mhz: u32,
    slowest_mhz: u32,
) -> HardwarePerf {
    let to_byte = |value: u64| u8::try_from(value.clamp(1, 255)).unwrap_or(u8::MAX);
    // Perf levels per MHz: Intel's are 100 MHz ratios; AMD's CPPC scale puts nominal at 120.
    let (scale, per) =
        if cpu.is_intel() { (1, u64::from(INTEL_BUS_MHZ)) } else { (120, u64::from(nominal_mhz)) };
    let nominal = u64::from(nominal_mhz) * scale / per;
    let highest = (u64::from(fastest_mhz) * scale).div_ceil(per);
    // Low enough for the slowest phase: no phase runs below the lowest level.
    let slowest = u64::from(slowest_mhz) * scale / per;
    HardwarePerf {
        highest: to_byte(highest.max(nominal)),
        nominal: to_byte(nominal),
        lowest_nonlinear: to_byte(nominal / 2),
        lowest: to_byte((nominal / 4).min(slowest.max(1))),
    }
}
/// The keys of `[config]`, one per setting of the driver's `Parameters` key.
pub const CONFIG_KEYS: [&str; 8] = [
    "feedback_counters",
    "counter_source",
    "performance_counter_view",
    "nominal_mhz",
    "perf_capabilities",
    "device_id_patterns",
    "transition_latency_100ns",
    "pmu_reservation",
];

pub(super) fn read_config(table: &Table) -> Result<ConfigSpec, ScenarioError> {
    let reader = Reader::new("config".to_owned(), table, &CONFIG_KEYS)?;
    // Absent keys: the driver's defaults.
    let defaults = ConfigSpec::default();
    // The names: the engine's tables, which also give the registry numbers the driver reads.
    let feedback_counters = reader.choice(
        "feedback_counters",
        &FEEDBACK_COUNTER_CHOICES.map(|choice| (choice.name, choice.value)),
        defaults.feedback_counters,
    )?;
    let counter_source = reader.choice(
        "counter_source",
        &COUNTER_SOURCE_CHOICES.map(|choice| (choice.name, choice.value)),
        defaults.counter_source,
    )?;
    let pmu_reservation = reader.choice(
        "pmu_reservation",
        &PMU_RESERVATION_CHOICES.map(|choice| (choice.name, choice.value)),
        defaults.pmu_reservation,
    )?;
    let performance_counter_view =
        reader.bool("performance_counter_view", defaults.performance_counter_view)?;
    let nominal_mhz = reader.optional_u32("nominal_mhz", 1..=MAX_NOMINAL_MHZ)?;
    let perf_capabilities = match reader.optional_table("perf_capabilities")? {
        Some(caps) => {
            let caps_reader = Reader::new(
                "config.perf_capabilities".to_owned(),
                caps,
                &["highest", "nominal", "lowest_nonlinear", "lowest"],
            )?;
            let level = 1..=MAX_PERFORMANCE_LEVEL;
            let caps = PerfCapabilities {
                highest: caps_reader.required_u32("highest", level.clone())?,
                nominal: caps_reader.required_u32("nominal", level.clone())?,
                lowest_nonlinear: caps_reader.required_u32("lowest_nonlinear", level.clone())?,
                lowest: caps_reader.required_u32("lowest", level)?,
            };
            if !caps.is_ordered() {
                return Err(reader.error(
                    "perf_capabilities",
                    "expected lowest <= lowest_nonlinear <= nominal <= highest (the driver \
                     ignores unordered values)",
                ));
            }
            Some(caps)
        }
        None => None,
    };
    let pattern_limit = u32::try_from(MAX_PATTERN_UNITS).unwrap_or(u32::MAX);
    let patterns = reader.optional_string_list(
        "device_id_patterns",
        1..=u32::try_from(MAX_DEVICE_ID_PATTERNS).unwrap_or(u32::MAX),
        1..=pattern_limit,
    )?;
    if let Some(patterns) = &patterns {
        for (index, pattern) in patterns.iter().enumerate() {
            // The driver takes any UTF-16 but NUL (where a `REG_MULTI_SZ` splits).
            if pattern.contains('\0') {
                return Err(ScenarioError::field(
                    format!("config.device_id_patterns[{index}]"),
                    "expected a pattern without NUL characters".to_owned(),
                ));
            }
        }
    }
    let transition_latency_100ns = reader
        .optional_u32("transition_latency_100ns", 0..=MAX_TRANSITION_LATENCY_100NS)?
        .unwrap_or(defaults.transition_latency_100ns);
    Ok(ConfigSpec {
        feedback_counters,
        counter_source,
        performance_counter_view,
        nominal_mhz,
        perf_capabilities,
        device_id_patterns: patterns,
        transition_latency_100ns,
        pmu_reservation,
    })
}
