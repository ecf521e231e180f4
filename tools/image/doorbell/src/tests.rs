use std::ffi::OsStr;
use std::os::fd::IntoRawFd;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::*;

const LONG: Duration = Duration::from_secs(20);

/// Every test holds it: the tests that change the environment or look whether a descriptor
/// number is closed must not meet another test opening descriptors or spawning a child.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `ppm-sim`'s doorbell's file.
fn file(doorbell: &Doorbell) -> &OwnedFd {
    doorbell.file.as_ref().expect("ppm-sim's side keeps its file")
}

/// The runner's view of `doorbell`: the same memory mapped again, on the runner's side.
fn second_view(doorbell: &Doorbell) -> Doorbell {
    let counters = map(file(doorbell).as_raw_fd()).expect("mapped");
    Doorbell::mapped(Side::Runner, None, counters)
}

/// Sets [`FD_VARIABLE`] to `value` and takes the runner's doorbell from the environment.
fn taken_with(value: &OsStr) -> Result<Option<Doorbell>, EnvironmentError> {
    // SAFETY: the caller holds SERIAL, so no other test of this process reads or changes the
    // environment meanwhile (std's own readers also take std's environment lock).
    unsafe { std::env::set_var(FD_VARIABLE, value) };
    let taken = Doorbell::from_environment();
    assert_eq!(std::env::var_os(FD_VARIABLE), None, "the variable stays in the environment");
    taken
}

/// Whether `fd` is an open descriptor of this process.
fn is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD on a descriptor number only reads its flags; a closed one fails.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

fn refusal(taken: Result<Option<Doorbell>, EnvironmentError>) -> String {
    match taken {
        Err(error) => error.to_string(),
        Ok(Some(_)) => panic!("a doorbell taken"),
        Ok(None) => panic!("no doorbell, no error"),
    }
}

/// The figures docs/image-backend.md ("The doorbell") gives both processes: a changed one
/// changes the protocol, and the page.
#[test]
fn the_constants_are_the_documented_ones() {
    assert_eq!((FD_VARIABLE, PAGE_BYTES), ("PPM_DOORBELL_FD", 4096));
    assert_eq!((SIM_COUNTER_OFFSET, RUNNER_COUNTER_OFFSET), (0, 8));
    assert_eq!(SPIN_LIMIT, Duration::from_micros(200));
    assert_eq!((LOOKS_PER_CLOCK, MISSES_BEFORE_REST, REST_WAITS), (64, 3, 1024));
}

#[test]
fn a_ring_is_seen_across_a_second_mapping_of_the_same_file() {
    let _serial = serial();
    let doorbell = Doorbell::new().expect("doorbell");
    let other = second_view(&doorbell);
    doorbell.ring();
    doorbell.ring();
    assert_eq!(other.counter(Side::Sim).load(Ordering::Acquire), 2);
    assert_eq!(other.counter(Side::Runner).load(Ordering::Acquire), 0);
    other.ring();
    assert_eq!(doorbell.counter(Side::Runner).load(Ordering::Acquire), 1);
    assert_eq!(doorbell.counter(Side::Sim).load(Ordering::Acquire), 2);
}

/// The counters are where the layout says: the sim's at byte 0, the runner's at byte 8.
#[test]
fn the_counters_are_at_their_offsets_in_the_page() {
    let _serial = serial();
    let doorbell = Doorbell::new().expect("doorbell");
    let runner = second_view(&doorbell);
    doorbell.ring();
    runner.ring();
    runner.ring();
    let mut page = [0u8; 16];
    // SAFETY: reading the page's first 16 bytes from its file, into a buffer of 16.
    let read = unsafe { libc::pread(file(&doorbell).as_raw_fd(), page.as_mut_ptr().cast(), 16, 0) };
    assert_eq!(read, 16);
    let word = |offset: usize| {
        u64::from_ne_bytes(page[offset..offset + 8].try_into().expect("eight bytes"))
    };
    assert_eq!((word(SIM_COUNTER_OFFSET), word(RUNNER_COUNTER_OFFSET)), (1, 2));
}

#[test]
fn wait_returns_on_the_others_message_and_gives_up_after_the_limit() {
    let _serial = serial();
    let mut doorbell = Doorbell::new().expect("doorbell");
    // Nothing rung: the wait ends after the limit (the message then comes by the pipe), and
    // counts the message all the same.
    let start = Instant::now();
    assert!(!doorbell.wait_at_most(SPIN_LIMIT));
    assert!(start.elapsed() >= SPIN_LIMIT, "{:?}", start.elapsed());
    assert_eq!(doorbell.received, 1);
    // That message rung late: its ring does not end the wait for the next one.
    doorbell.counter(Side::Runner).store(1, Ordering::Release);
    let start = Instant::now();
    assert!(!doorbell.wait_at_most(SPIN_LIMIT));
    assert!(start.elapsed() >= SPIN_LIMIT, "{:?}", start.elapsed());
    // Both later messages rung before the wait: it ends at once (and the two misses before it
    // no longer count).
    doorbell.counter(Side::Runner).store(3, Ordering::Release);
    let start = Instant::now();
    assert!(doorbell.wait_at_most(LONG));
    assert!(start.elapsed() < LONG / 2, "{:?}", start.elapsed());
    assert_eq!((doorbell.received, doorbell.misses), (3, 0));
    // Rung through the other view by another thread while this one spins: the wait ends then.
    let runner = second_view(&doorbell);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            runner.ring();
        });
        let start = Instant::now();
        assert!(doorbell.wait_at_most(LONG));
        assert!(start.elapsed() < LONG / 2, "{:?}", start.elapsed());
    });
    assert_eq!(doorbell.received, 4);
}

/// A side whose waits spin in vain again and again rests: it then waits on its pipe alone for
/// [`REST_WAITS`] messages, however long its spin limit, and spins again after them.
#[test]
fn a_side_that_keeps_spinning_in_vain_rests() {
    /// A limit whose [`REST_WAITS`] spins would take two seconds.
    const LIMIT: Duration = Duration::from_millis(2);
    let _serial = serial();
    let mut doorbell = Doorbell::new().expect("doorbell");
    for miss in 1..MISSES_BEFORE_REST {
        assert!(!doorbell.wait_at_most(Duration::from_micros(10)));
        assert_eq!((doorbell.misses, doorbell.resting), (miss, 0));
    }
    assert!(!doorbell.wait_at_most(Duration::from_micros(10)));
    assert_eq!((doorbell.misses, doorbell.resting), (0, REST_WAITS));
    let start = Instant::now();
    for _ in 0..REST_WAITS {
        assert!(!doorbell.wait_at_most(LIMIT), "a resting wait spins for nothing");
    }
    assert!(start.elapsed() < LIMIT * REST_WAITS / 2, "{:?}", start.elapsed());
    // Rested: it spins again, and a ring (every message so far and this one) ends it.
    let received = doorbell.received;
    doorbell.counter(Side::Runner).store(received + 1, Ordering::Release);
    assert!(doorbell.wait_at_most(LONG));
    assert_eq!(doorbell.received, received + 1);
}

/// The child finds the doorbell open at the number it is told, a page long; a child not given
/// it does not inherit it.
#[test]
fn the_child_given_the_doorbell_has_it_open_and_no_other_child_does() {
    let _serial = serial();
    let doorbell = Doorbell::new().expect("doorbell");
    let size_of_fd = "stat -L -c %s /proc/self/fd/$0 2>/dev/null || echo closed";
    let mut given = Command::new("sh");
    given.args(["-c", &format!("n=${FD_VARIABLE}; {}", size_of_fd.replace("$0", "$n"))]);
    doorbell.give_to_child(&mut given);
    let output = given.output().expect("sh");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), PAGE_BYTES.to_string());
    let other = Command::new("sh")
        .args(["-c", size_of_fd, &file(&doorbell).as_raw_fd().to_string()])
        .output()
        .expect("sh");
    assert_eq!(String::from_utf8_lossy(&other.stdout).trim(), "closed");
}

/// The runner's side as the runner takes it: `ppm-sim`'s doorbell's descriptor (a copy, as the
/// child inherits it) named in the environment, taken in this same process; each side's ring
/// ends the other's wait and not its own.
#[test]
fn the_runner_takes_the_doorbell_from_its_environment_and_both_ring_and_wait() {
    const ROUNDS: u64 = 100;
    let _serial = serial();
    let mut sim = Doorbell::new().expect("doorbell");
    let inherited = file(&sim).try_clone().expect("dup").into_raw_fd();
    let mut runner = taken_with(OsStr::new(&inherited.to_string()))
        .expect("taken")
        .expect("a doorbell in the environment");
    assert!(!is_open(inherited), "the runner keeps ppm-sim's descriptor open");
    assert_eq!(runner.side, Side::Runner);
    assert!(runner.file.is_none());

    // Its own ring does not end a side's wait; the other's does, at once.
    sim.ring();
    assert!(!sim.wait_at_most(Duration::from_micros(10)), "ppm-sim woken by its own ring");
    runner.ring();
    runner.ring();
    assert!(runner.wait_at_most(LONG), "the runner missed ppm-sim's ring");
    assert!(sim.wait_at_most(LONG), "ppm-sim missed the runner's ring");
    assert_eq!(runner.counter(Side::Sim).load(Ordering::Acquire), 1);
    assert_eq!(sim.counter(Side::Runner).load(Ordering::Acquire), 2);

    // A round trip after another, the runner on its own thread: every wait ends on the ring.
    let (sim_received, runner_received) = (sim.received, runner.received);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..ROUNDS {
                assert!(runner.wait_at_most(LONG), "the runner missed a ring");
                runner.ring();
            }
        });
        for _ in 0..ROUNDS {
            sim.ring();
            assert!(sim.wait_at_most(LONG), "ppm-sim missed a ring");
        }
    });
    assert_eq!((sim.received, runner.received), (sim_received + ROUNDS, runner_received + ROUNDS));
    assert_eq!(sim.counter(Side::Sim).load(Ordering::Acquire), 1 + ROUNDS);
    assert_eq!(sim.counter(Side::Runner).load(Ordering::Acquire), 2 + ROUNDS);
}

#[test]
fn without_the_variable_the_runner_has_no_doorbell() {
    let _serial = serial();
    // SAFETY: as in `taken_with`.
    unsafe { std::env::remove_var(FD_VARIABLE) };
    assert!(Doorbell::from_environment().expect("no error").is_none());
}

/// A value that is not a descriptor number (digits only) is refused naming the variable, and
/// removed all the same.
#[test]
fn a_variable_that_is_not_a_number_is_refused() {
    let _serial = serial();
    for value in ["x", "", "-1", "+3", " 3", "3 ", "3x", "0x3", "99999999999"] {
        assert_eq!(
            refusal(taken_with(OsStr::new(value))),
            format!("PPM_DOORBELL_FD must be a file descriptor number, not '{value}'"),
        );
    }
}

/// A descriptor that cannot be mapped (a pipe's read end) is refused naming it and the system's
/// reason, and closed; a number that is no open descriptor is refused too.
#[test]
fn a_descriptor_that_cannot_be_mapped_is_refused_and_closed() {
    let _serial = serial();
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(writer);
    let fd = reader.into_raw_fd();
    let text = refusal(taken_with(OsStr::new(&fd.to_string())));
    let prefix = format!("cannot map the doorbell (file descriptor {fd}): ");
    assert!(
        text.starts_with(&prefix) && text.ends_with(')') && text.contains("(os error "),
        "{text}"
    );
    assert!(!is_open(fd), "the refused descriptor stays open");
    // `fd` is closed now: its number names nothing.
    assert_eq!(
        refusal(taken_with(OsStr::new(&fd.to_string()))),
        format!("{prefix}{}", io::Error::from_raw_os_error(libc::EBADF))
    );
}
