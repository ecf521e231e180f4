//! Processor (PPM) notifications: the other payloads (performance capabilities, constraints
//! and requests, domains and discrete states, platform states and vetoes, system-state
//! transitions).

use super::types::{
    BOOLEAN, FALSE, PowerSystemUnspecified, SYSTEM_POWER_STATE, UCHAR, ULONG, ULONG64,
};

/// `PEP_PPM_QUERY_PERF_CAPABILITIES`: payload of [`PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`].
///
/// All levels are on one PEP-chosen scale shared by all processors, with
/// `LowestPerformance <= LowestNonlinearPerformance <= NominalPerformance <=
/// HighestPerformance`.
///
/// [`PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES`]: super::PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_PERF_CAPABILITIES {
    /// Out: highest (boost) performance.
    pub HighestPerformance: ULONG,
    /// Out: nominal (guaranteed, sustained) performance.
    pub NominalPerformance: ULONG,
    /// Out: lowest performance with non-linear power savings.
    pub LowestNonlinearPerformance: ULONG,
    /// Out: lowest performance.
    pub LowestPerformance: ULONG,
    /// Out: the processor's performance domain.
    pub DomainId: ULONG,
    /// Out: number of processors in the domain.
    pub DomainMembers: ULONG,
}
assert_layout!(
    PEP_PPM_QUERY_PERF_CAPABILITIES, size 24, align 4,
    HighestPerformance @ 0, NominalPerformance @ 4, LowestNonlinearPerformance @ 8,
    LowestPerformance @ 12, DomainId @ 16, DomainMembers @ 20,
);
zeroed_default!(PEP_PPM_QUERY_PERF_CAPABILITIES {
    HighestPerformance: 0,
    NominalPerformance: 0,
    LowestNonlinearPerformance: 0,
    LowestPerformance: 0,
    DomainId: 0,
    DomainMembers: 0,
});

/// Pointer to a [`PEP_PPM_QUERY_PERF_CAPABILITIES`].
pub type PPEP_PPM_QUERY_PERF_CAPABILITIES = *mut PEP_PPM_QUERY_PERF_CAPABILITIES;

/// `PERFORMANCE_LIMIT_THERMAL`: [`PEP_PPM_PERF_CONSTRAINTS::LimitReasons`] bit.
pub const PERFORMANCE_LIMIT_THERMAL: ULONG = 1 << 0;
/// `PERFORMANCE_LIMIT_POWER`: [`PEP_PPM_PERF_CONSTRAINTS::LimitReasons`] bit.
pub const PERFORMANCE_LIMIT_POWER: ULONG = 1 << 1;
/// `PERFORMANCE_LIMIT_DOMAIN_DEPENDENCY`: [`PEP_PPM_PERF_CONSTRAINTS::LimitReasons`] bit.
pub const PERFORMANCE_LIMIT_DOMAIN_DEPENDENCY: ULONG = 1 << 2;

/// `PEP_PPM_PERF_CONSTRAINTS` (structure tag `_PEP_PPM_QUERY_PERF_CONSTRAINTS`): payload of
/// [`PEP_NOTIFY_PPM_PERF_CONSTRAINTS`].
///
/// [`PEP_NOTIFY_PPM_PERF_CONSTRAINTS`]: super::PEP_NOTIFY_PPM_PERF_CONSTRAINTS
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_CONSTRAINTS {
    /// Out: the performance level currently guaranteed.
    pub GuaranteedPerformanceLimit: ULONG,
    /// Out: `PERFORMANCE_LIMIT_*` bits explaining a limit below nominal.
    pub LimitReasons: ULONG,
}
assert_layout!(
    PEP_PPM_PERF_CONSTRAINTS, size 8, align 4,
    GuaranteedPerformanceLimit @ 0, LimitReasons @ 4,
);
zeroed_default!(PEP_PPM_PERF_CONSTRAINTS { GuaranteedPerformanceLimit: 0, LimitReasons: 0 });

/// Pointer to a [`PEP_PPM_PERF_CONSTRAINTS`].
pub type PPEP_PPM_PERF_CONSTRAINTS = *mut PEP_PPM_PERF_CONSTRAINTS;

/// `PEP_PPM_PERF_SET`: payload of [`PEP_NOTIFY_PPM_PERF_SET`] (all in).
///
/// [`PEP_NOTIFY_PPM_PERF_SET`]: super::PEP_NOTIFY_PPM_PERF_SET
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_SET {
    /// Minimum performance level.
    pub MinimumPerformance: ULONG,
    /// Maximum performance level.
    pub MaximumPerformance: ULONG,
    /// Desired performance level.
    pub DesiredPerformance: ULONG,
    /// Time window, milliseconds.
    pub TimeWindow: ULONG,
    /// Performance tolerance.
    pub PerformanceTolerance: ULONG,
}
assert_layout!(
    PEP_PPM_PERF_SET, size 20, align 4,
    MinimumPerformance @ 0, MaximumPerformance @ 4, DesiredPerformance @ 8, TimeWindow @ 12,
    PerformanceTolerance @ 16,
);
zeroed_default!(PEP_PPM_PERF_SET {
    MinimumPerformance: 0,
    MaximumPerformance: 0,
    DesiredPerformance: 0,
    TimeWindow: 0,
    PerformanceTolerance: 0,
});

/// Pointer to a [`PEP_PPM_PERF_SET`].
pub type PPEP_PPM_PERF_SET = *mut PEP_PPM_PERF_SET;

/// `PEP_PPM_PERF_SET_STATE`: payload of [`PEP_NOTIFY_PPM_PERF_SET_STATE`] (all in).
///
/// Older kits end after `DesiredPerformanceState` (3 bytes); newer kits add
/// `EnergyPerformancePreference` (4 bytes). Only read the last member if the caller's buffer
/// has it.
///
/// [`PEP_NOTIFY_PPM_PERF_SET_STATE`]: super::PEP_NOTIFY_PPM_PERF_SET_STATE
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_SET_STATE {
    /// Minimum discrete performance state.
    pub MinimumPerformanceState: UCHAR,
    /// Maximum discrete performance state.
    pub MaximumPerformanceState: UCHAR,
    /// Desired discrete performance state.
    pub DesiredPerformanceState: UCHAR,
    /// Energy/performance preference.
    pub EnergyPerformancePreference: UCHAR,
}
assert_layout!(
    PEP_PPM_PERF_SET_STATE, size 4, align 1,
    MinimumPerformanceState @ 0, MaximumPerformanceState @ 1, DesiredPerformanceState @ 2,
    EnergyPerformancePreference @ 3,
);
zeroed_default!(PEP_PPM_PERF_SET_STATE {
    MinimumPerformanceState: 0,
    MaximumPerformanceState: 0,
    DesiredPerformanceState: 0,
    EnergyPerformancePreference: 0,
});

/// Pointer to a [`PEP_PPM_PERF_SET_STATE`].
pub type PPEP_PPM_PERF_SET_STATE = *mut PEP_PPM_PERF_SET_STATE;

/// `PROCESSOR_DOMAIN_COORDIANTION_SW_ALL` (0, sic: the header's spelling): software
/// coordinates, all processors of the domain are set together.
pub const PROCESSOR_DOMAIN_COORDIANTION_SW_ALL: UCHAR = 0x00;
/// `PROCESSOR_DOMAIN_COORDIANTION_SW_ANY` (1, sic): software coordinates, any processor of the
/// domain may set the domain.
pub const PROCESSOR_DOMAIN_COORDIANTION_SW_ANY: UCHAR = 0x01;
/// `PROCESSOR_DOMAIN_COORDIANTION_HW_ALL` (2, sic): hardware coordinates per-processor
/// requests.
pub const PROCESSOR_DOMAIN_COORDIANTION_HW_ALL: UCHAR = 0x02;
/// Correctly spelled alias of [`PROCESSOR_DOMAIN_COORDIANTION_SW_ALL`] (newer kits).
pub const PROCESSOR_DOMAIN_COORDINATION_SW_ALL: UCHAR = PROCESSOR_DOMAIN_COORDIANTION_SW_ALL;
/// Correctly spelled alias of [`PROCESSOR_DOMAIN_COORDIANTION_SW_ANY`] (newer kits).
pub const PROCESSOR_DOMAIN_COORDINATION_SW_ANY: UCHAR = PROCESSOR_DOMAIN_COORDIANTION_SW_ANY;
/// Correctly spelled alias of [`PROCESSOR_DOMAIN_COORDIANTION_HW_ALL`] (newer kits).
pub const PROCESSOR_DOMAIN_COORDINATION_HW_ALL: UCHAR = PROCESSOR_DOMAIN_COORDIANTION_HW_ALL;

/// `PEP_PPM_QUERY_PLATFORM_STATES`: payload of [`PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES`].
///
/// [`PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES`]: super::PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_PLATFORM_STATES {
    /// Out: how many platform idle states the PEP supports (0: none; it then never selects
    /// one).
    pub PlatformStateCount: ULONG,
}
assert_layout!(PEP_PPM_QUERY_PLATFORM_STATES, size 4, align 4, PlatformStateCount @ 0);
zeroed_default!(PEP_PPM_QUERY_PLATFORM_STATES { PlatformStateCount: 0 });
/// Pointer to a [`PEP_PPM_QUERY_PLATFORM_STATES`].
pub type PPEP_PPM_QUERY_PLATFORM_STATES = *mut PEP_PPM_QUERY_PLATFORM_STATES;

/// `PEP_PPM_QUERY_VETO_REASONS`: payload of [`PEP_NOTIFY_PPM_QUERY_VETO_REASONS`].
///
/// [`PEP_NOTIFY_PPM_QUERY_VETO_REASONS`]: super::PEP_NOTIFY_PPM_QUERY_VETO_REASONS
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_VETO_REASONS {
    /// Out: the veto reasons `1..=VetoReasonCount` the PEP may use (0: it vetoes nothing).
    pub VetoReasonCount: ULONG,
}
assert_layout!(PEP_PPM_QUERY_VETO_REASONS, size 4, align 4, VetoReasonCount @ 0);
zeroed_default!(PEP_PPM_QUERY_VETO_REASONS { VetoReasonCount: 0 });
/// Pointer to a [`PEP_PPM_QUERY_VETO_REASONS`].
pub type PPEP_PPM_QUERY_VETO_REASONS = *mut PEP_PPM_QUERY_VETO_REASONS;

/// `PEP_PPM_QUERY_DOMAIN_INFO`: payload of [`PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO`].
///
/// [`PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO`]: super::PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_DOMAIN_INFO {
    /// In: the domain.
    pub DomainId: ULONG,
    /// Out: a `PROCESSOR_DOMAIN_COORDIANTION_*` value.
    pub CoordinationType: UCHAR,
    /// Out (`HW_ALL` only): the platform ignores requests of idle processors.
    pub IdleProcessorsDiscounted: BOOLEAN,
    /// Out: the PEP supports scheduler-directed transitions for this domain.
    pub SchedulerDirectedTransitionsSupported: BOOLEAN,
    /// Out: performance changes must run on the processor that changes (newer kits; padding
    /// in older ones).
    pub AffinitizePerfSet: BOOLEAN,
    /// Out: worst-case transition latency, 100 ns units.
    pub WorstCaseTransitionLatency: ULONG,
    /// Out: worst-case transition overhead, 100 ns units.
    pub WorstCaseTransitionOverhead: ULONG,
}
assert_layout!(
    PEP_PPM_QUERY_DOMAIN_INFO, size 16, align 4,
    DomainId @ 0, CoordinationType @ 4, IdleProcessorsDiscounted @ 5,
    SchedulerDirectedTransitionsSupported @ 6, AffinitizePerfSet @ 7,
    WorstCaseTransitionLatency @ 8, WorstCaseTransitionOverhead @ 12,
);
zeroed_default!(PEP_PPM_QUERY_DOMAIN_INFO {
    DomainId: 0,
    CoordinationType: PROCESSOR_DOMAIN_COORDIANTION_SW_ALL,
    IdleProcessorsDiscounted: FALSE,
    SchedulerDirectedTransitionsSupported: FALSE,
    AffinitizePerfSet: FALSE,
    WorstCaseTransitionLatency: 0,
    WorstCaseTransitionOverhead: 0,
});

/// Pointer to a [`PEP_PPM_QUERY_DOMAIN_INFO`].
pub type PPEP_PPM_QUERY_DOMAIN_INFO = *mut PEP_PPM_QUERY_DOMAIN_INFO;

/// `PEP_PROCESSOR_PERF_STATE`: one discrete performance state.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PROCESSOR_PERF_STATE {
    /// Performance level, on the scale of [`PEP_PPM_QUERY_PERF_CAPABILITIES`].
    pub Performance: ULONG,
    /// Frequency, MHz.
    pub Frequency: ULONG,
    /// Reserved.
    pub Reserved: [ULONG; 4],
}
assert_layout!(
    PEP_PROCESSOR_PERF_STATE, size 24, align 4,
    Performance @ 0, Frequency @ 4, Reserved @ 8,
);
zeroed_default!(PEP_PROCESSOR_PERF_STATE { Performance: 0, Frequency: 0, Reserved: [0; 4] });

/// Pointer to a [`PEP_PROCESSOR_PERF_STATE`].
pub type PPEP_PROCESSOR_PERF_STATE = *mut PEP_PROCESSOR_PERF_STATE;

/// `PEP_PPM_QUERY_DISCRETE_PERF_STATES`: payload of
/// [`PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES`].
///
/// [`PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES`]: super::PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_QUERY_DISCRETE_PERF_STATES {
    /// In: number of elements of `States`.
    pub Count: ULONG,
    /// Out: the states, fastest first.
    pub States: PPEP_PROCESSOR_PERF_STATE,
}
assert_layout!(PEP_PPM_QUERY_DISCRETE_PERF_STATES, size 16, align 8, Count @ 0, States @ 8);
zeroed_default!(PEP_PPM_QUERY_DISCRETE_PERF_STATES { Count: 0, States: core::ptr::null_mut() });

/// Pointer to a [`PEP_PPM_QUERY_DISCRETE_PERF_STATES`].
pub type PPEP_PPM_QUERY_DISCRETE_PERF_STATES = *mut PEP_PPM_QUERY_DISCRETE_PERF_STATES;

/// `PEP_PPM_ENTER_SYSTEM_STATE`: payload of [`PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE`].
///
/// [`PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE`]: super::PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_ENTER_SYSTEM_STATE {
    /// In: the system state being entered.
    pub TargetState: SYSTEM_POWER_STATE,
}
assert_layout!(PEP_PPM_ENTER_SYSTEM_STATE, size 4, align 4, TargetState @ 0);
zeroed_default!(PEP_PPM_ENTER_SYSTEM_STATE { TargetState: PowerSystemUnspecified });

/// Pointer to a [`PEP_PPM_ENTER_SYSTEM_STATE`].
pub type PPEP_PPM_ENTER_SYSTEM_STATE = *mut PEP_PPM_ENTER_SYSTEM_STATE;

/// `PEP_PPM_RESUME_FROM_SYSTEM_STATE`: payload of [`PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE`].
///
/// [`PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE`]: super::PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_RESUME_FROM_SYSTEM_STATE {
    /// In: "the power state that the system is entering" (its reference page): the state the
    /// resume enters, not the sleep state it leaves.
    pub TargetState: SYSTEM_POWER_STATE,
}
assert_layout!(PEP_PPM_RESUME_FROM_SYSTEM_STATE, size 4, align 4, TargetState @ 0);
zeroed_default!(PEP_PPM_RESUME_FROM_SYSTEM_STATE { TargetState: PowerSystemUnspecified });

/// Pointer to a [`PEP_PPM_RESUME_FROM_SYSTEM_STATE`].
pub type PPEP_PPM_RESUME_FROM_SYSTEM_STATE = *mut PEP_PPM_RESUME_FROM_SYSTEM_STATE;

/// `PEP_PPM_PERF_CHECK_COMPLETE`: payload of [`PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE`].
///
/// [`PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE`]: super::PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PEP_PPM_PERF_CHECK_COMPLETE {
    /// In: the evaluation time of the completed performance check.
    pub EvaluationTime: ULONG64,
}
assert_layout!(PEP_PPM_PERF_CHECK_COMPLETE, size 8, align 8, EvaluationTime @ 0);
zeroed_default!(PEP_PPM_PERF_CHECK_COMPLETE { EvaluationTime: 0 });

/// Pointer to a [`PEP_PPM_PERF_CHECK_COMPLETE`].
pub type PPEP_PPM_PERF_CHECK_COMPLETE = *mut PEP_PPM_PERF_CHECK_COMPLETE;
