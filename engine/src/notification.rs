//! The notification table: every notification id PoFx can send this PEP, one row each.
//!
//! Each DPM and PPM id of `pepfx.h` (and the `pep_x.h`-only ids the documentation lists), with
//! its payload structure, the IRQL PoFx sends it at, what the PEP answers, and the bytes it may
//! write. Everything that restates a notification derives from this one table: the engine's
//! dispatch ([`crate::ppm`], [`crate::dpm`]) and the payload typing ([`crate::payload`]) expand
//! `table!`; the PoFx caller's names and payloads, the fuzz harness's buffer sizes and output
//! ranges, the emulator's `notifications.documented_answers` check and `docs/notifications.md`
//! (with the documentation each answer follows, which lives with its generator,
//! `engine/tests/notifications.rs`) read [`DPM`] and [`PPM`].
//!
//! The rule the answers follow: where the documentation says a PEP must handle a notification,
//! it is handled as documented; where it documents how to decline (an output field), the PEP
//! declines that way; where it is silent, the answer is the one that can neither crash the
//! system nor report wrong data.

use core::ops::Range;

use crate::abi::{
    PEP_ABANDON_DEVICE, PEP_DEVICE_POWER_STATE, PEP_DEVICE_STARTED, PEP_DPM_ABANDON_DEVICE,
    PEP_DPM_COMPONENT_ACTIVE, PEP_DPM_COMPONENT_IDLE_CONSTRAINTS, PEP_DPM_DEVICE_IDLE_CONSTRAINTS,
    PEP_DPM_DEVICE_POWER_STATE, PEP_DPM_DEVICE_STARTED, PEP_DPM_LOW_POWER_EPOCH,
    PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE, PEP_DPM_POWER_CONTROL_COMPLETE,
    PEP_DPM_POWER_CONTROL_REQUEST, PEP_DPM_PREPARE_DEVICE,
    PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES, PEP_DPM_QUERY_COMPONENT_PERF_SET,
    PEP_DPM_QUERY_COMPONENT_PERF_SET_NAME, PEP_DPM_QUERY_COMPONENT_PERF_STATES,
    PEP_DPM_QUERY_CURRENT_COMPONENT_PERF_STATE, PEP_DPM_QUERY_DEBUGGER_TRANSITION_REQUIREMENTS,
    PEP_DPM_QUERY_SOC_SUBSYSTEM, PEP_DPM_QUERY_SOC_SUBSYSTEM_BLOCKING_TIME,
    PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT, PEP_DPM_QUERY_SOC_SUBSYSTEM_METADATA,
    PEP_DPM_REGISTER_COMPONENT_PERF_STATES, PEP_DPM_REGISTER_CRASHDUMP_DEVICE,
    PEP_DPM_REGISTER_DEBUGGER, PEP_DPM_REGISTER_DEVICE, PEP_DPM_REQUEST_COMPONENT_PERF_STATE,
    PEP_DPM_RESET_SOC_SUBSYSTEM_ACCOUNTING, PEP_DPM_SYSTEM_LATENCY_UPDATE,
    PEP_DPM_UNREGISTER_DEVICE, PEP_DPM_WORK, PEP_NOTIFY_COMPONENT_IDLE_STATE,
    PEP_NOTIFY_PPM_CST_STATES, PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE,
    PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, PEP_NOTIFY_PPM_FEEDBACK_READ, PEP_NOTIFY_PPM_IDLE_CANCEL,
    PEP_NOTIFY_PPM_IDLE_COMPLETE, PEP_NOTIFY_PPM_IDLE_EXECUTE, PEP_NOTIFY_PPM_IDLE_PRE_EXECUTE,
    PEP_NOTIFY_PPM_IDLE_SELECT, PEP_NOTIFY_PPM_INITIATE_WAKE, PEP_NOTIFY_PPM_IS_PROCESSOR_HALTED,
    PEP_NOTIFY_PPM_LPI_COMPLETE, PEP_NOTIFY_PPM_LPI_COORDINATED_STATES,
    PEP_NOTIFY_PPM_LPI_PRE_EXECUTE, PEP_NOTIFY_PPM_LPI_PROCESSOR_STATES,
    PEP_NOTIFY_PPM_LPI_SUPPORTED, PEP_NOTIFY_PPM_PARK_MASK, PEP_NOTIFY_PPM_PARK_SELECTION,
    PEP_NOTIFY_PPM_PARK_SELECTION_V2, PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE,
    PEP_NOTIFY_PPM_PERF_CONSTRAINTS, PEP_NOTIFY_PPM_PERF_SET, PEP_NOTIFY_PPM_PERF_SET_STATE,
    PEP_NOTIFY_PPM_QUERY_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_COORDINATED_DEPENDENCY,
    PEP_NOTIFY_PPM_QUERY_COORDINATED_STATE_NAME, PEP_NOTIFY_PPM_QUERY_COORDINATED_STATES,
    PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES, PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO,
    PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, PEP_NOTIFY_PPM_QUERY_IDLE_STATES,
    PEP_NOTIFY_PPM_QUERY_IDLE_STATES_V2, PEP_NOTIFY_PPM_QUERY_LP_SETTINGS,
    PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE,
    PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE_RESIDENCIES, PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES,
    PEP_NOTIFY_PPM_QUERY_PROCESSOR_STATE_NAME, PEP_NOTIFY_PPM_QUERY_VETO_REASON,
    PEP_NOTIFY_PPM_QUERY_VETO_REASONS, PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE,
    PEP_NOTIFY_PPM_TEST_IDLE_STATE, PEP_NOTIFY_PPM_UPDATE_PLATFORM_STATE,
    PEP_POWER_CONTROL_REQUEST, PEP_PPM_ENTER_SYSTEM_STATE, PEP_PPM_FEEDBACK_READ,
    PEP_PPM_PERF_CHECK_COMPLETE, PEP_PPM_PERF_CONSTRAINTS, PEP_PPM_PERF_SET,
    PEP_PPM_PERF_SET_STATE, PEP_PPM_QUERY_CAPABILITIES, PEP_PPM_QUERY_DISCRETE_PERF_STATES,
    PEP_PPM_QUERY_DOMAIN_INFO, PEP_PPM_QUERY_FEEDBACK_COUNTERS, PEP_PPM_QUERY_PERF_CAPABILITIES,
    PEP_PPM_QUERY_PLATFORM_STATES, PEP_PPM_QUERY_VETO_REASONS, PEP_PPM_RESUME_FROM_SYSTEM_STATE,
    PEP_PREPARE_DEVICE, PEP_REGISTER_CRASHDUMP_DEVICE, PEP_REGISTER_DEVICE_V2,
    PEP_UNREGISTER_DEVICE, PEP_WORK, STATUS_NOT_IMPLEMENTED, TRUE, ULONG,
};

/// `PASSIVE_LEVEL`.
pub const PASSIVE_LEVEL: u8 = 0;
/// `APC_LEVEL` (the documentation's "IRQL < `DISPATCH_LEVEL`").
pub const APC_LEVEL: u8 = 1;
/// `DISPATCH_LEVEL`.
pub const DISPATCH_LEVEL: u8 = 2;
/// `HIGH_LEVEL` (x64 and ARM64).
///
/// Also the IRQL of a row sent with interrupts disabled ("called with interrupts disabled"),
/// "at any IRQL", or with no IRQL documented beyond `AcceptProcessorNotification`'s own bound.
/// (`FEEDBACK_READ` is `DISPATCH_LEVEL`: it "may be sent with interrupts disabled", which its
/// path tolerates, but is documented at dispatch.)
pub const HIGH_LEVEL: u8 = 15;

/// Which callback receives the notification (the two id spaces overlap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callback {
    /// `AcceptDeviceNotification` (`PEP_DPM_*`).
    Dpm,
    /// `AcceptProcessorNotification` (`PEP_NOTIFY_PPM_*`).
    Ppm,
}

/// What the PEP answers (for a live handle of its own, where the notification has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// TRUE, handled: the structure's outputs filled in, or the state it reports updated.
    Handled,
    /// TRUE, nothing written (the notification only informs).
    Acknowledged,
    /// TRUE, with the output fields saying no, as documented.
    DeclinedInOutputs,
    /// FALSE, nothing written.
    Refused,
}

impl Answer {
    /// What the callback returns.
    #[must_use]
    pub const fn returns(self) -> bool {
        !matches!(self, Self::Refused)
    }

    /// How `docs/notifications.md` names it.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Handled => "TRUE, handled",
            Self::Acknowledged => "TRUE, nothing written",
            Self::DeclinedInOutputs => "TRUE, declined in its outputs",
            Self::Refused => "FALSE",
        }
    }
}

/// Bytes the PEP writes into a notification's structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    /// Offset in the structure.
    pub offset: usize,
    /// The bytes written there (little-endian, as on x64 and ARM64).
    pub bytes: &'static [u8],
}

/// A notification's documented data structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Structure {
    /// The C name.
    pub name: &'static str,
    /// Its size in bytes (for `PEP_PPM_QUERY_FEEDBACK_COUNTERS`, with one descriptor: the
    /// buffer holds `Count`).
    pub size: usize,
}

/// One notification id and the PEP's answer to it.
#[derive(Clone, Debug)]
pub struct Notification {
    /// The callback that receives it.
    pub callback: Callback,
    /// The `Notification` argument.
    pub id: ULONG,
    /// The header's name.
    pub name: &'static str,
    /// The structure `Data` points to, where the engine's ABI defines it (`None`: no structure
    /// documented, or one the ABI leaves out because the engine never reads it).
    pub payload: Option<Structure>,
    /// The highest IRQL PoFx sends it at ([`HIGH_LEVEL`] also for "interrupts disabled").
    pub irql: u8,
    /// What the PEP answers.
    pub answer: Answer,
    /// The engine function that handles it (in [`crate::ppm`] or [`crate::dpm`]); `None` when
    /// it is refused.
    pub handler: Option<&'static str>,
    /// The bytes of the structure the PEP may write when it returns TRUE; empty when it writes
    /// none (beyond the structure, only `QUERY_FEEDBACK_COUNTERS`' `Count` descriptors).
    pub writes: Range<usize>,
    /// For a fixed answer ([`Self::fixed`]): every byte the PEP writes into the structure for
    /// a live handle of its own; empty when it writes nothing.
    pub outputs: &'static [Output],
}

impl Notification {
    /// Whether the answer is the same on every machine — a refusal, an acknowledgement, a
    /// decline in the outputs, or a handled notification with fixed [`Self::outputs`] — so that
    /// a caller can check it from the table alone (the queries, whose outputs describe the
    /// machine, have their own tests and checks).
    #[must_use]
    pub const fn fixed(&self) -> bool {
        !matches!(self.answer, Answer::Handled) || !self.outputs.is_empty()
    }

    /// The name without its class prefix (`FEEDBACK_READ`, `PREPARE_DEVICE`).
    #[must_use]
    pub fn short_name(&self) -> &'static str {
        let prefix = match self.callback {
            Callback::Dpm => "PEP_DPM_",
            Callback::Ppm => "PEP_NOTIFY_PPM_",
        };
        self.name.strip_prefix(prefix).unwrap_or(self.name)
    }
}

/// The table, handed to `$then!` (with the tokens after `$then`, in parentheses) as
/// `($($arg)*) dpm: [rows] ppm: [rows]`, each row, in id order,
/// `(ID, [payload], {handler}, Answer, IRQL, writes, [offset => bytes, ...])`:
///
/// - `ID`: the header's constant;
/// - `[payload]`: the ABI structure `Data` points to, or `[]`;
/// - `{handler}`: the engine's function for it, in [`crate::dpm`] or [`crate::ppm`] (`{}`: the
///   notification is refused; `{hot f}`: handled inline, before any other is looked up);
/// - `Answer`: an [`Answer`] variant; `IRQL`: the highest IRQL PoFx sends it at;
/// - `writes`: the bytes of the structure the PEP may write; the last: [`Notification::outputs`].
///
/// Sources of the IRQLs: `kernel/dpm-notifications.md` and `kernel/ppm-notifications.md` of
/// MicrosoftDocs/windows-driver-docs. `DEVICE_POWER_STATE` is `DISPATCH_LEVEL`, not the
/// conceptual page's `PASSIVE_LEVEL`: `AcceptDeviceNotification` "can be called at IRQL <=
/// `DISPATCH_LEVEL`" and Microsoft's i.MX6 PEP asserts no more for it (`docs/notifications.md`).
macro_rules! table {
    ($then:ident $($arg:tt)*) => { $then! { ($($arg)*)
        dpm: [
        (PEP_DPM_PREPARE_DEVICE, [PEP_PREPARE_DEVICE], {prepare_device}, Handled, PASSIVE_LEVEL, 8..9, []),
        (PEP_DPM_ABANDON_DEVICE, [PEP_ABANDON_DEVICE], {abandon_device}, Handled, PASSIVE_LEVEL, 8..9, []),
        (PEP_DPM_REGISTER_DEVICE, [PEP_REGISTER_DEVICE_V2], {register_device}, Handled, PASSIVE_LEVEL, 24..36, []),
        (PEP_DPM_UNREGISTER_DEVICE, [PEP_UNREGISTER_DEVICE], {unregister_device}, Handled, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_DEVICE_POWER_STATE, [PEP_DEVICE_POWER_STATE], {device_power_state}, Acknowledged, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_COMPONENT_ACTIVE, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_WORK, [PEP_WORK], {work}, DeclinedInOutputs, PASSIVE_LEVEL, 8..9, [8 => [0]]),
        (PEP_DPM_POWER_CONTROL_REQUEST, [PEP_POWER_CONTROL_REQUEST], {power_control_request}, DeclinedInOutputs, DISPATCH_LEVEL, 48..60, [48 => [0; 8], 56 => STATUS_NOT_IMPLEMENTED.to_le_bytes()]),
        (PEP_DPM_POWER_CONTROL_COMPLETE, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_SYSTEM_LATENCY_UPDATE, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_DEVICE_STARTED, [PEP_DEVICE_STARTED], {device_started}, Handled, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE, [PEP_NOTIFY_COMPONENT_IDLE_STATE], {component_idle_state}, Handled, DISPATCH_LEVEL, 17..18, [17 => [TRUE]]),
        (PEP_DPM_REGISTER_DEBUGGER, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_LOW_POWER_EPOCH, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_REGISTER_CRASHDUMP_DEVICE, [PEP_REGISTER_CRASHDUMP_DEVICE], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_DPM_DEVICE_IDLE_CONSTRAINTS, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_COMPONENT_IDLE_CONSTRAINTS, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_COMPONENT_PERF_SET, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_COMPONENT_PERF_SET_NAME, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_COMPONENT_PERF_STATES, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_REGISTER_COMPONENT_PERF_STATES, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_REQUEST_COMPONENT_PERF_STATE, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_CURRENT_COMPONENT_PERF_STATE, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_DEBUGGER_TRANSITION_REQUIREMENTS, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_SOC_SUBSYSTEM_COUNT, [], {}, Refused, APC_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_SOC_SUBSYSTEM, [], {}, Refused, APC_LEVEL, 0..0, []),
        (PEP_DPM_RESET_SOC_SUBSYSTEM_ACCOUNTING, [], {}, Refused, APC_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_SOC_SUBSYSTEM_BLOCKING_TIME, [], {}, Refused, APC_LEVEL, 0..0, []),
        (PEP_DPM_QUERY_SOC_SUBSYSTEM_METADATA, [], {}, Refused, APC_LEVEL, 0..0, []),
        ]
        ppm: [
        (PEP_NOTIFY_PPM_QUERY_CAPABILITIES, [PEP_PPM_QUERY_CAPABILITIES], {query_capabilities}, Handled, PASSIVE_LEVEL, 0..12, []),
        (PEP_NOTIFY_PPM_QUERY_IDLE_STATES, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_IDLE_SELECT, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_IDLE_CANCEL, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_IDLE_EXECUTE, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_IDLE_COMPLETE, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_IS_PROCESSOR_HALTED, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_INITIATE_WAKE, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_FEEDBACK_COUNTERS, [PEP_PPM_QUERY_FEEDBACK_COUNTERS], {query_feedback_counters}, Handled, PASSIVE_LEVEL, 4..12, []),
        (PEP_NOTIFY_PPM_FEEDBACK_READ, [PEP_PPM_FEEDBACK_READ], {hot feedback_read}, Handled, DISPATCH_LEVEL, 8..24, []),
        (PEP_NOTIFY_PPM_QUERY_PERF_CAPABILITIES, [PEP_PPM_QUERY_PERF_CAPABILITIES], {query_perf_capabilities}, Handled, PASSIVE_LEVEL, 0..24, []),
        (PEP_NOTIFY_PPM_PERF_CONSTRAINTS, [PEP_PPM_PERF_CONSTRAINTS], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_PERF_SET, [PEP_PPM_PERF_SET], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_PARK_SELECTION, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_CST_STATES, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_PLATFORM_STATES, [PEP_PPM_QUERY_PLATFORM_STATES], {query_platform_states}, Handled, PASSIVE_LEVEL, 0..4, []),
        (PEP_NOTIFY_PPM_QUERY_LP_SETTINGS, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_IDLE_STATES_V2, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_TEST_IDLE_STATE, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_IDLE_PRE_EXECUTE, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_UPDATE_PLATFORM_STATE, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_PLATFORM_STATE_RESIDENCIES, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_VETO_REASONS, [PEP_PPM_QUERY_VETO_REASONS], {query_veto_reasons}, Handled, PASSIVE_LEVEL, 0..4, []),
        (PEP_NOTIFY_PPM_QUERY_VETO_REASON, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_ENUMERATE_BOOT_VETOES, [], {enumerate_boot_vetoes}, Acknowledged, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_COORDINATED_STATE_NAME, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_PROCESSOR_STATE_NAME, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_COORDINATED_STATES, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_COORDINATED_DEPENDENCY, [], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_PARK_SELECTION_V2, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_PARK_MASK, [], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_PERF_CHECK_COMPLETE, [PEP_PPM_PERF_CHECK_COMPLETE], {perf_check_complete}, Acknowledged, DISPATCH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_LPI_SUPPORTED, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_LPI_PROCESSOR_STATES, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_LPI_COORDINATED_STATES, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_LPI_PRE_EXECUTE, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_LPI_COMPLETE, [], {}, Refused, HIGH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_ENTER_SYSTEM_STATE, [PEP_PPM_ENTER_SYSTEM_STATE], {enter_system_state}, Handled, DISPATCH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_RESUME_FROM_SYSTEM_STATE, [PEP_PPM_RESUME_FROM_SYSTEM_STATE], {resume_from_system_state}, Handled, DISPATCH_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_DISCRETE_PERF_STATES, [PEP_PPM_QUERY_DISCRETE_PERF_STATES], {}, Refused, PASSIVE_LEVEL, 0..0, []),
        (PEP_NOTIFY_PPM_QUERY_DOMAIN_INFO, [PEP_PPM_QUERY_DOMAIN_INFO], {query_domain_info}, Handled, PASSIVE_LEVEL, 4..16, []),
        (PEP_NOTIFY_PPM_PERF_SET_STATE, [PEP_PPM_PERF_SET_STATE], {}, Refused, DISPATCH_LEVEL, 0..0, []),
        ]
    } };
}
pub(crate) use table;

/// One class's dispatch: `table!(handled dpm|ppm id, (args))` expands to
/// `match id { ID => handler(args), ..., _ => false }`, one arm per row of the class that names a
/// handler (but a `{hot …}` one, which the caller tests before).
macro_rules! handled {
    ((dpm $id:expr, $args:tt) dpm: [$($dpm:tt),* $(,)?] ppm: [$($ppm:tt),* $(,)?]) => {
        crate::notification::handled!(@ $id $args [] $($dpm)*)
    };
    ((ppm $id:expr, $args:tt) dpm: [$($dpm:tt),* $(,)?] ppm: [$($ppm:tt),* $(,)?]) => {
        crate::notification::handled!(@ $id $args [] $($ppm)*)
    };
    (@ $id:tt $args:tt [$($arms:tt)*]) => {
        match $id {
            $($arms)*
            _ => false,
        }
    };
    (@ $id:tt $args:tt [$($arms:tt)*] ($row:ident, $payload:tt, {$handler:ident}, $($rest_of_row:tt)*)
     $($rest:tt)*) => {
        crate::notification::handled!(@ $id $args [$($arms)* crate::abi::$row => $handler $args,] $($rest)*)
    };
    (@ $id:tt $args:tt [$($arms:tt)*] $skipped:tt $($rest:tt)*) => {
        crate::notification::handled!(@ $id $args [$($arms)*] $($rest)*)
    };
}
pub(crate) use handled;

/// A row's payload as a [`Structure`].
macro_rules! structure {
    () => {
        None
    };
    ($payload:ident) => {
        Some(Structure { name: stringify!($payload), size: size_of::<$payload>() })
    };
}

/// A row's handler as its name.
macro_rules! handler {
    () => {
        None
    };
    (hot $handler:ident) => {
        Some(stringify!($handler))
    };
    ($handler:ident) => {
        Some(stringify!($handler))
    };
}

/// One [`Notification`] of `$callback` from a row of [`table!`].
macro_rules! row {
    ($callback:ident ($id:ident, [$($payload:ident)?], {$($handler:tt)*}, $answer:ident,
     $irql:ident, $start:literal..$end:literal, [$($offset:literal => $bytes:expr),* $(,)?])) => {
        Notification {
            callback: Callback::$callback,
            id: $id,
            name: stringify!($id),
            payload: structure!($($payload)?),
            irql: $irql,
            answer: Answer::$answer,
            handler: handler!($($handler)*),
            writes: $start..$end,
            outputs: &[$(Output { offset: $offset, bytes: &$bytes }),*],
        }
    };
}

/// The two tables of [`table!`]'s rows.
macro_rules! rows {
    (() dpm: [$($dpm:tt),* $(,)?] ppm: [$($ppm:tt),* $(,)?]) => {
        /// Every DPM notification id the documentation lists, in id order.
        pub const DPM: &[Notification] = &[$(row!(Dpm $dpm)),*];
        /// Every PPM notification id of `pepfx.h` and `pep_x.h` (0x01–0x2B), in id order.
        pub const PPM: &[Notification] = &[$(row!(Ppm $ppm)),*];
    };
}

table!(rows);

// A row names a handler exactly when its answer is TRUE: the dispatch expands from the handlers.
const _: () = {
    let mut rest = DPM;
    let mut other = PPM;
    while let [row, tail @ ..] = rest {
        assert!(row.handler.is_some() == row.answer.returns(), "a row's handler and answer");
        rest = tail;
        if rest.is_empty() {
            rest = other;
            other = &[];
        }
    }
};

/// The rows of `callback`.
#[must_use]
pub const fn rows(callback: Callback) -> &'static [Notification] {
    match callback {
        Callback::Dpm => DPM,
        Callback::Ppm => PPM,
    }
}

/// The row of notification `id` of `callback`, if the documentation defines it.
#[must_use]
pub const fn find(callback: Callback, id: ULONG) -> Option<&'static Notification> {
    let mut rest = rows(callback);
    while let [row, tail @ ..] = rest {
        if row.id == id {
            return Some(row);
        }
        rest = tail;
    }
    None
}

/// The highest IRQL PoFx sends notification `id` of `callback` at, if the documentation
/// defines the id: [`PASSIVE_LEVEL`], [`APC_LEVEL`], [`DISPATCH_LEVEL`] or [`HIGH_LEVEL`].
#[must_use]
pub const fn irql_of(callback: Callback, id: ULONG) -> Option<u8> {
    match find(callback, id) {
        Some(row) => Some(row.irql),
        None => None,
    }
}
