//! The checks of what the PEP answers at initialisation: `capabilities.consistent`,
//! `feedback.descriptors`, `perf.ordering` and `domain.membership`.

use ppm_engine::abi::{
    PROCESSOR_DOMAIN_COORDIANTION_HW_ALL, PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
    PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE, PROCESSOR_FEEDBACK_TYPE_RELATIVE,
};

use crate::pofx::ProbeKind;

use super::{CheckResult, Context};

impl Context<'_> {
    pub(super) fn capabilities_consistent(&self) -> CheckResult {
        let expected = self.expected_counters();
        let mut failures = Vec::new();
        for record in &self.observations.processors {
            let Some((returned, capabilities)) = record.capabilities else { continue };
            let name = format!("processor {}", record.index);
            if !returned {
                failures.push(format!("{name}: QUERY_CAPABILITIES returned FALSE"));
                continue;
            }
            if capabilities.IdleStateCount != 0 {
                failures.push(format!(
                    "{name}: IdleStateCount {} (expected 0: the PEP executes no idle state)",
                    capabilities.IdleStateCount
                ));
            }
            if capabilities.FeedbackCounterCount != expected {
                failures.push(format!(
                    "{name}: FeedbackCounterCount {} but this platform and configuration call for {expected}",
                    capabilities.FeedbackCounterCount
                ));
            }
            match &record.counters {
                Some((false, _)) => failures.push(format!(
                    "{name}: QUERY_FEEDBACK_COUNTERS with Count {} returned FALSE",
                    capabilities.FeedbackCounterCount
                )),
                None if capabilities.FeedbackCounterCount != 0 => failures.push(format!(
                    "{name}: FeedbackCounterCount {} is not a count the OS can query",
                    capabilities.FeedbackCounterCount
                )),
                _ => {}
            }
        }
        failures.extend(self.probe_failures(&[ProbeKind::WrongCount]));
        CheckResult::from_failures(
            "capabilities.consistent",
            &failures,
            format!(
                "every processor: FeedbackCounterCount {expected} (described by QUERY_FEEDBACK_COUNTERS), IdleStateCount 0; a wrong Count is refused"
            ),
        )
    }

    pub(super) fn descriptors(&self) -> CheckResult {
        let nominal = self.machine.nominal_mhz();
        let mut failures = Vec::new();
        let mut described = 0;
        for record in &self.observations.processors {
            let nominal_performance = match record.perf {
                Some((true, perf)) => Some(perf.NominalPerformance),
                _ => None,
            };
            for (position, descriptor) in record.described_counters().iter().enumerate() {
                described += 1;
                let (view, counter, rate) = if position == 0 {
                    ("FREQUENCY", PROCESSOR_FEEDBACK_COUNTER_FREQUENCY, Some(nominal))
                } else {
                    ("PERFORMANCE", PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE, nominal_performance)
                };
                let mut wrong = Vec::new();
                if descriptor.Affinitized() != 1 {
                    wrong.push("Affinitized 0".to_owned());
                }
                if descriptor.Type() != PROCESSOR_FEEDBACK_TYPE_RELATIVE {
                    wrong.push(format!("Type {} (expected RELATIVE)", descriptor.Type()));
                }
                if descriptor.Counter() != counter {
                    wrong.push(format!("Counter {} (expected {view})", descriptor.Counter()));
                }
                if descriptor.DiscountIdle() != 1 {
                    wrong.push("DiscountIdle 0".to_owned());
                }
                if descriptor.Reserved() != 0 {
                    wrong.push(format!("Reserved {:#x}", descriptor.Reserved()));
                }
                if rate != Some(descriptor.NominalRate) {
                    let expected = rate.map_or_else(
                        || "the NominalPerformance".to_owned(),
                        |rate| rate.to_string(),
                    );
                    wrong.push(format!(
                        "NominalRate {} (expected {expected})",
                        descriptor.NominalRate
                    ));
                }
                if !wrong.is_empty() {
                    failures.push(format!(
                        "processor {} counter {position}: {}",
                        record.index,
                        wrong.join(", ")
                    ));
                }
            }
        }
        if described == 0 {
            return CheckResult::not_applicable(
                "feedback.descriptors",
                "no feedback counters described",
            );
        }
        CheckResult::from_failures(
            "feedback.descriptors",
            &failures,
            format!(
                "{described} descriptors: Affinitized, RELATIVE, DiscountIdle, Reserved 0, NominalRate {nominal} MHz"
            ),
        )
    }

    pub(super) fn perf_ordering(&self) -> CheckResult {
        let mut failures = Vec::new();
        let mut scales = Vec::new();
        for record in &self.observations.processors {
            let Some((returned, perf)) = record.perf else { continue };
            if !returned {
                failures.push(format!(
                    "processor {}: QUERY_PERF_CAPABILITIES returned FALSE",
                    record.index
                ));
                continue;
            }
            let levels = (
                perf.LowestPerformance,
                perf.LowestNonlinearPerformance,
                perf.NominalPerformance,
                perf.HighestPerformance,
            );
            if !(levels.0 >= 1
                && levels.0 <= levels.1
                && levels.1 <= levels.2
                && levels.2 <= levels.3)
            {
                failures.push(format!(
                    "processor {}: Lowest {} LowestNonlinear {} Nominal {} Highest {} are not ordered",
                    record.index, levels.0, levels.1, levels.2, levels.3
                ));
            }
            if !scales.contains(&levels) {
                scales.push(levels);
            }
        }
        if scales.len() > 1 {
            failures.push(format!(
                "{} different sets of levels: one unit scale is required for all processors",
                scales.len()
            ));
        }
        let summary = scales.first().map_or_else(String::new, |levels| {
            format!(
                ": Lowest {} <= LowestNonlinear {} <= Nominal {} <= Highest {}",
                levels.0, levels.1, levels.2, levels.3
            )
        });
        CheckResult::from_failures("perf.ordering", &failures, format!("every processor{summary}"))
    }

    pub(super) fn domain_membership(&self) -> CheckResult {
        let mut failures = Vec::new();
        let mut domains: Vec<(u32, u32)> = Vec::new(); // (DomainId, members seen)
        // A hot-removed processor's domain is gone (another processor may reuse its slot).
        let served: Vec<_> = self
            .observations
            .processors
            .iter()
            .filter(|record| !record.removed)
            .filter_map(|record| match record.perf {
                Some((true, perf)) => Some((record, perf)),
                _ => None,
            })
            .collect();
        for (_, perf) in &served {
            match domains.iter_mut().find(|(id, _)| *id == perf.DomainId) {
                Some((_, members)) => *members += 1,
                None => domains.push((perf.DomainId, 1)),
            }
        }
        for (record, perf) in &served {
            let members = domains
                .iter()
                .find(|(id, _)| *id == perf.DomainId)
                .map_or(0, |(_, members)| *members);
            if perf.DomainMembers != members {
                failures.push(format!(
                    "processor {}: DomainId {} with DomainMembers {}, but {members} processors report that domain",
                    record.index, perf.DomainId, perf.DomainMembers
                ));
            }
            match record.domain {
                Some((true, info))
                    if info.CoordinationType > PROCESSOR_DOMAIN_COORDIANTION_HW_ALL =>
                {
                    failures.push(format!(
                        "processor {}: QUERY_DOMAIN_INFO({}) CoordinationType {}",
                        record.index, perf.DomainId, info.CoordinationType
                    ));
                }
                Some((true, info)) if info.DomainId != perf.DomainId => failures.push(format!(
                    "processor {}: QUERY_DOMAIN_INFO({}) changed DomainId to {}",
                    record.index, perf.DomainId, info.DomainId
                )),
                Some((false, _)) => failures.push(format!(
                    "processor {}: QUERY_DOMAIN_INFO({}) refused a domain the PEP reported",
                    record.index, perf.DomainId
                )),
                _ => {}
            }
        }
        if served.is_empty() {
            return CheckResult::not_applicable(
                "domain.membership",
                "no processor reported perf capabilities",
            );
        }
        CheckResult::from_failures(
            "domain.membership",
            &failures,
            format!(
                "{} processors in {} domains; DomainMembers match; QUERY_DOMAIN_INFO answers each",
                served.len(),
                domains.len()
            ),
        )
    }
}
