//! The checks of the runtime's `FEEDBACK_READ`s: `feedback.*` (but the index, descriptor
//! and re-entrancy checks).

use std::fmt::Write as _;

use crate::cpu::msr;
use crate::pofx::ProbeKind;
use crate::verdict::{ACCURACY_TOLERANCE, Findings, SPIKE_TOLERANCE};

use super::{CheckResult, Context};

impl Context<'_> {
    pub(super) fn wrong_processor(&self) -> CheckResult {
        let id = "feedback.wrong_processor_refused";
        if self.scenario.platform.processors < 2 {
            return CheckResult::not_applicable(id, "a single processor");
        }
        self.counter_probes(id, ProbeKind::WrongProcessor, "reads on the wrong processor")
    }

    pub(super) fn no_counters(&self) -> CheckResult {
        let id = "feedback.no_counters_refused";
        if self.expected_counters() != 0 {
            return CheckResult::not_applicable(
                id,
                "the platform has usable counters and the policy allows them",
            );
        }
        let mut failures: Vec<String> = self
            .observations
            .processors
            .iter()
            .filter(|record| !record.described_counters().is_empty())
            .map(|record| {
                format!(
                    "processor {}: describes {} counters",
                    record.index,
                    record.described_counters().len()
                )
            })
            .collect();
        failures.extend(self.probe_failures(&[ProbeKind::NoCounters]));
        let probes = self
            .observations
            .probes
            .iter()
            .filter(|probe| probe.kind == ProbeKind::NoCounters)
            .count();
        CheckResult::from_failures(
            id,
            &failures,
            format!("no processor describes counters; {probes} reads refused"),
        )
    }

    pub(super) fn reads_served(&self) -> CheckResult {
        let id = "feedback.reads_served";
        let mut total = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            total += record.digest.working;
            failures.absorb(&record.digest.refused_working, str::to_owned);
        }
        if total == 0 {
            return CheckResult::not_applicable(id, "no counter reads on working counters");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!("{total} reads on working counters all served"),
        )
    }

    pub(super) fn monotonic(&self) -> CheckResult {
        let id = "feedback.monotonic";
        let counters: usize = self.metrics.iter().map(|metrics| metrics.counters.len()).sum();
        if counters == 0 {
            return CheckResult::not_applicable(id, "no feedback counters described");
        }
        let failures: Vec<String> = self
            .metrics
            .iter()
            .flat_map(|metrics| {
                metrics.counters.iter().map(move |counter| (metrics.index, counter))
            })
            .filter(|(_, counter)| !counter.monotonic)
            .map(|(index, counter)| {
                format!(
                    "processor {index} counter {}: NominalCount or ActualCount went backwards",
                    counter.counter_index
                )
            })
            .collect();
        CheckResult::from_failures(
            id,
            &failures,
            format!("{counters} counters never went backwards"),
        )
    }

    pub(super) fn accuracy(&self) -> CheckResult {
        let id = "feedback.accuracy";
        let nominal = f64::from(self.machine.nominal_mhz());
        let mut failures = Vec::new();
        let mut measured_count = 0;
        let mut worst: f64 = 0.0;
        for metrics in self.metrics {
            for counter in &metrics.counters {
                let name = format!("processor {} counter {}", metrics.index, counter.counter_index);
                // The PERFORMANCE view measures in perf units: compare ratios to nominal.
                let scale = if counter.counter_index == 0 {
                    1.0
                } else {
                    f64::from(counter.nominal_rate) / nominal
                };
                match (counter.expected.mean_mhz(), counter.measured()) {
                    (None, None) => {}
                    (None, Some(measured)) => failures.push(format!(
                        "{name}: {measured:.1} measured over intervals without C0 time"
                    )),
                    (Some(expected), None) => failures.push(format!(
                        "{name}: {:.1} expected but no nominal counts were reported",
                        expected * scale
                    )),
                    (Some(expected), Some(measured)) => {
                        measured_count += 1;
                        let expected = expected * scale;
                        let error = (measured - expected).abs() / expected;
                        worst = worst.max(error);
                        if error > ACCURACY_TOLERANCE {
                            failures.push(format!(
                                "{name}: measured {measured:.2}, expected {expected:.2} ({:.3} % off)",
                                error * 100.0
                            ));
                        }
                    }
                }
            }
        }
        if failures.is_empty() && measured_count == 0 {
            return CheckResult::not_applicable(id, "no counter measured C0 time");
        }
        CheckResult::from_failures(
            id,
            &failures,
            format!(
                "{measured_count} counters within {} % (worst {:.5} %)",
                ACCURACY_TOLERANCE * 100.0,
                worst * 100.0
            ),
        )
    }

    /// `feedback.interval_accuracy`: every interval between served reads without a counter
    /// discontinuity, on its own, gives the true rate of that interval (within
    /// [`crate::verdict::interval_allowance`], whose skew is the configured `msr_read_ns` and
    /// the engine's pair bound), so that a pair skewed by an SMI between its two reads is caught even where
    /// the whole-run average hides it.
    #[allow(clippy::cast_precision_loss)] // Parts per million, for the detail.
    pub(super) fn interval_accuracy(&self) -> CheckResult {
        let id = "feedback.interval_accuracy";
        let mut intervals = 0;
        let mut failures = Findings::new();
        // The interval closest to its tolerance (the largest error / allowed; on a tie, the
        // tightest tolerance), among the counters that checked any.
        let mut worst: Option<(u64, u64)> = None;
        for metrics in self.metrics {
            for counter in &metrics.counters {
                intervals += counter.intervals_checked;
                failures.absorb(&counter.interval_errors, |error| {
                    format!(
                        "processor {} counter {}: {error}",
                        metrics.index, counter.counter_index
                    )
                });
                if counter.intervals_checked == 0 {
                    continue;
                }
                let (error, allowed) = counter.worst_interval_ppm;
                let closer = worst.is_none_or(|(worst_error, worst_allowed)| {
                    let (this, that) = (
                        u128::from(error) * u128::from(worst_allowed),
                        u128::from(worst_error) * u128::from(allowed),
                    );
                    this > that || (this == that && allowed < worst_allowed)
                });
                if closer {
                    worst = Some((error, allowed));
                }
            }
        }
        let Some((error, allowed)) = worst.filter(|_| intervals != 0) else {
            return CheckResult::not_applicable(id, "no busy interval between served reads");
        };
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{intervals} intervals each within its tolerance of its own truth (closest: {:.4} % off, {:.4} % allowed; pairs read {} ns apart)",
                error as f64 / 1e4,
                allowed as f64 / 1e4,
                self.scenario.platform.msr_read_ns
            ),
        )
    }

    pub(super) fn no_dropped_interval(&self) -> CheckResult {
        let id = "feedback.no_dropped_interval";
        let (mut intervals, mut exempt) = (0, 0);
        let mut failures = Findings::new();
        for metrics in self.metrics {
            for counter in &metrics.counters {
                intervals += counter.served.saturating_sub(1);
                exempt += counter.exempt;
                failures.absorb(&counter.dropped, |dropped| {
                    format!(
                        "processor {} counter {}: {dropped}",
                        metrics.index, counter.counter_index
                    )
                });
            }
        }
        if intervals == 0 {
            return CheckResult::not_applicable(id, "no intervals between served reads");
        }
        let wraps: u64 = (0..self.scenario.platform.processors)
            .filter_map(|index| self.machine.fixed_counters(index))
            .map(|state| state.wraps[1] + state.wraps[2])
            .sum();
        let mut across = String::new();
        if wraps > 0 {
            let _ = write!(across, ", across {wraps} fixed-counter wraps");
        }
        if exempt > 0 {
            let _ = write!(across, " ({exempt} touching a counter discontinuity exempt)");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{intervals} intervals: every one without a counter discontinuity reports the nominal counts the processor made{across}"
            ),
        )
    }

    pub(super) fn no_spike(&self) -> CheckResult {
        let id = "feedback.no_spike";
        let mut intervals = 0;
        let mut failures = Findings::new();
        for metrics in self.metrics {
            for counter in &metrics.counters {
                intervals += counter.served.saturating_sub(1);
                failures.absorb(&counter.spikes, |spike| {
                    format!(
                        "processor {} counter {}: {spike}",
                        metrics.index, counter.counter_index
                    )
                });
            }
        }
        if intervals == 0 {
            return CheckResult::not_applicable(id, "no intervals between served reads");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{intervals} intervals, every rate within the true frequency range ±{} %, none across a counter discontinuity counting more than the processor made",
                SPIKE_TOLERANCE * 100.0
            ),
        )
    }

    pub(super) fn read_masked(&self) -> CheckResult {
        let id = "feedback.read_masked";
        let mut served = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            served += record.digest.served;
            failures.absorb(&record.digest.access_problems, str::to_owned);
        }
        if served == 0 {
            return CheckResult::not_applicable(id, "no read was served");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!(
                "{served} served reads: the actual then the nominal counter (APERF then MPERF), back to back, interrupts masked"
            ),
        )
    }

    pub(super) fn counter_msrs(&self) -> CheckResult {
        let id = "feedback.counter_msrs";
        let cpu = self.machine.cpu();
        let read_only =
            cpu.kind == crate::scenario::CpuKind::AmdCppc && cpu.counter_source.announced();
        let fixed = self.scenario.uses_fixed_counters();
        let amu = cpu.kind.is_arm64();
        let expected = if amu {
            (crate::cpu::sysreg::AMEVCNTR00, crate::cpu::sysreg::AMEVCNTR01)
        } else if read_only {
            (msr::AMD_APERF_READ_ONLY, msr::AMD_MPERF_READ_ONLY)
        } else if fixed {
            (msr::IA32_FIXED_CTR1, msr::IA32_FIXED_CTR2)
        } else {
            (msr::IA32_APERF, msr::IA32_MPERF)
        };
        let mut served = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            for ((actual_msr, nominal_msr), count) in &record.digest.msr_pairs {
                served += count;
                if (*actual_msr, *nominal_msr) != expected {
                    failures.push_many(
                        &format!(
                            "processor {}: read {actual_msr:#x}/{nominal_msr:#x}, expected {:#x}/{:#x}",
                            record.index, expected.0, expected.1
                        ),
                        *count,
                    );
                }
            }
        }
        if served == 0 {
            return CheckResult::not_applicable(id, "no read was served");
        }
        let which = if amu {
            "the Activity Monitors' cycle counters AMEVCNTR00_EL0/AMEVCNTR01_EL0"
        } else if read_only {
            "the AMD read-only copies"
        } else if fixed {
            "the fixed counters IA32_FIXED_CTR1/IA32_FIXED_CTR2"
        } else {
            "IA32_APERF/IA32_MPERF"
        };
        CheckResult::from_findings(
            id,
            &failures,
            format!("{served} served reads used {which} ({:#x}/{:#x})", expected.0, expected.1),
        )
    }

    pub(super) fn fault_refused(&self) -> CheckResult {
        let id = "feedback.fault_refused";
        let mut faulted = 0;
        let mut failures = Findings::new();
        for record in &self.observations.processors {
            faulted += record.digest.faulted;
            failures.absorb(&record.digest.faulted_served, str::to_owned);
        }
        if faulted == 0 {
            return CheckResult::not_applicable(id, "no counter read faulted");
        }
        CheckResult::from_findings(
            id,
            &failures,
            format!("{faulted} reads whose MSR read faulted were refused"),
        )
    }
}
