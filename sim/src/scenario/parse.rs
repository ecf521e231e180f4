//! A scenario file read by serde into [`super::raw`]'s types, each table then checked and
//! turned into its spec type, then the cross-field checks of [`super::validation`].

use ppm_engine::config::MAX_NOMINAL_MHZ;
use ppm_engine::device_id::{MAX_DEVICE_ID_PATTERNS, MAX_PATTERN_UNITS};
use ppm_engine::driver::registry::{MAX_PERFORMANCE_LEVEL, MAX_TRANSITION_LATENCY_100NS};
use ppm_engine::perf::PerfCapabilities;

use super::error::{ScenarioError, shown};
use super::kernel;
use super::presence::Presence;
use super::raw::{
    self, Found, at, counter_values, fail, names, optional_u32, processor_set, quoted_list,
    required_table, required_text, required_u32, string_list,
};
use super::spec::Scenario;
use super::types::{
    ArmSpec, BARE_METAL_MSR_READ_NS, ConfigSpec, CounterSourceKind, CpuKind, DEFAULT_CNTFRQ_HZ,
    DEFAULT_PMC_WIDTH, DEFAULT_SAMPLE_INTERVAL_MS, DeviceIdStyle, DeviceIds, Event, EventKind,
    HYPERVISOR_MSR_READ_NS, HardwarePerf, INTEL_BUS_MHZ, MAX_DEVICE_ID_UNITS, MAX_DURATION_MS,
    MAX_EVENTS, MAX_FREQUENCY_MHZ, MAX_MSR_READ_NS, MAX_NAME_CHARS, MAX_PMC_WIDTH, MAX_PROCESSORS,
    MAX_READS, MAX_SLEEPS, MAX_SMI_US, MAX_SOCKETS, MIN_PMC_WIDTH, MIN_SLEEP_MS, Phase,
    PlatformSpec, PofxSpec, ProcessorSet, Radix, SleepState, TemplateNumber, TemplatePart,
    ThreadMode, read_count,
};
use super::validation::check_phases_in_perf_range;

impl Scenario {
    /// Reads and validates a scenario.
    ///
    /// # Errors
    /// [`ScenarioError`] naming the field and what was expected, for TOML syntax errors, unknown
    /// keys, wrong types, values out of range and inconsistent settings.
    pub fn from_toml_str(text: &str) -> Result<Self, ScenarioError> {
        let file: raw::File =
            toml::from_str(text).map_err(|error| ScenarioError::from_toml(text, &error))?;
        Self::from_file(file).map_err(|error| error.located(text))
    }

    fn from_file(file: raw::File) -> Result<Self, ScenarioError> {
        let name = required_text("name", file.name.as_ref())?;
        // Characters, not UTF-8 bytes: 40 "Ä" are 40 characters.
        let count = name.chars().count();
        if name.is_empty() || count > MAX_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(ScenarioError::field(
                "name".to_owned(),
                format!(
                    "expected a non-empty name of at most {MAX_NAME_CHARS} printable characters, found {count} characters"
                ),
            ));
        }
        if name.trim().is_empty() {
            return Err(ScenarioError::field(
                "name".to_owned(),
                format!("expected a name with a visible character, found {count} spaces"),
            ));
        }
        let description = file.description.map(|text| text.0);

        let (mut platform, explicit_perf) =
            read_platform(required_table("platform", file.platform.as_ref())?)?;
        let processors = platform.processors;
        let pofx = read_pofx(required_table("pofx", file.pofx.as_ref())?, processors)?;
        let duration_ms = pofx.duration_ms;

        let mut phases = Vec::new();
        for (index, phase) in file.phase.iter().enumerate() {
            phases.push(read_phase(&format!("phase[{index}]"), phase, processors, duration_ms)?);
        }
        let events = read_events(&file.event, processors, pofx)?;

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

        let config = match &file.config {
            Some(config) => read_config(config)?,
            None => ConfigSpec::default(),
        };
        let mut kernel_spec = kernel::read_kernel(
            file.registry.as_ref(),
            &file.fault,
            &config,
            file.config.as_ref(),
            processors,
        )?;
        kernel_spec.install_pending =
            file.install.and_then(|install| install.pending).is_some_and(|pending| pending.0);
        // What the driver will read: `[config]` plus the raw values it accepts.
        let config = kernel::effective_config(&kernel_spec);

        let presence = Presence::new(processors, &events);
        let scenario = Self {
            name: name.to_owned(),
            description,
            platform,
            pofx,
            config,
            phases,
            events,
            kernel: kernel_spec,
            presence,
        };
        scenario.check()?;
        Ok(scenario)
    }
}

/// The `[[event]]`s: at most [`MAX_EVENTS`], of which at most [`MAX_SLEEPS`] sleeps.
fn read_events(
    raw_events: &[raw::Event],
    processors: u32,
    pofx: PofxSpec,
) -> Result<Vec<Event>, ScenarioError> {
    if raw_events.len() > MAX_EVENTS {
        return Err(ScenarioError::field(
            "event".to_owned(),
            format!("expected at most {MAX_EVENTS} [[event]]s, found {}", raw_events.len()),
        ));
    }
    let mut events = Vec::new();
    for (index, event) in raw_events.iter().enumerate() {
        events.push(read_event(&format!("event[{index}]"), event, processors, pofx)?);
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

/// `[platform]`; the perf levels are `None` unless `[platform.perf]` gives them (the default
/// depends on the phases).
fn read_platform(
    platform: &raw::Platform,
) -> Result<(PlatformSpec, Option<HardwarePerf>), ScenarioError> {
    let processors =
        required_u32("platform.processors", platform.processors.as_ref(), 1..=MAX_PROCESSORS)?;
    let cpu = platform.cpu.map_or(CpuKind::IntelHwp, |cpu| cpu.0);
    let default_source =
        if cpu.is_arm64() { CounterSourceKind::Amu } else { CounterSourceKind::AperfMperf };
    let counter_source = platform.counter_source.map_or(default_source, |source| source.0);
    let arm = read_arm_fields(platform, cpu, counter_source)?;
    let (pmc_width, pmu_busy) = read_pmu_fields(platform, cpu, counter_source)?;
    let nominal_limit = if cpu.is_intel() { 255 * INTEL_BUS_MHZ } else { MAX_FREQUENCY_MHZ };
    let nominal_mhz =
        required_u32("platform.nominal_mhz", platform.nominal_mhz.as_ref(), 1..=nominal_limit)?;
    if cpu.is_intel() && nominal_mhz % INTEL_BUS_MHZ != 0 {
        return Err(ScenarioError::field(
            "platform.nominal_mhz".to_owned(),
            format!(
                "expected a multiple of {INTEL_BUS_MHZ} on an Intel CPU (ratio × 100 MHz bus clock), found {nominal_mhz}"
            ),
        ));
    }
    let hypervisor = platform.hypervisor.is_some_and(|flag| flag.0);
    if hypervisor && cpu.is_arm64() {
        return Err(ScenarioError::field(
            "platform.hypervisor".to_owned(),
            "is CPUID.1:ECX[31], x86 only (an ARM64 guest differs only in what its ID registers announce)".to_owned(),
        ));
    }
    let hwp_enabled = platform.hwp_enabled.is_none_or(|flag| flag.0);
    if platform.hwp_enabled.is_some() && cpu != CpuKind::IntelHwp {
        return Err(ScenarioError::field(
            "platform.hwp_enabled".to_owned(),
            "is only valid with cpu = \"intel-hwp\"".to_owned(),
        ));
    }
    let device_ids = read_device_ids(platform, processors)?;
    let other_devices =
        string_list("platform.other_devices", platform.other_devices.as_ref(), 0..=256, 1..=256)?;
    let perf = platform.perf.as_ref().map(read_hardware_perf).transpose()?;
    let msr_read_ns = read_msr_read_ns(platform.msr_read_ns.as_ref())?;
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
fn read_device_ids(platform: &raw::Platform, processors: u32) -> Result<DeviceIds, ScenarioError> {
    let given: Vec<&str> = [
        ("device_id_style", platform.device_id_style.is_some()),
        ("device_id_template", platform.device_id_template.is_some()),
        ("device_ids", platform.device_ids.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect();
    if let [first, second, ..] = given.as_slice() {
        return Err(fail(
            "platform",
            second,
            &format!("give the processors' ids one way: {first} is set already"),
        ));
    }
    let sockets = optional_u32(
        "platform.sockets",
        platform.sockets.as_ref(),
        1..=MAX_SOCKETS.min(processors),
    )?;
    if let Some(ids) = string_list(
        "platform.device_ids",
        platform.device_ids.as_ref(),
        processors..=processors,
        1..=MAX_DEVICE_ID_UNITS,
    )? {
        if sockets.is_some() {
            return Err(fail(
                "platform",
                "sockets",
                "is only valid with a socket style (sb-sck, sb-sck-c) or a device_id_template",
            ));
        }
        return Ok(DeviceIds::List(ids));
    }
    let per_socket = |sockets: u32| processors.div_ceil(sockets.max(1));
    if let Some(template) = &platform.device_id_template {
        let parts = parse_template(&template.0)
            .map_err(|problem| fail("platform", "device_id_template", &problem))?;
        return Ok(DeviceIds::Template { parts, per_socket: per_socket(sockets.unwrap_or(1)) });
    }
    // Without a style: `\_SB.CPU#` where 16 processors or fewer can be so named, else AMD's
    // `\_SB.C###`, which names every supported count.
    let default_style = if processors <= DeviceIdStyle::SbCpu.capacity() {
        DeviceIdStyle::SbCpu
    } else {
        DeviceIdStyle::SbC
    };
    let style = platform.device_id_style.map_or(default_style, |style| style.0);
    if !style.per_socket() {
        if sockets.is_some() {
            return Err(fail(
                "platform",
                "sockets",
                &format!(
                    "is only valid with a socket style (sb-sck, sb-sck-c) or a device_id_template, found style \"{}\"",
                    style.name()
                ),
            ));
        }
        if processors > style.capacity() {
            return Err(fail(
                "platform",
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
        return Err(fail(
            "platform",
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
fn read_msr_read_ns(found: Option<&Found>) -> Result<u32, ScenarioError> {
    match found {
        Some(Found::Text(preset)) if preset == "bare-metal" => Ok(BARE_METAL_MSR_READ_NS),
        Some(Found::Text(preset)) if preset == "hypervisor" => Ok(HYPERVISOR_MSR_READ_NS),
        Some(number @ Found::Integer(_)) => {
            raw::integer("platform.msr_read_ns", number, &(0..=MAX_MSR_READ_NS))
        }
        Some(other) => Err(fail(
            "platform",
            "msr_read_ns",
            &format!(
                "expected \"bare-metal\", \"hypervisor\" or an integer in 0..={MAX_MSR_READ_NS} (ns), found {}",
                other.describe()
            ),
        )),
        None => Ok(BARE_METAL_MSR_READ_NS),
    }
}

/// `cntfrq_hz` and `amu_enabled` (ARM64 only); an ARM64 CPU has the AMU or nothing, an x86
/// one never the AMU.
fn read_arm_fields(
    platform: &raw::Platform,
    cpu: CpuKind,
    counter_source: CounterSourceKind,
) -> Result<Option<ArmSpec>, ScenarioError> {
    if !cpu.is_arm64() {
        if counter_source == CounterSourceKind::Amu {
            return Err(fail(
                "platform",
                "counter_source",
                &format!("\"amu\" needs cpu = \"arm64\", found cpu = \"{}\"", cpu.name()),
            ));
        }
        for (key, set) in [
            ("cntfrq_hz", platform.cntfrq_hz.is_some()),
            ("amu_enabled", platform.amu_enabled.is_some()),
        ] {
            if set {
                return Err(fail("platform", key, "is only valid with cpu = \"arm64\""));
            }
        }
        return Ok(None);
    }
    if !matches!(counter_source, CounterSourceKind::Amu | CounterSourceKind::None) {
        return Err(fail(
            "platform",
            "counter_source",
            &format!(
                "cpu = \"arm64\" has \"amu\" or \"none\", found \"{}\"",
                counter_source.name()
            ),
        ));
    }
    let cntfrq_hz =
        optional_u32("platform.cntfrq_hz", platform.cntfrq_hz.as_ref(), 1_000_000..=1_000_000_000)?
            .unwrap_or(DEFAULT_CNTFRQ_HZ);
    if platform.amu_enabled.is_some() && counter_source != CounterSourceKind::Amu {
        return Err(fail("platform", "amu_enabled", "is only valid with counter_source = \"amu\""));
    }
    let amu_enabled = platform.amu_enabled.is_none_or(|flag| flag.0);
    Ok(Some(ArmSpec { cntfrq_hz, amu_enabled }))
}

/// `pmc_width` and `pmu_busy`: only with `counter_source = "fixed-pmc"`, which needs an Intel
/// CPU (CPUID leaf 0Ah is Intel's architectural PMU).
fn read_pmu_fields(
    platform: &raw::Platform,
    cpu: CpuKind,
    counter_source: CounterSourceKind,
) -> Result<(Option<u32>, bool), ScenarioError> {
    let fixed = counter_source == CounterSourceKind::FixedPmc;
    if fixed && !cpu.is_intel() {
        return Err(fail(
            "platform",
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
    let pmu = platform
        .pmu
        .map_or_else(|| cpu.is_intel() && counter_source != CounterSourceKind::None, |flag| flag.0);
    if pmu && !cpu.is_intel() {
        return Err(fail(
            "platform",
            "pmu",
            "the architectural PMU is modelled for Intel CPUs only",
        ));
    }
    if fixed && !pmu {
        return Err(fail(
            "platform",
            "pmu",
            "counter_source = \"fixed-pmc\" is the PMU's fixed counters",
        ));
    }
    if !pmu {
        for (key, set) in
            [("pmc_width", platform.pmc_width.is_some()), ("pmu_busy", platform.pmu_busy.is_some())]
        {
            if set {
                return Err(fail(
                    "platform",
                    key,
                    "is only valid with the architectural PMU (an Intel CPU, pmu = true)",
                ));
            }
        }
        return Ok((None, false));
    }
    let width = optional_u32(
        "platform.pmc_width",
        platform.pmc_width.as_ref(),
        MIN_PMC_WIDTH..=MAX_PMC_WIDTH,
    )?
    .unwrap_or(DEFAULT_PMC_WIDTH);
    Ok((Some(width), platform.pmu_busy.is_some_and(|flag| flag.0)))
}

/// `[pofx]`, limited so that a run makes at most [`MAX_READS`] reads.
fn read_pofx(pofx: &raw::Pofx, processors: u32) -> Result<PofxSpec, ScenarioError> {
    let duration_ms =
        required_u32("pofx.duration_ms", pofx.duration_ms.as_ref(), 1..=MAX_DURATION_MS)?;
    let default_interval = DEFAULT_SAMPLE_INTERVAL_MS.min(duration_ms);
    let sample_interval_ms =
        optional_u32("pofx.sample_interval_ms", pofx.sample_interval_ms.as_ref(), 1..=duration_ms)?
            .unwrap_or(default_interval);
    let reads = read_count(processors, duration_ms, sample_interval_ms);
    if reads > MAX_READS {
        return Err(fail(
            "pofx",
            "sample_interval_ms",
            &format!(
                "expected at most {MAX_READS} reads in all (processors × (duration_ms / sample_interval_ms + 1)), found {reads}: raise the interval, shorten the run or simulate fewer processors"
            ),
        ));
    }
    let threads = pofx.threads.map_or(ThreadMode::Single, |threads| threads.0);
    let nested_notifications = pofx.nested_notifications.is_some_and(|flag| flag.0);
    let pofx = PofxSpec { duration_ms, sample_interval_ms, threads, nested_notifications };
    Ok(pofx)
}

fn read_phase(
    path: &str,
    phase: &raw::Phase,
    processors: u32,
    duration_ms: u32,
) -> Result<Phase, ScenarioError> {
    let field = |key| at(path, key);
    let start_ms = required_u32(&field("start_ms"), phase.start_ms.as_ref(), 0..=duration_ms)?;
    let end_ms = optional_u32(
        &field("end_ms"),
        phase.end_ms.as_ref(),
        start_ms.saturating_add(1)..=u32::MAX,
    )?;
    let processors = processor_set(&field("processors"), phase.processors.as_ref(), processors)?;
    let frequency_mhz =
        required_u32(&field("frequency_mhz"), phase.frequency_mhz.as_ref(), 1..=MAX_FREQUENCY_MHZ)?;
    let busy_percent = required_u32(&field("busy_percent"), phase.busy_percent.as_ref(), 0..=100)?;
    Ok(Phase { start_ms, end_ms, processors, frequency_mhz, busy_percent })
}

fn read_event(
    path: &str,
    event: &raw::Event,
    processors: u32,
    pofx: PofxSpec,
) -> Result<Event, ScenarioError> {
    let field = |key| at(path, key);
    let at_ms = required_u32(&field("at_ms"), event.at_ms.as_ref(), 0..=pofx.duration_ms)?;
    let kind_name = required_text(&field("kind"), event.kind.as_ref())?;
    // A system sleep involves every processor: `processors` may be left out.
    let set = if kind_name == "sleep" && event.processors.is_none() {
        ProcessorSet::All
    } else {
        processor_set(&field("processors"), event.processors.as_ref(), processors)?
    };
    let allowed: &[&str] = match kind_name {
        "counter-reset" | "counter-near-wrap" | "hot-add" | "hot-remove" => &[],
        "msr-fault" | "counters-zero" => &["duration_ms"],
        "wrong-processor-read" => &["on_processor"],
        "pmu-reprogrammed" => &["duration_ms", "values"],
        "sleep" => &["state", "duration_ms"],
        "smi" => &["duration_us", "period_ms"],
        _ => {
            return Err(fail(
                path,
                "kind",
                &format!(
                    "expected one of {}, found {}",
                    quoted_list(&EventKind::NAMES),
                    Found::Text(kind_name.to_owned()).describe()
                ),
            ));
        }
    };
    for key in raw::Event::KIND_KEYS {
        if event.sets(key) && !allowed.contains(&key) {
            return Err(fail(path, key, &format!("is not a field of kind \"{kind_name}\"")));
        }
    }
    let duration_ms = event.duration_ms.as_ref();
    let kind = match kind_name {
        "counter-reset" => EventKind::CounterReset,
        "counters-zero" => EventKind::CountersZero {
            duration_ms: optional_u32(&field("duration_ms"), duration_ms, 1..=MAX_DURATION_MS)?,
        },
        "hot-add" | "hot-remove" => {
            if set == ProcessorSet::All {
                return Err(fail(
                    path,
                    "processors",
                    &format!(
                        "{kind_name}: expected a list of processor indexes (some processor must stay present), found \"all\""
                    ),
                ));
            }
            if kind_name == "hot-add" { EventKind::HotAdd } else { EventKind::HotRemove }
        }
        "sleep" => read_sleep(path, event, &set, at_ms, pofx)?,
        "counter-near-wrap" => {
            if at_ms == 0 {
                return Err(fail(
                    path,
                    "at_ms",
                    "counter-near-wrap: expected the time APERF overflows, after 0, found 0",
                ));
            }
            EventKind::CounterNearWrap
        }
        "msr-fault" => EventKind::MsrFault {
            duration_ms: optional_u32(&field("duration_ms"), duration_ms, 1..=MAX_DURATION_MS)?,
        },
        "smi" => read_smi(path, event)?,
        "pmu-reprogrammed" => EventKind::PmuReprogrammed {
            values: counter_values(&field("values"), event.values.as_ref())?.unwrap_or([0, 0]),
            duration_ms: optional_u32(&field("duration_ms"), duration_ms, 1..=MAX_DURATION_MS)?,
        },
        _ => {
            if processors < 2 {
                return Err(fail(
                    path,
                    "kind",
                    "wrong-processor-read needs at least 2 processors (platform.processors is 1)",
                ));
            }
            let on_processor = optional_u32(
                &field("on_processor"),
                event.on_processor.as_ref(),
                0..=processors - 1,
            )?;
            if let Some(on) = on_processor
                && set.contains(on)
            {
                return Err(fail(
                    path,
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
fn read_smi(path: &str, event: &raw::Event) -> Result<EventKind, ScenarioError> {
    let duration_us =
        required_u32(&at(path, "duration_us"), event.duration_us.as_ref(), 1..=MAX_SMI_US)?;
    let period_ms =
        optional_u32(&at(path, "period_ms"), event.period_ms.as_ref(), 1..=MAX_DURATION_MS)?;
    if let Some(period_ms) = period_ms
        && u64::from(duration_us) >= u64::from(period_ms) * 1000
    {
        return Err(fail(
            path,
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
    path: &str,
    event: &raw::Event,
    set: &ProcessorSet,
    at_ms: u32,
    pofx: PofxSpec,
) -> Result<EventKind, ScenarioError> {
    if *set != ProcessorSet::All {
        return Err(fail(
            path,
            "processors",
            "sleep: a system sleep state involves every processor: expected \"all\" or no processors field",
        ));
    }
    let Some(state) = event.state else {
        return Err(fail(
            path,
            "state",
            &format!("missing; expected one of {}", names::<SleepState>()),
        ));
    };
    let state = state.0;
    let duration_ms = required_u32(
        &at(path, "duration_ms"),
        event.duration_ms.as_ref(),
        MIN_SLEEP_MS..=MAX_DURATION_MS,
    )?;
    let resume_ms = u64::from(at_ms) + u64::from(duration_ms);
    let last_resume = u64::from(pofx.duration_ms.saturating_sub(pofx.sample_interval_ms));
    if resume_ms > last_resume {
        return Err(fail(
            path,
            "duration_ms",
            &format!(
                "sleep: expected the system to resume at least one sample interval before the run ends (at_ms + duration_ms <= {last_resume}), found {at_ms} + {duration_ms}"
            ),
        ));
    }
    Ok(EventKind::Sleep { state, duration_ms })
}

fn read_hardware_perf(levels: &raw::Levels) -> Result<HardwarePerf, ScenarioError> {
    let [highest, nominal, lowest_nonlinear, lowest] =
        levels.read("platform.perf", 0..=255)?.map(|level| u8::try_from(level).unwrap_or(u8::MAX));
    Ok(HardwarePerf { highest, nominal, lowest_nonlinear, lowest })
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

pub(super) fn read_config(config: &raw::Config) -> Result<ConfigSpec, ScenarioError> {
    // Absent keys: the driver's defaults.
    let defaults = ConfigSpec::default();
    let nominal_mhz =
        optional_u32("config.nominal_mhz", config.nominal_mhz.as_ref(), 1..=MAX_NOMINAL_MHZ)?;
    let perf_capabilities = match &config.perf_capabilities {
        Some(levels) => {
            let [highest, nominal, lowest_nonlinear, lowest] =
                levels.read("config.perf_capabilities", 1..=MAX_PERFORMANCE_LEVEL)?;
            let caps = PerfCapabilities { highest, nominal, lowest_nonlinear, lowest };
            if !caps.is_ordered() {
                return Err(fail(
                    "config",
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
    let patterns = string_list(
        "config.device_id_patterns",
        config.device_id_patterns.as_ref(),
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
    let transition_latency_100ns = optional_u32(
        "config.transition_latency_100ns",
        config.transition_latency_100ns.as_ref(),
        0..=MAX_TRANSITION_LATENCY_100NS,
    )?
    .unwrap_or(defaults.transition_latency_100ns);
    Ok(ConfigSpec {
        feedback_counters: config
            .feedback_counters
            .map_or(defaults.feedback_counters, |choice| choice.0),
        counter_source: config.counter_source.map_or(defaults.counter_source, |choice| choice.0),
        performance_counter_view: config
            .performance_counter_view
            .map_or(defaults.performance_counter_view, |flag| flag.0),
        nominal_mhz,
        perf_capabilities,
        device_id_patterns: patterns,
        transition_latency_100ns,
        pmu_reservation: config.pmu_reservation.map_or(defaults.pmu_reservation, |choice| choice.0),
    })
}
