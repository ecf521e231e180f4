//! The hang limit: a thread that stops the emulation when one command has run longer than its
//! limit of wall-clock time, the time spent waiting for `ppm-sim`'s answers not counted
//! (`pause`/`resume`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::unicorn::{Engine, Handle};

/// What the watchdog's thread and the runner share.
struct State {
    deadline: Option<Instant>,
    fired: bool,
    /// When each pending pause began (host requests nest).
    paused: Vec<Instant>,
}

/// The engine's handle, sent to the watchdog's thread (`uc_emu_stop` may be called from any
/// thread).
struct SendHandle(Handle);

// SAFETY: the thread only calls uc_emu_stop with the handle, which Unicorn allows from any
// thread, and the engine lives for the process's life.
unsafe impl Send for SendHandle {}

/// The watchdog's thread: every `tick`, stops the engine of `handle` while the command `shared`
/// describes is past its deadline and not paused.
// The lock is held across the stop, not dropped once `fired` is set (the lint's advice): the
// runner then cannot arm its next command in between, whose run the stop would end.
#[allow(clippy::significant_drop_tightening)]
fn watch(shared: &Mutex<State>, handle: &SendHandle, tick: Duration) -> ! {
    loop {
        std::thread::sleep(tick);
        let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
        if state
            .deadline
            .is_some_and(|deadline| state.paused.is_empty() && Instant::now() > deadline)
        {
            state.fired = true;
            // Again on every tick: a nested call's stop ends only its own run.
            Engine::stop_handle(handle.0);
        }
    }
}

/// The hang limit of one engine.
pub struct Watchdog {
    state: Arc<Mutex<State>>,
    /// The limit, in seconds.
    pub limit_seconds: f64,
}

impl Watchdog {
    /// Starts the watchdog's thread for `engine`.
    pub fn start(engine: &Engine, limit_seconds: f64) -> Self {
        let state =
            Arc::new(Mutex::new(State { deadline: None, fired: false, paused: Vec::new() }));
        let shared = Arc::clone(&state);
        let handle = SendHandle(engine.handle());
        let tick = Duration::from_secs_f64((limit_seconds / 10.0).min(0.05));
        std::thread::Builder::new()
            .name("hang-watchdog".to_owned())
            .spawn(move || watch(&shared, &handle, tick))
            .ok();
        Self { state, limit_seconds }
    }

    /// The state, locked.
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A command starts.
    pub fn arm(&self) {
        let mut state = self.lock();
        state.deadline = Some(Instant::now() + Duration::from_secs_f64(self.limit_seconds));
        state.fired = false;
    }

    /// The command ended.
    pub fn disarm(&self) {
        self.lock().deadline = None;
    }

    /// A host request waits for `ppm-sim`.
    pub fn pause(&self) {
        self.lock().paused.push(Instant::now());
    }

    /// The answer came.
    pub fn resume(&self) {
        let mut state = self.lock();
        if let Some(began) = state.paused.pop()
            && let Some(deadline) = state.deadline
        {
            state.deadline = Some(deadline + began.elapsed());
        }
    }

    /// Whether the limit stopped the current command.
    pub fn fired(&self) -> bool {
        self.lock().fired
    }
}
