//! The doorbell of an image run whose two processes spin instead of sleeping (`ppm-sim`'s
//! `Handoff::Spinning`; docs/image-backend.md, "Two processes" and "The doorbell"): a page of
//! shared memory holding two message counters, `ppm-sim`'s and the image runner's. Both sides
//! are this crate's one [`Doorbell`], so the two processes share one layout and one set of
//! constants:
//! - `ppm-sim` creates it ([`Doorbell::new`]) and gives it to the runner process it starts
//!   ([`Doorbell::give_to_child`]: the descriptor inherited by that child alone, its number in
//!   [`FD_VARIABLE`]);
//! - the runner takes it from its environment ([`Doorbell::from_environment`]).
//!
//! The protocol's messages still travel over the pipes; the doorbell only says that one has
//! arrived. After writing a whole message, the writer adds one to its own counter
//! ([`Doorbell::ring`]); the reader, before reading its next message ([`Doorbell::wait`]),
//! spins on the other's counter (a CPU pause between looks) for at most [`SPIN_LIMIT`], then
//! reads the pipe, which has the message by then or sleeps until it does. A round trip is then
//! two cache-line transfers instead of two wake-ups through the scheduler, which on a virtual
//! machine cost more than the work on either side. A side whose spins keep failing rests
//! ([`MISSES_BEFORE_REST`]).
//!
//! Linux only (`memfd_create`): elsewhere [`Doorbell::new`] fails, and `ppm-sim` grants no
//! spinning handoff.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that tells the runner its doorbell's file descriptor.
pub const FD_VARIABLE: &str = "PPM_DOORBELL_FD";
/// The shared page's length: the file's and the mapping's.
pub const PAGE_BYTES: usize = 4096;
/// The byte offset of the count of messages `ppm-sim` has sent (a `u64`).
pub const SIM_COUNTER_OFFSET: usize = 0;
/// The byte offset of the count of messages the runner has sent (a `u64`).
pub const RUNNER_COUNTER_OFFSET: usize = 8;
/// How long a side spins for a message before it sleeps on the pipe.
///
/// Above the longest ordinary turn of either side (a notification with its nested calls),
/// below what a processor should burn on a side busy with something long (loading, a report).
pub const SPIN_LIMIT: Duration = Duration::from_micros(200);
/// How many looks at the other's counter between two looks at the clock.
pub const LOOKS_PER_CLOCK: u32 = 64;
/// After this many waits in a row that spun to [`SPIN_LIMIT`] in vain, a side rests.
///
/// The other side is not getting a processor (other runs or programs keep them busy), and
/// spinning would take the processor it needs.
pub const MISSES_BEFORE_REST: u32 = 3;
/// How many waits a resting side makes on its pipe alone, without spinning, before it tries
/// spinning again.
pub const REST_WAITS: u32 = 1024;

/// The two counters, as the page starts: each side's count of the messages it has sent, in
/// the machine's byte order.
#[repr(C)]
struct Counters {
    sim: AtomicU64,
    runner: AtomicU64,
}
const _: () = assert!(std::mem::offset_of!(Counters, sim) == SIM_COUNTER_OFFSET);
const _: () = assert!(std::mem::offset_of!(Counters, runner) == RUNNER_COUNTER_OFFSET);
const _: () = assert!(size_of::<Counters>() <= PAGE_BYTES);

/// The process a doorbell is mapped in, and so which counter is its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// `ppm-sim`, which made the page.
    Sim,
    /// The runner, which took it from its environment.
    Runner,
}

impl Side {
    const fn other(self) -> Self {
        match self {
            Self::Sim => Self::Runner,
            Self::Runner => Self::Sim,
        }
    }
}

/// A doorbell page mapped in this process, on `ppm-sim`'s side or the runner's: the count of
/// the other side's messages received, and whether this side spins ([`MISSES_BEFORE_REST`]).
pub struct Doorbell {
    side: Side,
    /// `ppm-sim`'s side: the page's file, kept to give to the runner. The runner's side: `None`
    /// (its descriptor is closed once mapped).
    file: Option<OwnedFd>,
    counters: NonNull<Counters>,
    /// The other side's messages this side has waited for.
    received: u64,
    /// Waits in a row that spun in vain.
    misses: u32,
    /// Waits left to make without spinning.
    resting: u32,
}

// SAFETY: the mapping is owned by the `Doorbell` (unmapped only in `Drop`) and only accessed
// through atomics, so moving it to another thread moves nothing thread-bound.
unsafe impl Send for Doorbell {}

/// Why the runner cannot take the doorbell its environment names: the text it reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvironmentError(pub String);

impl fmt::Display for EnvironmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EnvironmentError {}

impl Doorbell {
    /// `ppm-sim`'s side: a fresh page of shared memory, both counters 0 (closed on `exec` but
    /// in the child of [`Self::give_to_child`]).
    ///
    /// # Errors
    /// When the memory cannot be created or mapped.
    pub fn new() -> io::Result<Self> {
        let file = anonymous_file()?;
        let length = libc::off_t::try_from(PAGE_BYTES).map_err(io::Error::other)?;
        // SAFETY: `file` is an open memfd; the length is positive.
        if unsafe { libc::ftruncate(file.as_raw_fd(), length) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let counters = map(file.as_raw_fd())?;
        Ok(Self::mapped(Side::Sim, Some(file), counters))
    }

    /// The runner's side: the doorbell `ppm-sim` gave this process, if [`FD_VARIABLE`] names
    /// one. The variable is removed from the environment, and the descriptor closed once
    /// mapped (or not).
    ///
    /// Call it while the process has one thread (the runner does at its start): it changes the
    /// environment.
    ///
    /// # Errors
    /// When the variable is not a file descriptor number (digits only), or its descriptor
    /// cannot be mapped: the text names the variable or the descriptor.
    pub fn from_environment() -> Result<Option<Self>, EnvironmentError> {
        let Some(value) = std::env::var_os(FD_VARIABLE) else {
            return Ok(None);
        };
        // SAFETY: the caller has one thread (see above), so nothing reads the environment
        // meanwhile.
        unsafe { std::env::remove_var(FD_VARIABLE) };
        let text = value.to_string_lossy().into_owned();
        let fd: RawFd = text
            .parse()
            .ok()
            .filter(|_| text.bytes().all(|byte| byte.is_ascii_digit()))
            .ok_or_else(|| {
                EnvironmentError(format!(
                    "{FD_VARIABLE} must be a file descriptor number, not '{text}'"
                ))
            })?;
        let mapped = map(fd);
        // SAFETY: closing the descriptor `ppm-sim` handed over, which nothing else in this
        // process owns: mapped or not, it is not needed (an invalid number fails with EBADF).
        unsafe { libc::close(fd) };
        let counters = mapped.map_err(|error| {
            EnvironmentError(format!("cannot map the doorbell (file descriptor {fd}): {error}"))
        })?;
        Ok(Some(Self::mapped(Side::Runner, None, counters)))
    }

    const fn mapped(side: Side, file: Option<OwnedFd>, counters: NonNull<Counters>) -> Self {
        Self { side, file, counters, received: 0, misses: 0, resting: 0 }
    }

    /// Makes `command`'s process inherit the doorbell (`ppm-sim`'s side): its descriptor kept
    /// open across `exec` in the child alone, and its number in [`FD_VARIABLE`]. A doorbell
    /// taken by the runner has no descriptor left to give: the child is given none (the
    /// variable removed from its environment).
    pub fn give_to_child(&self, command: &mut Command) {
        let Some(file) = &self.file else {
            command.env_remove(FD_VARIABLE);
            return;
        };
        let fd = file.as_raw_fd();
        command.env(FD_VARIABLE, fd.to_string());
        // SAFETY: the closure runs in the child between fork and exec and makes one
        // async-signal-safe system call (fcntl), allocating nothing; `fd` stays open in this
        // process while `self` lives, which is past the spawn.
        unsafe {
            command.pre_exec(move || keep_open_across_exec(fd));
        }
    }

    const fn counters(&self) -> &Counters {
        // SAFETY: the mapping is PAGE_BYTES long, page-aligned and lives as long as `self`;
        // `Counters` is two atomics, valid for any bits the other process writes.
        unsafe { self.counters.as_ref() }
    }

    /// `side`'s counter.
    const fn counter(&self, side: Side) -> &AtomicU64 {
        match side {
            Side::Sim => &self.counters().sim,
            Side::Runner => &self.counters().runner,
        }
    }

    /// After this side wrote a whole message: one more on its own counter.
    pub fn ring(&self) {
        self.counter(self.side).fetch_add(1, Ordering::Release);
    }

    /// Before reading the other side's next message: spins until the other's counter passes
    /// the messages received so far, at most [`SPIN_LIMIT`] (the pipe then waits, if need be),
    /// or not at all while resting ([`MISSES_BEFORE_REST`]). Counts the message as received.
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
        let theirs = self.counter(self.side.other());
        let start = Instant::now();
        loop {
            for _ in 0..LOOKS_PER_CLOCK {
                if theirs.load(Ordering::Acquire) > received {
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
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        // SAFETY: the mapping made by `map`, of that length, unmapped once; no reference into
        // it outlives `self`.
        unsafe { libc::munmap(self.counters.as_ptr().cast(), PAGE_BYTES) };
    }
}

/// The doorbell page of the file `fd`, mapped shared in this process.
fn map(fd: RawFd) -> io::Result<NonNull<Counters>> {
    // SAFETY: a new shared mapping of PAGE_BYTES of the file; no existing memory is touched,
    // and a descriptor that cannot be mapped fails.
    let address = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if address == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(address.cast::<Counters>())
        .ok_or_else(|| io::Error::other("mmap returned a null mapping"))
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

/// Elsewhere no doorbell is made (and `ppm-sim` grants no spinning handoff).
#[cfg(not(target_os = "linux"))]
fn anonymous_file() -> io::Result<OwnedFd> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "a doorbell needs Linux's memfd_create"))
}

#[cfg(test)]
mod tests;
