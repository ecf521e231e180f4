//! The built-in scenarios, embedded from `sim/scenarios/*.toml` so that the binary is
//! self-contained. `ppm-sim validate` runs them all; `ppm-sim` runs [`DEFAULT`].

use crate::scenario::Scenario;

/// The scenario `ppm-sim` runs without arguments.
pub const DEFAULT: &str = "default";

/// Every built-in scenario: (name, TOML source), in suite order.
pub const SOURCES: [(&str, &str); 54] = [
    ("default", include_str!("../scenarios/default.toml")),
    ("single", include_str!("../scenarios/single.toml")),
    ("steady-8", include_str!("../scenarios/steady-8.toml")),
    ("turbo-burst", include_str!("../scenarios/turbo-burst.toml")),
    ("mostly-idle", include_str!("../scenarios/mostly-idle.toml")),
    ("big-2048", include_str!("../scenarios/big-2048.toml")),
    ("no-counters", include_str!("../scenarios/no-counters.toml")),
    ("hypervisor-zeros", include_str!("../scenarios/hypervisor-zeros.toml")),
    ("hypervisor-faulting", include_str!("../scenarios/hypervisor-faulting.toml")),
    ("counter-reset", include_str!("../scenarios/counter-reset.toml")),
    ("near-wrap", include_str!("../scenarios/near-wrap.toml")),
    ("wrong-processor", include_str!("../scenarios/wrong-processor.toml")),
    ("msr-fault", include_str!("../scenarios/msr-fault.toml")),
    ("msr-fault-intermittent", include_str!("../scenarios/msr-fault-intermittent.toml")),
    ("counter-reset-mid-interval", include_str!("../scenarios/counter-reset-mid-interval.toml")),
    ("hypervisor-zeros-after-init", include_str!("../scenarios/hypervisor-zeros-after-init.toml")),
    ("counters-zero-transient", include_str!("../scenarios/counters-zero-transient.toml")),
    ("hot-add", include_str!("../scenarios/hot-add.toml")),
    ("resume-s3", include_str!("../scenarios/resume-s3.toml")),
    ("resume-s4", include_str!("../scenarios/resume-s4.toml")),
    ("resume-idle", include_str!("../scenarios/resume-idle.toml")),
    ("nested-reads", include_str!("../scenarios/nested-reads.toml")),
    ("threaded", include_str!("../scenarios/threaded.toml")),
    ("amd-cppc", include_str!("../scenarios/amd-cppc.toml")),
    ("intel-legacy", include_str!("../scenarios/intel-legacy.toml")),
    ("counters-disabled", include_str!("../scenarios/counters-disabled.toml")),
    ("performance-view", include_str!("../scenarios/performance-view.toml")),
    ("fixed-pmc", include_str!("../scenarios/fixed-pmc.toml")),
    ("fixed-pmc-32", include_str!("../scenarios/fixed-pmc-32.toml")),
    ("pmu-busy", include_str!("../scenarios/pmu-busy.toml")),
    ("pmu-reprogrammed", include_str!("../scenarios/pmu-reprogrammed.toml")),
    ("fixed-pmc-resume", include_str!("../scenarios/fixed-pmc-resume.toml")),
    ("intel-prefer-fixed", include_str!("../scenarios/intel-prefer-fixed.toml")),
    ("smi-storm", include_str!("../scenarios/smi-storm.toml")),
    ("amd-vm-timing", include_str!("../scenarios/amd-vm-timing.toml")),
    ("arm64", include_str!("../scenarios/arm64.toml")),
    ("arm64-big-little", include_str!("../scenarios/arm64-big-little.toml")),
    ("arm64-no-amu", include_str!("../scenarios/arm64-no-amu.toml")),
    ("arm64-cntfrq-24mhz", include_str!("../scenarios/arm64-cntfrq-24mhz.toml")),
    ("amd-hex-names", include_str!("../scenarios/amd-hex-names.toml")),
    ("amd-platform-192", include_str!("../scenarios/amd-platform-192.toml")),
    ("intel-sockets-130", include_str!("../scenarios/intel-sockets-130.toml")),
    ("qemu-65", include_str!("../scenarios/qemu-65.toml")),
    ("boot-skip-registration", include_str!("../scenarios/boot-skip-registration.toml")),
    ("boot-install-pending", include_str!("../scenarios/boot-install-pending.toml")),
    ("boot-register-refused", include_str!("../scenarios/boot-register-refused.toml")),
    ("boot-register-error", include_str!("../scenarios/boot-register-error.toml")),
    ("boot-table-refused", include_str!("../scenarios/boot-table-refused.toml")),
    ("boot-processor-count", include_str!("../scenarios/boot-processor-count.toml")),
    ("boot-hal-refuses", include_str!("../scenarios/boot-hal-refuses.toml")),
    ("boot-pmu-enable-fails", include_str!("../scenarios/boot-pmu-enable-fails.toml")),
    ("boot-saved-control-refused", include_str!("../scenarios/boot-saved-control-refused.toml")),
    ("boot-bad-registry", include_str!("../scenarios/boot-bad-registry.toml")),
    ("boot-no-parameters", include_str!("../scenarios/boot-no-parameters.toml")),
];

/// The TOML source of built-in scenario `name`.
#[must_use]
pub fn source(name: &str) -> Option<&'static str> {
    SOURCES.iter().find(|(known, _)| *known == name).map(|(_, text)| *text)
}

/// Built-in scenario `name`, parsed.
///
/// # Panics
/// If the embedded file is invalid (a unit test parses every one).
#[must_use]
pub fn get(name: &str) -> Option<Scenario> {
    source(name).map(|text| parse(name, text))
}

/// Every built-in scenario, parsed, in suite order.
///
/// # Panics
/// As [`get`].
#[must_use]
pub fn all() -> Vec<(&'static str, Scenario)> {
    SOURCES.iter().map(|(name, text)| (*name, parse(name, text))).collect()
}

fn parse(name: &str, text: &str) -> Scenario {
    match Scenario::from_toml_str(text) {
        Ok(scenario) => scenario,
        Err(error) => panic!("built-in scenario {name} is invalid: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_is_named_after_its_file() {
        for (name, scenario) in all() {
            assert_eq!(scenario.name, name);
        }
        assert!(get(DEFAULT).is_some_and(|scenario| scenario.platform.processors == 8));
        assert!(get("big-2048").is_some_and(|scenario| scenario.platform.processors == 2048));
    }
}
