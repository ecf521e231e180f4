//! The doorbell of an image run whose two processes spin instead of sleeping
//! ([`super::Handoff::Spinning`]): a page of shared memory holding two message counters.
//!
//! The protocol's messages still travel over the pipes; the doorbell only says that one has
//! arrived. After writing a whole message, the writer adds one to its counter; the reader,
//! waiting for its next message, spins on the writer's counter (a CPU pause between looks) for
//! at most [`SPIN_LIMIT`], then reads the pipe, which has the message by then or sleeps until it
//! does. A round trip is then two cache-line transfers instead of two wake-ups through the
//! scheduler, which on a virtual machine cost more than the work on either side
//! (docs/image-backend.md, "Two processes"). The runner's side is `tools/image/ppm_image/
//! native.py`'s `Doorbell` and `hooks.c`'s `ppm_doorbell_*`, with the same layout.
//!
//! Linux only (`memfd_create`): elsewhere a spinning handoff is never granted.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The shared page's length.
const DOORBELL_BYTES: usize = 4096;
/// The byte offset of the count of messages `ppm-sim` has sent (a `u64`).
pub const SIM_COUNTER_OFFSET: usize = 0;
/// The byte offset of the count of messages the runner has sent (a `u64`).
pub const RUNNER_COUNTER_OFFSET: usize = 8;
/// The environment variable that tells the runner its doorbell's file descriptor.
pub const FD_VARIABLE: &str = "PPM_DOORBELL_FD";
/// How long a side spins for a message before it sleeps on the pipe: above the longest
/// ordinary turn of either side (a notification with its nested calls), below what a
/// processor should burn on a runner busy with something long (loading, a report).
pub const SPIN_LIMIT: Duration = Duration::from_micros(200);
/// How many looks at the counter between two looks at the clock.
const LOOKS_PER_CLOCK: u32 = 64;
/// After this many waits in a row that spun to [`SPIN_LIMIT`] in vain, a side rests: the
/// other side is not getting a processor (other runs or programs keep them busy), and spinning
/// would take the processor it needs.
pub const MISSES_BEFORE_REST: u32 = 3;
/// How many waits a resting side makes on its pipe alone, without spinning, before it tries
/// spinning again.
pub const REST_WAITS: u32 = 1024;

/// The two counters, as the page starts.
#[repr(C)]
struct Counters {
    sim: AtomicU64,
    runner: AtomicU64,
}
const _: () = assert!(std::mem::offset_of!(Counters, sim) == SIM_COUNTER_OFFSET);
const _: () = assert!(std::mem::offset_of!(Counters, runner) == RUNNER_COUNTER_OFFSET);
const _: () = assert!(size_of::<Counters>() <= DOORBELL_BYTES);

/// A doorbell page, mapped in this process, the count of the runner's messages received, and
/// whether this side spins ([`MISSES_BEFORE_REST`]).
pub struct Doorbell {
    file: OwnedFd,
    counters: NonNull<Counters>,
    received: u64,
    /// Waits in a row that spun in vain.
    misses: u32,
    /// Waits left to make without spinning.
    resting: u32,
}

// SAFETY: the mapping is owned by the `Doorbell` (unmapped only in `Drop`) and only accessed
// through atomics, so moving it to another thread moves nothing thread-bound.
unsafe impl Send for Doorbell {}

impl Doorbell {
    /// A fresh page of shared memory, both counters 0 (closed on `exec` but in the child of
    /// [`Self::give_to_child`]).
    ///
    /// # Errors
    /// When the memory cannot be created or mapped.
    pub fn new() -> io::Result<Self> {
        let file = anonymous_file()?;
        let length = libc::off_t::try_from(DOORBELL_BYTES).map_err(io::Error::other)?;
        // SAFETY: `file` is an open memfd; the length is positive.
        if unsafe { libc::ftruncate(file.as_raw_fd(), length) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Self::map(file)
    }

    /// `file`, a doorbell's memory of [`DOORBELL_BYTES`], mapped in this process.
    fn map(file: OwnedFd) -> io::Result<Self> {
        // SAFETY: a new shared mapping of the whole file, which is DOORBELL_BYTES long; no
        // existing memory is touched.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                DOORBELL_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let counters = NonNull::new(address.cast::<Counters>())
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))?;
        Ok(Self { file, counters, received: 0, misses: 0, resting: 0 })
    }

    /// Makes `command`'s process inherit the doorbell: its descriptor kept open across `exec`
    /// in the child alone, and its number in [`FD_VARIABLE`].
    pub fn give_to_child(&self, command: &mut Command) {
        let fd = self.file.as_raw_fd();
        command.env(FD_VARIABLE, fd.to_string());
        // SAFETY: the closure runs in the child between fork and exec and makes one
        // async-signal-safe system call (fcntl), allocating nothing; `fd` stays open in this
        // process while `self` lives, which is past the spawn.
        unsafe {
            command.pre_exec(move || keep_open_across_exec(fd));
        }
    }

    const fn counters(&self) -> &Counters {
        // SAFETY: the mapping is DOORBELL_BYTES long, page-aligned and lives as long as
        // `self`; `Counters` is two atomics, valid for any bits the runner writes.
        unsafe { self.counters.as_ref() }
    }

    /// After `ppm-sim` wrote a whole message: one more on its counter.
    pub fn ring(&self) {
        self.counters().sim.fetch_add(1, Ordering::Release);
    }

    /// Before reading the runner's next message: spins until the runner's counter passes the
    /// messages received so far, at most [`SPIN_LIMIT`] (the pipe then waits, if need be), or
    /// not at all while resting ([`MISSES_BEFORE_REST`]). Counts the message as received.
    pub fn wait(&mut self) {
        self.wait_at_most(SPIN_LIMIT);
    }

    /// [`Self::wait`], spinning at most `limit`; whether the ring came while it spun.
    fn wait_at_most(&mut self, limit: Duration) -> bool {
        let received = self.received;
        self.received = received + 1;
        if self.resting > 0 {
            self.resting -= 1;
            return false;
        }
        let runner = &self.counters().runner;
        let start = Instant::now();
        loop {
            for _ in 0..LOOKS_PER_CLOCK {
                if runner.load(Ordering::Acquire) > received {
                    self.misses = 0;
                    return true;
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= limit {
                break;
            }
        }
        self.misses += 1;
        if self.misses >= MISSES_BEFORE_REST {
            self.misses = 0;
            self.resting = REST_WAITS;
        }
        false
    }

    /// The runner's counter: what the runner process sees at [`RUNNER_COUNTER_OFFSET`].
    #[cfg(test)]
    const fn runner_counter(&self) -> &AtomicU64 {
        &self.counters().runner
    }

    /// `ppm-sim`'s counter.
    #[cfg(test)]
    fn sim_count(&self) -> u64 {
        self.counters().sim.load(Ordering::Acquire)
    }
}

/// Clears `fd`'s close-on-exec flag (in a child: its own descriptor table's copy).
fn keep_open_across_exec(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fcntl` with F_SETFD on a descriptor number only sets a flag; an invalid one
    // fails with EBADF.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A new file of no length that lives in memory only, closed on `exec`.
#[cfg(target_os = "linux")]
fn anonymous_file() -> io::Result<OwnedFd> {
    // SAFETY: the name is a NUL-terminated string; the flags are valid.
    let raw = unsafe { libc::memfd_create(c"ppm-sim-doorbell".as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a file descriptor just returned to this process and owned by no one.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Elsewhere no spinning handoff is granted (`super::affinity` places no run off Linux).
#[cfg(not(target_os = "linux"))]
fn anonymous_file() -> io::Result<OwnedFd> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "a doorbell needs Linux's memfd_create"))
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of that length, unmapped once; no reference into
        // it outlives `self`.
        unsafe { libc::munmap(self.counters.as_ptr().cast(), DOORBELL_BYTES) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runner's view: the same memory mapped again, as the child maps its descriptor.
    fn second_view(doorbell: &Doorbell) -> Doorbell {
        Doorbell::map(doorbell.file.try_clone().expect("dup")).expect("mapped")
    }

    #[test]
    fn a_ring_is_seen_across_a_second_mapping_of_the_same_file() {
        let doorbell = Doorbell::new().expect("doorbell");
        let other = second_view(&doorbell);
        doorbell.ring();
        doorbell.ring();
        assert_eq!(other.sim_count(), 2);
        other.runner_counter().fetch_add(1, Ordering::Release);
        assert_eq!(doorbell.runner_counter().load(Ordering::Acquire), 1);
    }

    #[test]
    fn wait_returns_on_the_runners_message_and_gives_up_after_the_limit() {
        const LONG: Duration = Duration::from_secs(20);
        let mut doorbell = Doorbell::new().expect("doorbell");
        // Nothing rung: the wait ends after the limit (the message then comes by the pipe),
        // and counts the message all the same.
        let start = Instant::now();
        assert!(!doorbell.wait_at_most(SPIN_LIMIT));
        assert!(start.elapsed() >= SPIN_LIMIT, "{:?}", start.elapsed());
        assert_eq!(doorbell.received, 1);
        // That message rung late: its ring does not end the wait for the next one.
        doorbell.runner_counter().store(1, Ordering::Release);
        let start = Instant::now();
        assert!(!doorbell.wait_at_most(SPIN_LIMIT));
        assert!(start.elapsed() >= SPIN_LIMIT, "{:?}", start.elapsed());
        // Both later messages rung before the wait: it ends at once (and the two misses
        // before it no longer count).
        doorbell.runner_counter().store(3, Ordering::Release);
        let start = Instant::now();
        assert!(doorbell.wait_at_most(LONG));
        assert!(start.elapsed() < LONG / 2, "{:?}", start.elapsed());
        assert_eq!((doorbell.received, doorbell.misses), (3, 0));
        // Rung through the other view by another thread while this one spins: the wait ends
        // then.
        let runner = second_view(&doorbell);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                runner.runner_counter().fetch_add(1, Ordering::Release);
            });
            let start = Instant::now();
            assert!(doorbell.wait_at_most(LONG));
            assert!(start.elapsed() < LONG / 2, "{:?}", start.elapsed());
        });
        assert_eq!(doorbell.received, 4);
    }

    /// A side whose waits spin in vain again and again rests: it then waits on its pipe alone
    /// for [`REST_WAITS`] messages, however long its spin limit, and spins again after them.
    #[test]
    fn a_side_that_keeps_spinning_in_vain_rests() {
        const LONG: Duration = Duration::from_secs(20);
        let mut doorbell = Doorbell::new().expect("doorbell");
        for _ in 0..MISSES_BEFORE_REST {
            assert!(!doorbell.wait_at_most(Duration::from_micros(10)));
        }
        let start = Instant::now();
        for _ in 0..REST_WAITS {
            assert!(!doorbell.wait_at_most(LONG), "a resting wait spins for nothing");
        }
        assert!(start.elapsed() < LONG / 2, "{:?}", start.elapsed());
        // Rested: it spins again, and a ring (every message so far and this one) ends it.
        let received = doorbell.received;
        doorbell.runner_counter().store(received + 1, Ordering::Release);
        assert!(doorbell.wait_at_most(LONG));
        assert_eq!(doorbell.received, received + 1);
    }

    /// The child finds the doorbell open at the number it is told, a page long; a child not
    /// given it does not inherit it.
    #[test]
    fn the_child_given_the_doorbell_has_it_open_and_no_other_child_does() {
        let doorbell = Doorbell::new().expect("doorbell");
        let size_of_fd = "stat -L -c %s /proc/self/fd/$0 2>/dev/null || echo closed";
        let mut given = Command::new("sh");
        given.args(["-c", &format!("n=${FD_VARIABLE}; {}", size_of_fd.replace("$0", "$n"))]);
        doorbell.give_to_child(&mut given);
        let output = given.output().expect("sh");
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), DOORBELL_BYTES.to_string());
        let other = Command::new("sh")
            .args(["-c", size_of_fd, &doorbell.file.as_raw_fd().to_string()])
            .output()
            .expect("sh");
        assert_eq!(String::from_utf8_lossy(&other.stdout).trim(), "closed");
    }
}
