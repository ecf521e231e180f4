//! Processor affinity of an image run: the runner and the thread that commands it share one
//! processor.
//!
//! The two processes never run at once: each command and each host request is a round trip in
//! which one side waits on its pipe while the other works. Left to the scheduler, every round
//! trip wakes the other process on the other processor, an inter-processor interrupt that on a
//! virtual machine costs more than the work itself (`big-2048` on the image, 2-core VM: 56 s
//! with 15 s of system time unpinned, 20 s with 4 s pinned; docs/image-backend.md). On one
//! processor a wake-up is a plain context switch.
//!
//! [`Pinned::for_runner`] holds the calling thread on one processor until dropped: the runner
//! it starts inherits the affinity (a child takes its forking thread's mask, as do the
//! threads it spawns), so the run's threads and the runner share that processor. Runs made at
//! once by several threads of this process (the verifier's worker pool) spread over the
//! processors the process may use: each takes the one with the fewest runs pinned to it.
//! Where affinity cannot be set (not Linux, a restricted container) the run is unpinned, only
//! slower.

use std::sync::{Mutex, PoisonError};

/// How many runs of this process are pinned to each processor (by processor number).
static PINNED_RUNS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The calling thread held on one processor; dropping it restores the thread's previous
/// affinity.
#[must_use = "the thread is pinned only while the guard lives"]
pub struct Pinned {
    /// The processor, and the affinity to restore (`None`: nothing was changed).
    held: Option<(usize, os::CpuSet)>,
}

impl Pinned {
    /// Pins the calling thread to the processor it may use with the fewest runs pinned to it,
    /// the one it runs on now among equals.
    pub fn for_runner() -> Self {
        let Some(previous) = os::affinity() else { return Self { held: None } };
        let Some(processor) = claim(&previous.processors(), os::current_processor()) else {
            return Self { held: None };
        };
        if !os::pin(processor) {
            release(processor);
            return Self { held: None };
        }
        Self { held: Some((processor, previous)) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let Some((processor, previous)) = self.held.take() else { return };
        os::restore(&previous);
        release(processor);
    }
}

/// Counts one more run on the processor of `allowed` with the fewest, `current` among equals.
fn claim(allowed: &[usize], current: Option<usize>) -> Option<usize> {
    let mut pinned = PINNED_RUNS.lock().unwrap_or_else(PoisonError::into_inner);
    let load = |processor: usize| pinned.get(processor).copied().unwrap_or(0);
    let processor = allowed
        .iter()
        .copied()
        .min_by_key(|&processor| (load(processor), Some(processor) != current))?;
    if pinned.len() <= processor {
        pinned.resize(processor + 1, 0);
    }
    if let Some(count) = pinned.get_mut(processor) {
        *count += 1;
    }
    drop(pinned);
    Some(processor)
}

/// Counts one run fewer on `processor`.
fn release(processor: usize) {
    let mut pinned = PINNED_RUNS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(count) = pinned.get_mut(processor) {
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
            let pinned = Pinned::for_runner();
            report.send(pinned.held.as_ref().map(|(processor, _)| *processor)).expect("report");
            wait.recv().expect("done");
        });
        let first = Pinned::for_runner();
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
}
