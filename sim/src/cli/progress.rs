//! Progress of a long run on stderr, terminal or not: what is running, the share of its
//! expected reads made, the time so far and, once the running scenario has made a hundredth of
//! its reads, the time it has left at its pace so far.
//!
//! A ticker thread writes it, so a run that makes no read for a while (an image's `DriverEntry`
//! over 2048 processors) still shows it, and `main` must not hold stderr's lock for the run. Nothing is
//! printed before 2 s. On a terminal one line is rewritten twice a second and erased when the
//! run ends; otherwise (a pipe, a CI log) a whole line is printed at 2 s and then every 10 s.
//! `PPM_SIM_PROGRESS=always` prints from the start (a line as each scenario starts), `never`
//! not at all.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::pofx::{ReadObserver, TracedRead};
use crate::scenario::Scenario;
use crate::text::escaped;

/// `PPM_SIM_PROGRESS`: `always` (from the start) or `never`.
pub const VARIABLE: &str = "PPM_SIM_PROGRESS";
/// How long a run goes on before its progress shows.
const QUIET: Duration = Duration::from_secs(2);
/// How often a terminal's line is rewritten.
const TERMINAL_EVERY: Duration = Duration::from_millis(500);
/// How often a line is printed elsewhere.
const LOG_EVERY: Duration = Duration::from_secs(10);
/// How often the ticker looks.
const TICK: Duration = Duration::from_millis(100);

/// What the ticker shows.
struct Shared {
    /// What is running (a scenario's name; `validate 3/54 NAME` in a suite).
    label: Mutex<String>,
    /// The reads the running scenario is expected to make.
    expected: AtomicU64,
    /// The reads it made so far.
    reads: AtomicU64,
    /// When it started, in ms since `start`.
    scenario_start_ms: AtomicU64,
    stop: AtomicBool,
    /// Whether stderr is a terminal.
    terminal: bool,
    /// The widest line on the terminal (0: none shown).
    shown: Mutex<usize>,
    start: Instant,
}

impl Shared {
    fn new(terminal: bool) -> Self {
        Self {
            label: Mutex::new(String::new()),
            expected: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            scenario_start_ms: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            terminal,
            shown: Mutex::new(0),
            start: Instant::now(),
        }
    }

    /// Shows the progress line now.
    fn show(&self) {
        let line = status(self, self.start.elapsed());
        let mut stderr = std::io::stderr().lock();
        if self.terminal {
            let width = {
                let mut shown = self.shown.lock().unwrap_or_else(PoisonError::into_inner);
                let width = *shown;
                *shown = width.max(line.len());
                width
            };
            let _ = write!(stderr, "\r{line:width$}");
        } else {
            let _ = writeln!(stderr, "{line}");
        }
        let _ = stderr.flush();
    }

    /// Erases a terminal's line, if one was shown.
    fn erase(&self) {
        let width = std::mem::take(&mut *self.shown.lock().unwrap_or_else(PoisonError::into_inner));
        if width > 0 {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r{:width$}\r", "");
            let _ = stderr.flush();
        }
    }
}

/// The progress of this process's run (see the module documentation); stops when dropped.
pub struct Progress {
    shared: Arc<Shared>,
    ticker: Option<JoinHandle<()>>,
    /// `PPM_SIM_PROGRESS=always`: a line as each scenario starts.
    eager: bool,
}

impl Progress {
    /// Starts showing progress on stderr (unless `PPM_SIM_PROGRESS=never`).
    #[must_use]
    pub fn start() -> Self {
        let shared = Arc::new(Shared::new(std::io::stderr().is_terminal()));
        let setting = std::env::var(VARIABLE).unwrap_or_default();
        let eager = setting == "always";
        let ticker = (setting != "never").then(|| {
            let shared = Arc::clone(&shared);
            let quiet = if eager { Duration::ZERO } else { QUIET };
            std::thread::spawn(move || tick(&shared, quiet))
        });
        Self { shared, ticker, eager }
    }

    /// From now on `label` runs `scenario`: the observer to give its run, which counts its
    /// reads.
    #[must_use]
    pub fn scenario(&self, label: &str, scenario: &Scenario) -> ReadObserver {
        // Each sample reads every counter a correct PEP describes.
        let expected = scenario.expected_reads();
        *self.shared.label.lock().unwrap_or_else(PoisonError::into_inner) =
            escaped(label).into_owned();
        self.shared.reads.store(0, Ordering::Relaxed);
        self.shared.expected.store(expected, Ordering::Relaxed);
        let started = u64::try_from(self.shared.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.shared.scenario_start_ms.store(started, Ordering::Relaxed);
        if self.eager {
            self.shared.show();
        }
        let shared = Arc::clone(&self.shared);
        ReadObserver(Arc::new(move |_: &TracedRead| {
            shared.reads.fetch_add(1, Ordering::Relaxed);
        }))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            ticker.thread().unpark();
            let _ = ticker.join();
        }
    }
}

/// The ticker: shows the line when due (once a scenario runs), until stopped; then erases a
/// terminal's line.
fn tick(shared: &Shared, quiet: Duration) {
    let mut next = shared.start + quiet;
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(TICK);
        let now = Instant::now();
        if now < next
            || shared.stop.load(Ordering::Relaxed)
            || shared.label.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
        {
            continue;
        }
        shared.show();
        next = now + if shared.terminal { TERMINAL_EVERY } else { LOG_EVERY };
    }
    shared.erase();
}

/// The progress line after `elapsed` (since the progress started).
fn status(shared: &Shared, elapsed: Duration) -> String {
    let label = shared.label.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let expected = shared.expected.load(Ordering::Relaxed);
    let reads = shared.reads.load(Ordering::Relaxed);
    let percent = (reads.saturating_mul(100) / expected.max(1)).min(100);
    let started = Duration::from_millis(shared.scenario_start_ms.load(Ordering::Relaxed));
    let left = time_left(expected, reads, elapsed.saturating_sub(started))
        .map_or_else(String::new, |left| format!(", about {} s left", left.as_secs()));
    format!(
        "ppm-sim: {label}: {percent:>3} % of about {expected} reads, {} s so far{left}",
        elapsed.as_secs()
    )
}

/// The time a scenario that made `reads` of its `expected` reads in `spent` has left at that
/// pace: `None` before it has made a hundredth of them (its start, an image's boot, says
/// little of its pace) and once it has made them all.
fn time_left(expected: u64, reads: u64, spent: Duration) -> Option<Duration> {
    if reads == 0 || reads >= expected || reads.saturating_mul(100) < expected {
        return None;
    }
    let left_ms =
        spent.as_millis().saturating_mul(u128::from(expected - reads)) / u128::from(reads);
    Some(Duration::from_millis(u64::try_from(left_ms).unwrap_or(u64::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_run_its_share_and_its_time() {
        let progress =
            Progress { shared: Arc::new(Shared::new(false)), ticker: None, eager: false };
        let scenario = crate::builtin::get("default").expect("the default scenario");
        let observer = progress.scenario("validate 1/2 de\u{1b}[2Jfault", &scenario);
        let expected = progress.shared.expected.load(Ordering::Relaxed);
        assert!(expected > 0);
        let read = TracedRead {
            time_ms: 0.0,
            processor: 0,
            counter_index: 0,
            nominal: 0,
            actual: 0,
            served: true,
            faulted: false,
            foreign: false,
            interval: None,
        };
        // Before a hundredth of its reads a scenario's pace says nothing yet.
        assert!(expected > 100);
        let line = status(&progress.shared, Duration::from_secs(3));
        assert!(line.ends_with(", 3 s so far"), "{line}");
        (observer.0)(&read);
        let line = status(&progress.shared, Duration::from_secs(3));
        assert!(line.ends_with(", 3 s so far"), "{line}");
        for _ in 1..expected / 2 {
            (observer.0)(&read);
        }
        // The scenario started 2 s into the run: half its reads took 5 s, the rest take 5 s more.
        progress.shared.scenario_start_ms.store(2000, Ordering::Relaxed);
        let line = status(&progress.shared, Duration::from_secs(7));
        // A control character in a name is shown escaped, never sent to the terminal.
        assert_eq!(
            line,
            format!(
                "ppm-sim: validate 1/2 de\\u{{1b}}[2Jfault:  50 % of about {expected} reads, 7 s so \
                 far, about 5 s left"
            )
        );
        for _ in expected / 2..expected {
            (observer.0)(&read);
        }
        // All its reads made: nothing left to estimate.
        let line = status(&progress.shared, Duration::from_secs(12));
        assert!(line.ends_with(&format!("100 % of about {expected} reads, 12 s so far")), "{line}");
    }

    #[test]
    fn a_scenario_is_expected_to_read_each_counter_of_each_sample() {
        let progress =
            Progress { shared: Arc::new(Shared::new(false)), ticker: None, eager: false };
        let scenario = crate::builtin::get("nested-reads").expect("a built-in scenario");
        // Two views of the counters, each read at every sample: 100 % only when both are read.
        assert_eq!(scenario.expected_counter_count(), 2);
        let _observer = progress.scenario("nested-reads", &scenario);
        let samples = u64::from(scenario.platform.processors)
            * (u64::from(scenario.pofx.duration_ms / scenario.pofx.sample_interval_ms) + 1);
        assert_eq!(progress.shared.expected.load(Ordering::Relaxed), 2 * samples);
    }
}
