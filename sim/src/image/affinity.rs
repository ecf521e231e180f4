//! Where an image run's two processes run, and so how the turn passes between them
//! ([`Handoff`]).
//!
//! The two processes never run at once: each command and each host request is a round trip in
//! which one side waits while the other works. Left to the scheduler, every round trip wakes
//! the other process on the other processor, an inter-processor interrupt that on a virtual
//! machine costs more than the work itself (`big-2048` on the image, 2-core VM: 56 s with 15 s
//! of system time unpinned, 20 s with 4 s pinned; docs/image-backend.md). Two placements avoid
//! it:
//! - **Shared** (every run's default): the run's thread and the runner on one processor, where
//!   a wake-up is a plain context switch. Runs made at once by several threads of this process
//!   (the verifier's worker pool, the tests) spread over the processors the process may use:
//!   each takes the one with the fewest runs on it.
//! - **Spinning** (asked for by a command that makes one run at a time): the waiting side
//!   spins on a shared doorbell ([`ppm_doorbell`]) instead of sleeping on its pipe, so no
//!   wake-up crosses processors. Neither process is pinned: the scheduler keeps two processes
//!   that rarely sleep on two processors by itself, and pinning them measured slower
//!   (docs/image-backend.md, "Two processes"). Granted only when the thread may use two
//!   processors that no other run of this process uses (which the run then counts as its
//!   own), the process's CPU quota gives two, and a doorbell can be made; otherwise the run is
//!   shared. Other processes are not counted: a side that keeps spinning in vain rests
//!   ([`ppm_doorbell::MISSES_BEFORE_REST`]).
//!
//! [`Placement::for_runner`] holds the calling thread on its processor until dropped (shared
//! runs): the run's own threads inherit it (a thread takes its creator's mask), and so does
//! the runner. Where affinity cannot be set (not Linux, a restricted container) the run is
//! unpinned and shared, only slower.

use std::sync::{Mutex, PoisonError};

use ppm_doorbell::Doorbell;

/// How many runs of this process are placed on each processor (by processor number).
static PLACED_RUNS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// How an image run's two processes hand the turn to each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Handoff {
    /// Both on one processor: the waiting side sleeps on its pipe.
    #[default]
    Shared,
    /// Each busy on a processor, if two are free: the waiting side spins on a doorbell for a
    /// while before it sleeps. Only for a command that makes one run at a time (two spinning
    /// runs on two processors would each spin away the other's time).
    Spinning,
}

/// The environment variable that sets the handoff of a command making one run at a time:
/// `spinning` (the default) or `shared`.
pub const HANDOFF_VARIABLE: &str = "PPM_IMAGE_HANDOFF";

impl Handoff {
    /// What a command that makes one run at a time asks for: [`Handoff::Spinning`], unless
    /// [`HANDOFF_VARIABLE`] says `shared` (`scripts/measure-image-runner.sh`: under callgrind
    /// a spin's instructions would count the wall clock's time).
    ///
    /// # Errors
    /// The variable set to anything else.
    pub fn for_one_run_at_a_time() -> Result<Self, String> {
        match std::env::var(HANDOFF_VARIABLE).as_deref() {
            Err(std::env::VarError::NotPresent) | Ok("spinning") => Ok(Self::Spinning),
            Ok("shared") => Ok(Self::Shared),
            Ok(other) => {
                Err(format!("{HANDOFF_VARIABLE} must be `spinning` or `shared`, not `{other}`"))
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(format!("{HANDOFF_VARIABLE} must be `spinning` or `shared`"))
            }
        }
    }
}

/// The processors of one run, until dropped.
///
/// A shared run's, the calling thread held on it (dropping restores the thread's previous
/// affinity), or the two a spinning run counts as its own, with the doorbell its runner takes.
#[must_use = "the run is placed only while the placement lives"]
pub struct Placement {
    /// A shared run's processor, and the affinity to restore (`None`: nothing was changed).
    held: Option<(usize, os::CpuSet)>,
    /// A spinning run's two processors.
    spinning: Option<(usize, usize)>,
    /// A spinning run's doorbell, until the runner takes it.
    doorbell: Option<Doorbell>,
}

impl Placement {
    /// Places a run that is about to start its runner: with `wanted` spinning, on two free
    /// processors when the thread may use two that no run of this process uses (the one it
    /// runs on now first); otherwise on the processor it may use with the fewest runs, the one
    /// it runs on now among equals.
    pub fn for_runner(wanted: Handoff) -> Self {
        let unplaced = Self { held: None, spinning: None, doorbell: None };
        let Some(previous) = os::affinity() else { return unplaced };
        let allowed = previous.processors();
        let current = os::current_processor();
        // The mask may name processors a CPU quota (a container's) does not give.
        let parallel = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if wanted == Handoff::Spinning
            && parallel >= 2
            && let Some(pair) = claim_pair(&allowed, current)
        {
            let mut spinning = Self { held: None, spinning: Some(pair), doorbell: None };
            // Without a doorbell (no memfd: a sandbox) the run is shared: dropping `spinning`
            // gives the pair back.
            if let Ok(doorbell) = Doorbell::new() {
                spinning.doorbell = Some(doorbell);
                return spinning;
            }
        }
        let Some(processor) = claim(&allowed, current) else { return unplaced };
        if !os::pin(processor) {
            release(processor);
            return unplaced;
        }
        Self { held: Some((processor, previous)), spinning: None, doorbell: None }
    }

    /// A spinning run's doorbell, for its runner (`None`: the run is shared, or the runner
    /// took it).
    pub const fn take_doorbell(&mut self) -> Option<Doorbell> {
        self.doorbell.take()
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        if let Some((processor, previous)) = self.held.take() {
            os::restore(&previous);
            release(processor);
        }
        if let Some((first, second)) = self.spinning.take() {
            release(first);
            release(second);
        }
    }
}

/// Counts one more run on each of two processors of `allowed` that have none, `current` first
/// when it has none; `None` (nothing counted) when there are not two.
fn claim_pair(allowed: &[usize], current: Option<usize>) -> Option<(usize, usize)> {
    let mut placed = PLACED_RUNS.lock().unwrap_or_else(PoisonError::into_inner);
    let free = |processor: &usize| placed.get(*processor).is_none_or(|&count| count == 0);
    let own = current
        .filter(|processor| allowed.contains(processor) && free(processor))
        .or_else(|| allowed.iter().copied().find(free))?;
    let runner = allowed.iter().copied().find(|&processor| processor != own && free(&processor))?;
    count_run(&mut placed, own);
    count_run(&mut placed, runner);
    drop(placed);
    Some((own, runner))
}

/// Counts one more run on the processor of `allowed` with the fewest, `current` among equals.
fn claim(allowed: &[usize], current: Option<usize>) -> Option<usize> {
    let mut placed = PLACED_RUNS.lock().unwrap_or_else(PoisonError::into_inner);
    let load = |processor: usize| placed.get(processor).copied().unwrap_or(0);
    let processor = allowed
        .iter()
        .copied()
        .min_by_key(|&processor| (load(processor), Some(processor) != current))?;
    count_run(&mut placed, processor);
    drop(placed);
    Some(processor)
}

/// One more run on `processor` in `placed` ([`PLACED_RUNS`]), grown to hold it.
fn count_run(placed: &mut Vec<u32>, processor: usize) {
    if placed.len() <= processor {
        placed.resize(processor + 1, 0);
    }
    if let Some(count) = placed.get_mut(processor) {
        *count += 1;
    }
}

/// Counts one run fewer on `processor`.
fn release(processor: usize) {
    let mut placed = PLACED_RUNS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(count) = placed.get_mut(processor) {
        *count = count.saturating_sub(1);
    }
}

#[cfg(target_os = "linux")]
mod os {
    //! `sched_getaffinity`, `sched_setaffinity` and `sched_getcpu` of the calling thread.

    /// A thread's affinity mask.
    pub struct CpuSet(libc::cpu_set_t);

    impl CpuSet {
        /// The processors in the set, in order.
        pub fn processors(&self) -> Vec<usize> {
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&processor| {
                    // SAFETY: `processor` is below CPU_SETSIZE, the set's size in bits.
                    unsafe { libc::CPU_ISSET(processor, &self.0) }
                })
                .collect()
        }
    }

    /// The calling thread's affinity (`None` when it cannot be read).
    pub fn affinity() -> Option<CpuSet> {
        // SAFETY: `cpu_set_t` is a plain bit array; all zeros is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: pid 0 is the calling thread; `set` is a valid `cpu_set_t` of the size given.
        let status =
            unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &raw mut set) };
        (status == 0).then_some(CpuSet(set))
    }

    /// The processor the calling thread runs on now, if the kernel says.
    pub fn current_processor() -> Option<usize> {
        // SAFETY: `sched_getcpu` takes no argument and only returns a number.
        let processor = unsafe { libc::sched_getcpu() };
        usize::try_from(processor).ok()
    }

    /// Holds the calling thread on `processor`; whether that worked.
    pub fn pin(processor: usize) -> bool {
        if processor >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: as in `affinity`: all zeros is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `processor` is below CPU_SETSIZE (checked above).
        unsafe { libc::CPU_SET(processor, &mut set) };
        set_affinity(&set)
    }

    /// Gives the calling thread `previous` back.
    pub fn restore(previous: &CpuSet) {
        // A thread that cannot get its mask back stays pinned: slower, never wrong.
        let _ = set_affinity(&previous.0);
    }

    fn set_affinity(set: &libc::cpu_set_t) -> bool {
        // SAFETY: pid 0 is the calling thread; `set` is a valid `cpu_set_t` of the size given.
        let status = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), set) };
        status == 0
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    //! No affinity where the image backend does not run (it needs Linux's `/proc/self/mem`).

    /// A thread's affinity mask: never read here.
    pub struct CpuSet;

    impl CpuSet {
        pub fn processors(&self) -> Vec<usize> {
            Vec::new()
        }
    }

    pub const fn affinity() -> Option<CpuSet> {
        None
    }

    pub const fn current_processor() -> Option<usize> {
        None
    }

    pub const fn pin(_: usize) -> bool {
        false
    }

    pub const fn restore(_: &CpuSet) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pinned thread runs only on its processor and gets its affinity back on drop; two
    /// runs at once take different processors when the process may use two.
    #[cfg(target_os = "linux")]
    #[test]
    fn pins_spreads_and_restores() {
        use std::sync::mpsc;

        let allowed = os::affinity().expect("the thread's affinity").processors();
        // Started before the pin, so that it does not inherit it.
        let (go, wait) = mpsc::channel::<()>();
        let (report, seen) = mpsc::channel();
        let other = std::thread::spawn(move || {
            wait.recv().expect("go");
            let pinned = Placement::for_runner(Handoff::Shared);
            report.send(pinned.held.as_ref().map(|(processor, _)| *processor)).expect("report");
            wait.recv().expect("done");
        });
        let first = Placement::for_runner(Handoff::Shared);
        let processor = first.held.as_ref().map(|(processor, _)| *processor).expect("pinned");
        assert_eq!(os::affinity().expect("affinity").processors(), vec![processor]);
        go.send(()).expect("go");
        let second = seen.recv().expect("the other run's processor").expect("pinned");
        if allowed.len() > 1 {
            assert_ne!(second, processor, "two runs at once share processor {processor}");
        }
        go.send(()).expect("done");
        other.join().expect("the other run");
        drop(first);
        assert_eq!(os::affinity().expect("affinity").processors(), allowed);
    }

    /// A spinning run takes two processors no other run uses, and gives both back; a second
    /// spinning run asked for meanwhile is shared, on a processor with no run if one is left.
    /// (Processor numbers no machine this runs on has: no other test's run is counted there.)
    #[test]
    fn a_spinning_run_takes_two_free_processors_or_none() {
        let allowed = [1000, 1001, 1002];
        let pair = claim_pair(&allowed, Some(1001)).expect("three free processors");
        assert_eq!(pair, (1001, 1000), "the current processor first, then the first free one");
        assert_eq!(claim_pair(&allowed, Some(1001)), None, "one free processor is not a pair");
        assert_eq!(claim(&allowed, Some(1001)), Some(1002), "a shared run takes the free one");
        assert_eq!(claim_pair(&[1004, 1005], None), Some((1004, 1005)));
        for processor in [1000, 1001, 1002, 1004, 1005] {
            release(processor);
        }
        assert_eq!(claim_pair(&allowed, Some(7)), Some((1000, 1001)), "current not allowed");
        release(1000);
        release(1001);
    }
}
