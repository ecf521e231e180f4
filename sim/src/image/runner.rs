//! The runner process and the line protocol of `docs/image-backend.md`: one JSON object per
//! line each way; a command's final `done`, with any number of host requests before it.

use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, IoSlice, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

use ppm_doorbell::Doorbell;
use serde_json::{Map, Value, json};

use super::affinity::Placement;

/// The runner's page: `read` requests are at most this long.
const PAGE: u64 = 4096;
/// [`PAGE`], as a buffer length.
const PAGE_BYTES: usize = 4096;
const _: () = assert!(PAGE_BYTES as u64 == PAGE);

/// The pages of the 47-bit user half of the address space, where `ppm-sim`'s memory lies (the
/// runner's own memory lies above it).
const USER_PAGES: u64 = (1 << 47) / PAGE;

/// The longest line the runner may send (a `done` with a call's writes, or a report with the
/// image's functions): far above any real one, it bounds a broken runner.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What the image did that Windows would stop with a bugcheck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crash {
    /// The bugcheck code (0: the runner stopped a hang).
    pub code: u32,
    /// Its four parameters.
    pub parameters: [u64; 4],
    /// What happened, in the runner's words.
    pub what: String,
    /// Where, as `function+0xOFFSET`.
    pub symbol: String,
}

impl fmt::Display for Crash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bugcheck {:#x} at {}: {}",
            self.code,
            super::symbols::readable_symbols(&self.symbol),
            super::symbols::readable_symbols(&self.what)
        )
    }
}

/// Why the runner could not go on: the run stops with exit code 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerError(pub String);

impl fmt::Display for RunnerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What answers the runner's host requests during a command (`host::ImageHost`).
pub trait Host {
    /// Answers request `name` (`message` is the whole request).
    ///
    /// # Errors
    /// A request this host cannot answer.
    fn serve(&self, name: &str, message: &Value) -> Result<Value, String>;

    /// The time-stamp counter as a read on the calling processor would return it as the k-th
    /// interrupt window from now ([`SimPlatform::timestamps_ahead`]; `None`: this host cannot
    /// say). They travel with every answer of a command that carries `timestamps`, so that
    /// the runner answers the image's time-stamp reads itself and reports them as `deferred`.
    ///
    /// [`SimPlatform::timestamps_ahead`]: crate::platform::SimPlatform::timestamps_ahead
    fn timestamps(&self) -> Option<Vec<u64>> {
        None
    }
}

/// The host of `load`, which makes no request.
struct NoRequests;

impl Host for NoRequests {
    fn serve(&self, name: &str, _: &Value) -> Result<Value, String> {
        Err(format!("`{name}` during load"))
    }
}

/// The pipes to the runner, used by one command at a time (see [`Runner::command`]), and the
/// doorbell beside them when the run spins ([`super::Handoff::Spinning`]).
struct Pipes {
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    doorbell: Option<Doorbell>,
}

/// The runner process.
pub struct Runner {
    /// Where the runner mapped the image.
    pub image_base: u64,
    /// The image's entry point (`FxDriverEntry`), where it was mapped.
    pub entry: u64,
    /// The `TimeDateStamp` of the image file's PE header (0 when it cannot be read).
    pub time_date_stamp: u32,
    /// Whether the runner holds the image to Driver Verifier's rules (`--verifier`).
    pub verifier: bool,
    child: Mutex<Child>,
    pipes: Mutex<Pipes>,
    /// This process's memory, for `read` requests and `writes` (a read of an unmapped address
    /// fails instead of faulting).
    memory: File,
    /// The first error, after which every command fails at once.
    failed: Mutex<Option<RunnerError>>,
}

/// The most pages a `call` may carry (docs/image-backend.md; the runner's `MAX_CALL_PAGES`).
const MAX_CALL_PAGES: usize = 8;

/// A command under way on the calling thread.
#[derive(Default)]
struct UnderWay {
    /// The pages of this process served to it: sent with it, fetched, or sent with an answer.
    served: Vec<u64>,
    /// The pages served to the commands nested in it since its last answer, each once.
    nested: Vec<u64>,
}

impl UnderWay {
    /// A command nested in this one finished, having been served `pages`.
    fn nested_finished(&mut self, pages: Vec<u64>) {
        for page in pages {
            if !self.nested.contains(&page) {
                self.nested.push(page);
            }
        }
    }

    /// The pages an answer to this command carries (`memory`: this process's): those served
    /// to the commands nested in it since its last answer (their notifications' payloads)
    /// that it was not served itself, read afresh, served to it from now.
    fn resume_pages(&mut self, memory: &File, pages: &mut Pages) {
        let nested = std::mem::take(&mut self.nested);
        read_pages(memory, nested.into_iter().map(|page| page * PAGE), &mut self.served, pages);
    }
}

/// The pages one message carries: their addresses, and their bytes one after the other.
#[derive(Default)]
struct Pages {
    addresses: Vec<u64>,
    /// Room for the most pages a message carries, zeroed once: the first
    /// `addresses.len()` pages are the message's.
    buffer: Vec<u8>,
}

impl Pages {
    /// The pages' bytes, in the order of their addresses.
    fn bytes(&self) -> &[u8] {
        &self.buffer[..self.addresses.len() * PAGE_BYTES]
    }
}

/// The buffers the calling thread builds its messages in: the line and the pages' bytes.
/// Reused, so that a message allocates nothing: buffers of 8 to 36 KiB allocated afresh for
/// each message cost page faults whenever the heap had returned their memory.
#[derive(Default)]
struct Outgoing {
    line: Vec<u8>,
    pages: Pages,
}

thread_local! {
    /// The calling thread's [`Outgoing`]: a message is built and sent before the next one (a
    /// nested command's) is, so one each is enough.
    static OUTGOING: RefCell<Outgoing> = RefCell::new(Outgoing::default());
    /// The calling thread's last line received from the runner, its buffer reused: a line is
    /// parsed before the next one is read.
    static INCOMING: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The pages of this process (`memory`) that hold `addresses`, each once, read now (up to the
/// protocol's limit, none already in `served`) into `pages` (emptied first), added to
/// `served`. An address whose page cannot be read, or lies outside the user half, is left to
/// the runner's own fetch.
fn read_pages(
    memory: &File,
    addresses: impl Iterator<Item = u64>,
    served: &mut Vec<u64>,
    pages: &mut Pages,
) {
    pages.addresses.clear();
    pages.buffer.resize(MAX_CALL_PAGES * PAGE_BYTES, 0);
    for address in addresses {
        let page = address / PAGE;
        if address == 0
            || page >= USER_PAGES
            || served.contains(&page)
            || pages.addresses.len() == MAX_CALL_PAGES
        {
            continue;
        }
        let start = pages.addresses.len() * PAGE_BYTES;
        let room = &mut pages.buffer[start..start + PAGE_BYTES];
        if memory.read_exact_at(room, page * PAGE).is_ok() {
            served.push(page);
            pages.addresses.push(page * PAGE);
        }
    }
}

thread_local! {
    /// The commands the calling thread has under way, outermost first (a nested call runs
    /// inside a host request of the command it interrupts, on the same thread, with the pipes
    /// free). A nested command sends the interrupted commands' pages along, and the answer
    /// that resumes the interrupted command sends the nested commands' pages: the runner takes
    /// them afresh each time, and keeps them live instead of protecting and unprotecting them
    /// at each interrupt window. Per thread for the reason [`crate::platform::ambient`] gives:
    /// the nested call reaches the runner through the engine's callbacks, which carry no
    /// emulator state.
    static UNDER_WAY: RefCell<Vec<UnderWay>> = const { RefCell::new(Vec::new()) };
}

/// The calling thread's innermost command under way (`f` of an empty one when none is).
fn here<R>(f: impl FnOnce(&mut UnderWay) -> R) -> R {
    UNDER_WAY.with(|under_way| {
        let mut under_way = under_way.borrow_mut();
        let mut none = UnderWay::default();
        f(under_way.last_mut().unwrap_or(&mut none))
    })
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner").field("failed", &self.error()).finish_non_exhaustive()
    }
}

impl Runner {
    /// Starts `script` (`scripts/image-runner.sh`) and loads `image`, built for `arch` (`x64`,
    /// `arm64`), with `stack_bytes` of kernel stack, under Driver Verifier's rules when
    /// `verifier` is given. When `placement` spins, the runner takes its doorbell and the two
    /// processes hand over by it ([`super::Handoff::Spinning`]).
    ///
    /// # Errors
    /// When the runner cannot be started or cannot load the image.
    pub fn start(
        script: &Path,
        image: &Path,
        arch: &str,
        stack_bytes: u64,
        verifier: Option<&super::verifier::VerifierOptions>,
        placement: &mut Placement,
    ) -> Result<Self, RunnerError> {
        let mut command = Command::new("bash");
        let doorbell = placement.take_doorbell();
        match &doorbell {
            Some(doorbell) => doorbell.give_to_child(&mut command),
            None => {
                command.env_remove(ppm_doorbell::FD_VARIABLE);
            }
        }
        let mut child = command
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| {
                RunnerError(format!("cannot start the image runner {}: {error}", script.display()))
            })?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(RunnerError("the image runner's pipes are missing".to_owned()));
        };
        let memory = File::options()
            .read(true)
            .write(true)
            .open("/proc/self/mem")
            .map_err(|error| RunnerError(format!("cannot open /proc/self/mem: {error}")))?;
        let mut runner = Self {
            image_base: 0,
            entry: 0,
            time_date_stamp: super::pe::PeImage::read(image)
                .map_or(0, |image| image.time_date_stamp),
            child: Mutex::new(child),
            pipes: Mutex::new(Pipes { input, output: BufReader::new(output), doorbell }),
            memory,
            failed: Mutex::new(None),
            verifier: verifier.is_some(),
        };
        let map = image.with_extension("map");
        let loaded = runner.command(
            &json!({
                "op": "load",
                "image": image.to_string_lossy(),
                "map": map.to_string_lossy(),
                "arch": arch,
                "stack_bytes": stack_bytes,
                "verifier": verifier.map(super::verifier::VerifierOptions::load_message),
            }),
            &NoRequests,
        )?;
        let number = |key: &str| loaded.get(key).and_then(Value::as_u64);
        let (Some(image_base), Some(entry)) = (number("image_base"), number("entry")) else {
            return Err(RunnerError(format!(
                "the runner loaded the image but named no base or entry: {loaded:?}"
            )));
        };
        runner.image_base = image_base;
        runner.entry = entry;
        Ok(runner)
    }

    /// The first error the runner met, if any.
    #[must_use]
    pub fn error(&self) -> Option<RunnerError> {
        self.failed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn fail(&self, error: RunnerError) -> RunnerError {
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        failed.get_or_insert(error).clone()
    }

    /// Sends `command` and serves the runner's host requests with `host` until its `done`,
    /// which it returns. A nested command (sent from inside a host request, on the same
    /// thread) reuses the pipes the outer command is not using while it waits.
    ///
    /// # Errors
    /// When the runner failed (then every later command fails too).
    pub fn command(
        &self,
        command: &Value,
        host: &dyn Host,
    ) -> Result<Map<String, Value>, RunnerError> {
        self.command_with_pages(command, &[], host)
    }

    /// As [`Self::command`], with the pages of this process that hold `addresses` sent along
    /// (`pages`): the runner maps them before the call instead of asking for each on first
    /// touch. An address whose page cannot be read, or lies outside the user half, is left
    /// to the runner's own fetch (and fault). A nested command also sends the pages served to
    /// the commands it interrupts (up to the protocol's limit), which the runner would
    /// otherwise read again.
    ///
    /// # Errors
    /// As [`Self::command`].
    pub fn command_with_pages(
        &self,
        command: &Value,
        addresses: &[u64],
        host: &dyn Host,
    ) -> Result<Map<String, Value>, RunnerError> {
        if let Some(error) = self.error() {
            return Err(error);
        }
        let (nested, interrupted) = UNDER_WAY.with(|under_way| {
            let under_way = under_way.borrow();
            let pages: Vec<u64> =
                under_way.iter().flat_map(|level| &level.served).map(|page| page * PAGE).collect();
            (!under_way.is_empty(), pages)
        });
        // Commands from other threads wait for the whole exchange; a nested one runs inside it.
        let _exclusive = if nested { None } else { Some(self.exclusive()) };
        let mut served = Vec::new();
        let sent = OUTGOING.with(|outgoing| {
            let outgoing = &mut *outgoing.borrow_mut();
            let addresses = addresses.iter().chain(&interrupted).copied();
            read_pages(&self.memory, addresses, &mut served, &mut outgoing.pages);
            self.send_framed(command, outgoing)
        });
        UNDER_WAY.with(|under_way| {
            under_way.borrow_mut().push(UnderWay { served, nested: Vec::new() });
        });
        let timestamps = command.get("timestamps").is_some();
        let result = sent.and_then(|()| self.exchange(host, timestamps));
        UNDER_WAY.with(|under_way| {
            let mut under_way = under_way.borrow_mut();
            let finished = under_way.pop().unwrap_or_default();
            if let Some(interrupted) = under_way.last_mut() {
                interrupted.nested_finished(finished.served);
            }
        });
        result.map_err(|error| self.fail(error))
    }

    /// The lock that makes one thread's command exclusive. The pipes have their own lock, held
    /// per line only, so that a nested command can use them.
    fn exclusive(&self) -> MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serves the runner's host requests for the command just sent, to its `done`. The pages
    /// of this process the runner has for this command (those sent with it, then those it
    /// fetches: [`UNDER_WAY`]'s last) are the only ones its writes may land in.
    /// `timestamps`: the command carries `timestamps`, and so does each answer
    /// ([`Host::timestamps`]).
    fn exchange(
        &self,
        host: &dyn Host,
        timestamps: bool,
    ) -> Result<Map<String, Value>, RunnerError> {
        loop {
            let mut message = self.receive()?;
            serve_deferred(&message, host)?;
            if let Some(done) = message.as_object_mut().and_then(|fields| fields.remove("done")) {
                let Value::Object(done) = done else {
                    return Err(RunnerError(format!(
                        "the runner's `done` is not an object: {done}"
                    )));
                };
                here(|level| self.apply_writes(&done, &level.served))?;
                return Ok(done);
            }
            if let Some(error) = message.get("error") {
                return Err(RunnerError(format!("the image runner failed: {}", text(error))));
            }
            let Some(request) = message.get("host").and_then(Value::as_str) else {
                return Err(RunnerError(format!(
                    "the runner sent neither a request nor an answer: {}",
                    shorten(&message)
                )));
            };
            let mut answer = if request == "read" {
                self.read(&message)?
            } else {
                host.serve(request, &message).map_err(RunnerError)?
            };
            if timestamps
                && let (Some(ahead), Value::Object(fields)) = (host.timestamps(), &mut answer)
            {
                fields.insert("timestamps".to_owned(), json!(ahead));
            }
            OUTGOING.with(|outgoing| {
                let outgoing = &mut *outgoing.borrow_mut();
                here(|level| level.resume_pages(&self.memory, &mut outgoing.pages));
                self.send_framed(&answer, outgoing)
            })?;
        }
    }

    /// A `read` request: one page of this process's memory, or a fault.
    fn read(&self, message: &Value) -> Result<Value, RunnerError> {
        let (Some(address), Some(length)) = (
            message.get("address").and_then(Value::as_u64),
            message.get("length").and_then(Value::as_u64),
        ) else {
            return Err(RunnerError(format!(
                "a read request without address or length: {message}"
            )));
        };
        if length == 0 || length > PAGE || address / PAGE != (address + length - 1) / PAGE {
            return Err(RunnerError(format!("a read request crossing a page: {message}")));
        }
        let mut bytes = vec![0u8; usize::try_from(length).unwrap_or(0)];
        // A read of an address that is not mapped fails (EIO) instead of faulting.
        if self.memory.read_exact_at(&mut bytes, address).is_err() {
            return Ok(json!({"fault": true}));
        }
        let page = address / PAGE;
        here(|level| {
            if !level.served.contains(&page) {
                level.served.push(page);
            }
        });
        Ok(json!({"bytes": hex(&bytes)}))
    }

    /// Applies a `done`'s `writes`: each inside a page served for this command.
    fn apply_writes(&self, done: &Map<String, Value>, served: &[u64]) -> Result<(), RunnerError> {
        let Some(writes) = done.get("writes") else { return Ok(()) };
        let Some(writes) = writes.as_array() else {
            return Err(RunnerError(format!("`writes` is not a list: {}", shorten(writes))));
        };
        for write in writes {
            let (Some(address), Some(bytes)) = (
                write.get(0).and_then(Value::as_u64),
                write.get(1).and_then(Value::as_str).and_then(unhex),
            ) else {
                return Err(RunnerError(format!("a malformed write: {}", shorten(write))));
            };
            let end = address.checked_add(bytes.len() as u64).ok_or_else(|| {
                RunnerError(format!("a write past the address space: {address:#x}"))
            })?;
            if bytes.is_empty()
                || (address / PAGE..=(end - 1) / PAGE).any(|page| !served.contains(&page))
            {
                return Err(RunnerError(format!(
                    "the runner wrote {} bytes at {address:#x}, outside the pages it fetched",
                    bytes.len()
                )));
            }
            self.memory.write_all_at(&bytes, address).map_err(|error| {
                RunnerError(format!("cannot apply a write at {address:#x}: {error}"))
            })?;
        }
        Ok(())
    }

    fn send(&self, message: &Value) -> Result<(), RunnerError> {
        OUTGOING.with(|outgoing| {
            let outgoing = &mut *outgoing.borrow_mut();
            outgoing.pages.addresses.clear();
            self.send_framed(message, outgoing)
        })
    }

    /// Sends `message` with `outgoing`'s pages ([`framed`]), the line built in `outgoing`'s.
    fn send_framed(&self, message: &Value, outgoing: &mut Outgoing) -> Result<(), RunnerError> {
        framed(message, &outgoing.pages.addresses, &mut outgoing.line)?;
        let mut pipes = self.pipes.lock().unwrap_or_else(PoisonError::into_inner);
        let sent = write_message(&mut pipes.input, &outgoing.line, outgoing.pages.bytes());
        if sent.is_ok()
            && let Some(doorbell) = &pipes.doorbell
        {
            doorbell.ring();
        }
        drop(pipes);
        shrink_large(&mut outgoing.line);
        sent.map_err(|error| RunnerError(format!("the image runner stopped reading: {error}")))
    }

    fn receive(&self) -> Result<Value, RunnerError> {
        INCOMING.with(|line| self.receive_into(&mut line.borrow_mut()))
    }

    /// [`Self::receive`], the line read into `line`.
    fn receive_into(&self, line: &mut String) -> Result<Value, RunnerError> {
        line.clear();
        line.shrink_to(KEPT_BUFFER_BYTES);
        let mut pipes = self.pipes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(doorbell) = &mut pipes.doorbell {
            doorbell.wait();
        }
        let read = (&mut pipes.output)
            .take(MAX_LINE_BYTES as u64)
            .read_line(line)
            .map_err(|error| RunnerError(format!("cannot read from the image runner: {error}")))?;
        drop(pipes);
        if read == 0 {
            return Err(RunnerError(
                "the image runner exited unexpectedly (its messages are above)".to_owned(),
            ));
        }
        if !line.ends_with('\n') {
            return Err(RunnerError(format!(
                "the image runner sent a line over {MAX_LINE_BYTES} bytes"
            )));
        }
        serde_json::from_str(line).map_err(|error| {
            RunnerError(format!(
                "the image runner sent a malformed line ({error}): {}",
                shorten_text(line)
            ))
        })
    }

    /// Ends the runner (`quit`), waiting for it.
    pub fn quit(&self) {
        let _ = self.send(&json!({"op": "quit"}));
        let mut child = self.exclusive();
        let _ = child.wait();
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `bytes` as lowercase hex (a page per `read` request: kept cheap, also in debug builds).
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let text = bytes
        .iter()
        .flat_map(|byte| [DIGITS[usize::from(byte >> 4)], DIGITS[usize::from(byte & 0x0F)]])
        .collect();
    String::from_utf8(text).unwrap_or_default()
}

/// The most a reused message buffer keeps between messages: a report's line can be megabytes,
/// a command's a few hundred bytes.
const KEPT_BUFFER_BYTES: usize = 64 * 1024;

/// `buffer` given back to the allocator above [`KEPT_BUFFER_BYTES`].
fn shrink_large(buffer: &mut Vec<u8>) {
    if buffer.capacity() > KEPT_BUFFER_BYTES {
        buffer.clear();
        buffer.shrink_to(KEPT_BUFFER_BYTES);
    }
}

/// Writes `line`, then `pages`, all of them, with as few system calls as `writer` takes
/// (one `writev` for both when the pipe has room).
fn write_message(writer: &mut impl Write, line: &[u8], pages: &[u8]) -> std::io::Result<()> {
    let mut parts = [IoSlice::new(line), IoSlice::new(pages)];
    let mut parts = &mut parts[..];
    // No empty part first: writing it would take no bytes, which reads as a closed pipe.
    IoSlice::advance_slices(&mut parts, 0);
    while !parts.is_empty() {
        match writer.write_vectored(parts) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut parts, written),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// `message`, a JSON object, as the protocol sends it, into `line` (emptied first): one line,
/// its `pages` member naming the pages at `addresses` (`[[address, 4096], ...]`); the pages'
/// raw bytes follow it, in that order.
///
/// Raw, not hex in the line: a page in every `call` as 8 KiB of hex cost the runner a third of
/// its work per nested call (decoding it, and scanning the long line for its end twice).
fn framed(message: &Value, addresses: &[u64], line: &mut Vec<u8>) -> Result<(), RunnerError> {
    line.clear();
    serde_json::to_writer(&mut *line, message)
        .map_err(|error| RunnerError(format!("cannot encode a message for the runner: {error}")))?;
    if !addresses.is_empty() {
        if line.pop() != Some(b'}') {
            return Err(RunnerError(format!(
                "pages sent with a message that is not an object: {message}"
            )));
        }
        if line.len() > 1 {
            line.push(b',');
        }
        line.extend_from_slice(b"\"pages\":[");
        for (index, address) in addresses.iter().enumerate() {
            if index > 0 {
                line.push(b',');
            }
            serde_json::to_writer(&mut *line, &[*address, PAGE]).map_err(|error| {
                RunnerError(format!("cannot encode a page address for the runner: {error}"))
            })?;
        }
        line.extend_from_slice(b"]}");
    }
    line.push(b'\n');
    Ok(())
}

/// Hex text as bytes (`None` when it is not hex of whole bytes).
#[must_use]
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    const fn digit(character: u8) -> Option<u8> {
        match character {
            b'0'..=b'9' => Some(character - b'0'),
            b'a'..=b'f' => Some(character - b'a' + 10),
            b'A'..=b'F' => Some(character - b'A' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks_exact(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

/// Serves, in order, the requests a message carries in `deferred`: operations the image made
/// that the runner answered itself (its interrupt masking and current processor in a call that
/// names its processor, its time-stamp reads in one that carries the counter), reported with
/// its next message. An answer the runner used must agree with the one served.
fn serve_deferred(message: &Value, host: &dyn Host) -> Result<(), RunnerError> {
    let Some(deferred) = message.get("deferred") else { return Ok(()) };
    let Some(requests) = deferred.as_array() else {
        return Err(RunnerError(format!("`deferred` is not a list: {}", shorten(deferred))));
    };
    for request in requests {
        match request.get("host").and_then(Value::as_str) {
            Some("interrupts") => {
                host.serve("interrupts", request).map_err(RunnerError)?;
            }
            Some(name @ ("current_processor" | "rdtsc" | "mrs")) => {
                // An answer the runner gave itself, from the `processor` or `timestamps` it was
                // sent: the request is served here, in its place among the operations (its
                // interrupt window may take time), and must agree.
                let key = if name == "current_processor" { "index" } else { "value" };
                let used = request.get(key).and_then(Value::as_u64);
                let served = host.serve(name, request).map_err(RunnerError)?;
                let served = served.get(key).and_then(Value::as_u64);
                if used.is_none() || used != served {
                    return Err(RunnerError(format!(
                        "the runner answered a deferred {} with {key} {used:?}, the machine \
                         says {served:?}",
                        shorten(request)
                    )));
                }
            }
            _ => {
                return Err(RunnerError(format!(
                    "a deferred request other than `interrupts`, `current_processor`, `rdtsc` or \
                     `mrs`: {}",
                    shorten(request)
                )));
            }
        }
    }
    Ok(())
}

fn text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

fn shorten(value: &Value) -> String {
    shorten_text(&value.to_string())
}

fn shorten_text(text: &str) -> String {
    let text = text.trim_end();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A `crash` answer, if `done` is one.
///
/// # Errors
/// When the crash is malformed.
pub fn crash_of(done: &Map<String, Value>) -> Result<Option<Crash>, RunnerError> {
    let Some(crash) = done.get("crash") else { return Ok(None) };
    let number = |key: &str| crash.get(key).and_then(Value::as_u64);
    let parameters = crash.get("parameters").and_then(Value::as_array).map(|list| {
        let mut four = [0u64; 4];
        for (slot, value) in four.iter_mut().zip(list) {
            *slot = value.as_u64().unwrap_or(0);
        }
        four
    });
    let (Some(code), Some(parameters)) = (number("code"), parameters) else {
        return Err(RunnerError(format!("a malformed crash: {}", shorten(crash))));
    };
    Ok(Some(Crash {
        code: u32::try_from(code).unwrap_or(u32::MAX),
        parameters,
        what: crash.get("what").map(text).unwrap_or_default(),
        symbol: crash.get("symbol").map(text).unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every request with the same value (and processor index) and records what it
    /// served.
    struct Clock {
        value: u64,
        served: std::cell::RefCell<Vec<String>>,
    }

    impl Host for Clock {
        fn serve(&self, name: &str, _: &Value) -> Result<Value, String> {
            self.served.borrow_mut().push(name.to_owned());
            Ok(json!({"value": self.value, "index": self.value}))
        }
    }

    #[test]
    fn a_deferred_request_is_made_in_order_and_must_agree() {
        let clock = Clock { value: 42, served: std::cell::RefCell::default() };
        let deferred = json!({"deferred": [
            {"host": "current_processor", "index": 42},
            {"host": "interrupts", "enabled": false},
            {"host": "rdtsc", "value": 42},
            {"host": "mrs", "op0": 3, "op1": 3, "crn": 14, "crm": 0, "op2": 2, "value": 42},
        ]});
        serve_deferred(&deferred, &clock).expect("the reads agree");
        assert_eq!(*clock.served.borrow(), ["current_processor", "interrupts", "rdtsc", "mrs"]);
        let elsewhere = json!({"deferred": [{"host": "current_processor", "index": 7}]});
        let error = serve_deferred(&elsewhere, &clock).expect_err("another processor");
        assert!(error.0.contains("Some(7)") && error.0.contains("Some(42)"), "{error}");
        let wrong = json!({"deferred": [{"host": "rdtsc", "value": 41}]});
        let error = serve_deferred(&wrong, &clock).expect_err("the reads disagree");
        assert!(error.0.contains("Some(41)") && error.0.contains("Some(42)"), "{error}");
        let valueless = json!({"deferred": [{"host": "rdtsc"}]});
        serve_deferred(&valueless, &clock).expect_err("no value used");
    }

    #[test]
    fn an_answer_resumes_with_the_pages_its_nested_commands_were_served_each_once() {
        let mut memory = vec![0u8; 3 * PAGE_BYTES];
        let page = (memory.as_ptr() as u64).div_ceil(PAGE);
        let offset = usize::try_from(page * PAGE - memory.as_ptr() as u64).expect("small");
        memory[offset + PAGE_BYTES..offset + 2 * PAGE_BYTES].fill(0x5a);
        let this_process = File::open("/proc/self/mem").expect("this process's memory");
        let mut interrupted = UnderWay { served: vec![page], nested: Vec::new() };
        interrupted.nested_finished(vec![page, page + 1]); // its own page was sent along
        interrupted.nested_finished(vec![page + 1]);
        assert_eq!(interrupted.nested, [page, page + 1], "each page once");
        let mut resumed = Pages::default();
        interrupted.resume_pages(&this_process, &mut resumed);
        assert_eq!(resumed.addresses, [(page + 1) * PAGE], "only the page it was not served");
        assert_eq!(resumed.bytes().len(), PAGE_BYTES);
        assert!(resumed.bytes().iter().all(|&byte| byte == 0x5a), "as this process holds it now");
        assert_eq!(interrupted.served, [page, page + 1], "served to it from now");
        interrupted.resume_pages(&this_process, &mut resumed);
        assert!(resumed.addresses.is_empty() && resumed.bytes().is_empty(), "taken once");
    }

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(hex(&bytes), "0001abff");
        assert_eq!(unhex("0001abff").as_deref(), Some(&bytes[..]));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }

    #[test]
    fn a_message_names_its_pages_in_one_line() {
        let command = json!({"op": "call", "address": 7, "args": [1, 2]});
        let mut line = b"left over".to_vec();
        framed(&command, &[PAGE, 3 * PAGE], &mut line).expect("a message");
        let end = line.iter().position(|&byte| byte == b'\n');
        assert_eq!(end, Some(line.len() - 1), "one line, ended by its newline");
        let mut expected = command.clone();
        expected["pages"] = json!([[PAGE, PAGE_BYTES], [3 * PAGE, PAGE_BYTES]]);
        assert_eq!(serde_json::from_slice::<Value>(&line).expect("JSON"), expected);
        framed(&command, &[], &mut line).expect("a line");
        assert_eq!(line, format!("{command}\n").into_bytes());
        framed(&json!({}), &[0], &mut line).expect("a message");
        assert_eq!(
            serde_json::from_slice::<Value>(&line).expect("JSON"),
            json!({"pages": [[0, PAGE_BYTES]]})
        );
        assert!(framed(&json!([1]), &[0], &mut line).is_err(), "pages need an object");
    }

    /// A pipe that takes at most `chunk` bytes a call, as a full one does.
    struct Trickle {
        chunk: usize,
        taken: Vec<u8>,
    }

    impl Write for Trickle {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let taken = bytes.len().min(self.chunk);
            self.taken.extend_from_slice(&bytes[..taken]);
            Ok(taken)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_message_is_written_whole_its_line_then_its_pages() {
        let line = b"{\"pages\":[[4096,4096]]}\n";
        let pages: Vec<u8> =
            (0..2 * PAGE_BYTES).map(|n| u8::try_from(n % 251).expect("below 251")).collect();
        for chunk in [1, 3, 4096, usize::MAX] {
            let mut pipe = Trickle { chunk, taken: Vec::new() };
            write_message(&mut pipe, line, &pages).expect("written");
            assert_eq!(pipe.taken, [&line[..], &pages].concat(), "taking {chunk} a call");
            let mut pipe = Trickle { chunk, taken: Vec::new() };
            write_message(&mut pipe, line, &[]).expect("written");
            assert_eq!(pipe.taken, line, "no pages: the line alone");
        }
        let mut closed = Trickle { chunk: 0, taken: Vec::new() };
        let error = write_message(&mut closed, line, &pages).expect_err("a pipe that takes none");
        assert_eq!(error.kind(), std::io::ErrorKind::WriteZero);
    }

    #[test]
    fn a_reused_buffer_keeps_little() {
        let mut buffer = vec![0u8; 4 * KEPT_BUFFER_BYTES];
        shrink_large(&mut buffer);
        assert!(buffer.capacity() <= KEPT_BUFFER_BYTES && buffer.is_empty());
        let mut small = Vec::with_capacity(100);
        small.push(1u8);
        shrink_large(&mut small);
        assert_eq!(small, [1], "a small buffer is kept as it is");
    }

    #[test]
    fn a_crash_is_read_whole() {
        let done = json!({"crash": {"code": 30, "parameters": [3_221_225_622_u64, 1, 0, 0],
            "what": "#GP", "symbol": "f+0x3", "address": 1}});
        let crash =
            crash_of(done.as_object().expect("object")).expect("well formed").expect("a crash");
        assert_eq!(crash.code, 0x1E);
        assert_eq!(crash.parameters[0], 0xC000_0096);
        assert_eq!(crash.to_string(), "bugcheck 0x1e at f+0x3: #GP");
    }

    /// A host that records what it serves.
    struct Recorder(std::cell::RefCell<Vec<Value>>);

    impl Host for Recorder {
        fn serve(&self, _: &str, message: &Value) -> Result<Value, String> {
            self.0.borrow_mut().push(message.clone());
            Ok(json!({}))
        }
    }

    #[test]
    fn deferred_interrupt_changes_are_served_in_order_and_an_msr_read_is_refused() {
        let host = Recorder(std::cell::RefCell::new(Vec::new()));
        let off = json!({"host": "interrupts", "enabled": false});
        let on = json!({"host": "interrupts", "enabled": true});
        let message = json!({"host": "rdtsc", "deferred": [off, on]});
        serve_deferred(&message, &host).expect("served");
        assert_eq!(*host.0.borrow(), vec![off, on]);
        serve_deferred(&json!({"host": "rdtsc"}), &host).expect("nothing deferred");
        assert_eq!(host.0.borrow().len(), 2);
        // A request whose answer the image needs cannot be deferred: a runner bug, refused.
        let error = serve_deferred(&json!({"done": {}, "deferred": [{"host": "rdmsr"}]}), &host)
            .expect_err("refused");
        assert!(error.0.contains("rdmsr"), "{error}");
        let error =
            serve_deferred(&json!({"deferred": "x"}), &host).expect_err("not a list: refused");
        assert!(error.0.contains("not a list"), "{error}");
        assert_eq!(host.0.borrow().len(), 2);
    }
}
