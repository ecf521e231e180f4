//! [`Scenario`]: the whole validated description, every table's spec together with the
//! kernel `DriverEntry` meets ([`super::kernel`]).

use super::kernel::KernelSpec;
use super::presence::Presence;
use super::types::{ConfigSpec, Event, Phase, PlatformSpec, PofxSpec};

/// A validated scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: Option<String>,
    /// `[platform]`.
    pub platform: PlatformSpec,
    /// `[pofx]`.
    pub pofx: PofxSpec,
    /// `[config]`.
    pub config: ConfigSpec,
    /// `[[phase]]`, in file order.
    pub phases: Vec<Phase>,
    /// `[[event]]`, in file order.
    pub events: Vec<Event>,
    /// `[registry]` (with `[config]`'s values), `[install]` and `[[fault]]`: the kernel
    /// `DriverEntry` meets.
    pub kernel: KernelSpec,
    /// Which processors are present when (from `events`), indexed once when the scenario is
    /// read: the presence questions the checks and the runtime ask cost a binary search.
    pub(super) presence: Presence,
}
