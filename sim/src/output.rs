//! `ppm-sim run`'s output files (`--trace`, `--plot`): checked before the run, written beside
//! their place, renamed into place at the end, so that a failed run leaves every existing file
//! as it was.
//!
//! Before anything is created, every output must:
//! - end in its extension (`.csv` for `--trace`, `.svg` or `.png` for `--plot`);
//! - be a regular file or not exist yet, in a directory that exists: a device (`/dev/null`,
//!   `/dev/stdout`, `/dev/full`), a pipe or a directory is refused, since an output is
//!   replaced by a rename (and the report owns stdout);
//! - not be read-only, and not be a symbolic link to nothing;
//! - be another file than the scenario file and than the other output: compared as canonical
//!   paths (symbolic links and `..` resolved) and, on Unix, by device and inode (hard links,
//!   and a scenario read from standard input redirected from a file).
//!
//! Each output is then created as `.NAME.ppm-sim-PID.tmp` beside it (so its directory is
//! proven writable before the run), written during and after the run, and renamed onto the
//! file at the end — onto the file a symbolic link names, so the link stays. Until the rename
//! an existing file is untouched; if any output fails, none is renamed and every temporary file
//! is removed. A file with several hard links is replaced under the name given only: its
//! other names keep the old content. A run killed by a signal may leave its temporary file.

use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};

/// One output file being written.
#[derive(Debug)]
struct PendingFile {
    /// The flag that asked for it (`--trace`, `--plot`).
    flag: &'static str,
    /// The path as given (for messages).
    requested: PathBuf,
    /// Where it goes: the canonical directory and the name (a symbolic link resolved).
    destination: PathBuf,
    /// The temporary file beside `destination`; `None` once renamed into place.
    temporary: Option<PathBuf>,
    /// The temporary file, open for writing, until taken.
    file: Option<File>,
}

/// The outputs of one run: temporary files until [`Outputs::commit`] renames them into place;
/// dropped before that, they are removed.
#[derive(Debug, Default)]
pub struct Outputs {
    files: Vec<PendingFile>,
}

/// What an output is compared with: the scenario file, or standard input.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// A scenario file.
    File(&'a Path),
    /// Standard input (`run -`).
    Stdin,
}

/// An output asked for: the flag, the path, the extensions it may have (lowercase).
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// `--trace`, `--plot`.
    pub flag: &'static str,
    /// The path given.
    pub path: &'a Path,
    /// The accepted extensions, e.g. `["svg", "png"]`.
    pub extensions: &'static [&'static str],
}

/// The identity of an existing file: device and inode (Unix only).
type Identity = (u64, u64);

#[cfg(unix)]
#[allow(clippy::unnecessary_wraps)] // `None` on other systems.
fn identity(metadata: &Metadata) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt as _;
    Some((metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
const fn identity(_: &Metadata) -> Option<Identity> {
    None
}

/// The identity of standard input, when it is a file (Unix only).
#[cfg(unix)]
fn stdin_identity() -> Option<Identity> {
    use std::os::fd::AsFd as _;
    let descriptor = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    identity(&File::from(descriptor).metadata().ok()?)
}

#[cfg(not(unix))]
const fn stdin_identity() -> Option<Identity> {
    None
}

/// Where an output goes, and the identity of the file there now (if any).
struct Place {
    destination: PathBuf,
    existing: Option<Metadata>,
}

impl Outputs {
    /// Checks every request against the rules of the module and creates its temporary file.
    ///
    /// # Errors
    /// A one-line message naming the flag, the path and what is wrong; nothing is left behind.
    pub fn prepare(input: Input<'_>, requests: &[Request<'_>]) -> Result<Self, String> {
        let (input_path, input_identity) = match input {
            Input::File(path) => (
                std::fs::canonicalize(path).ok(),
                std::fs::metadata(path).ok().as_ref().and_then(identity),
            ),
            Input::Stdin => (None, stdin_identity()),
        };
        let input_name = match input {
            Input::File(_) => "is the scenario file",
            Input::Stdin => "is the file standard input reads the scenario from",
        };
        let mut places: Vec<(&Request<'_>, Place)> = Vec::new();
        for request in requests {
            let place = place(request)?;
            let here = place.existing.as_ref().and_then(identity);
            let is = |path: Option<&PathBuf>, other: Option<Identity>| {
                path == Some(&place.destination) || (other.is_some() && other == here)
            };
            if is(input_path.as_ref(), input_identity) {
                return Err(refusal(request, input_name));
            }
            if let Some((other, _)) = places.iter().find(|(_, other)| {
                is(Some(&other.destination), other.existing.as_ref().and_then(identity))
            }) {
                return Err(refusal(request, &format!("is also the {} file", other.flag)));
            }
            places.push((request, place));
        }
        let mut outputs = Self::default();
        for (request, place) in places {
            let (temporary, file) = create_temporary(request, &place)?;
            outputs.files.push(PendingFile {
                flag: request.flag,
                requested: request.path.to_path_buf(),
                destination: place.destination,
                temporary: Some(temporary),
                file: Some(file),
            });
        }
        Ok(outputs)
    }

    /// The temporary file `flag`'s output is written to.
    #[must_use]
    pub fn temporary(&self, flag: &str) -> Option<&Path> {
        self.files.iter().find(|file| file.flag == flag).and_then(|file| file.temporary.as_deref())
    }

    /// The temporary file of `flag`'s output, open for writing (once).
    pub fn take_file(&mut self, flag: &str) -> Option<File> {
        self.files.iter_mut().find(|file| file.flag == flag).and_then(|file| file.file.take())
    }

    /// Renames every temporary file into place.
    ///
    /// # Errors
    /// A one-line message naming the output that could not be renamed (those renamed before it
    /// are in place; the others are removed).
    pub fn commit(mut self) -> Result<(), String> {
        for file in &mut self.files {
            // Closed first: Windows does not rename an open file.
            drop(file.file.take());
            let Some(temporary) = file.temporary.take() else { continue };
            if let Err(error) = std::fs::rename(&temporary, &file.destination) {
                let _ = std::fs::remove_file(&temporary);
                return Err(format!(
                    "{}: {}: cannot replace: {error}",
                    file.flag,
                    file.requested.display()
                ));
            }
        }
        Ok(())
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        for file in &mut self.files {
            drop(file.file.take());
            if let Some(temporary) = file.temporary.take() {
                let _ = std::fs::remove_file(temporary);
            }
        }
    }
}

fn refusal(request: &Request<'_>, what: &str) -> String {
    format!("{}: {}: {what}", request.flag, request.path.display())
}

/// Checks `request`'s extension and file, and finds where it goes.
fn place(request: &Request<'_>) -> Result<Place, String> {
    let path = request.path;
    let place = match std::fs::symlink_metadata(path) {
        Ok(_) => {
            // An existing file (through a symbolic link: the file it names).
            let metadata = std::fs::metadata(path).map_err(|error| {
                if error.kind() == std::io::ErrorKind::NotFound {
                    refusal(request, "a symbolic link to a file that does not exist")
                } else {
                    refusal(request, &format!("cannot inspect: {error}"))
                }
            })?;
            if !metadata.is_file() {
                return Err(refusal(
                    request,
                    "not a regular file (a directory, device or pipe): outputs are written \
                     beside their place and renamed into it; give a file name",
                ));
            }
            let destination = std::fs::canonicalize(path)
                .map_err(|error| refusal(request, &format!("cannot inspect: {error}")))?;
            if metadata.permissions().readonly() {
                return Err(refusal(request, "the file is read-only"));
            }
            Place { destination, existing: Some(metadata) }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let name = path.file_name().ok_or_else(|| refusal(request, "not a file name"))?;
            let directory = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            let directory = std::fs::canonicalize(directory).map_err(|error| {
                refusal(
                    request,
                    &format!("cannot create: directory {}: {error}", directory.display()),
                )
            })?;
            Place { destination: directory.join(name), existing: None }
        }
        Err(error) => return Err(refusal(request, &format!("cannot inspect: {error}"))),
    };
    let extension = path.extension().and_then(|extension| extension.to_str());
    if !extension.is_some_and(|extension| {
        request.extensions.iter().any(|accepted| extension.eq_ignore_ascii_case(accepted))
    }) {
        let names: Vec<String> =
            request.extensions.iter().map(|extension| format!(".{extension}")).collect();
        return Err(refusal(
            request,
            &format!("expected a file name ending in {}", names.join(" or ")),
        ));
    }
    Ok(place)
}

/// Creates the temporary file beside `place` (proving its directory writable).
fn create_temporary(request: &Request<'_>, place: &Place) -> Result<(PathBuf, File), String> {
    let directory = place.destination.parent().unwrap_or_else(|| Path::new("."));
    let name = place.destination.file_name().unwrap_or_default().to_string_lossy();
    let mut last_error = None;
    for attempt in 0..16_u32 {
        let suffix = if attempt == 0 { String::new() } else { format!("-{attempt}") };
        let temporary =
            directory.join(format!(".{name}.ppm-sim-{}{suffix}.tmp", std::process::id()));
        match File::options().write(true).create_new(true).open(&temporary) {
            Ok(file) => {
                // The replacement keeps the permissions of the file it replaces.
                if let Some(existing) = &place.existing {
                    let _ = file.set_permissions(existing.permissions());
                }
                return Ok((temporary, file));
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                last_error = Some(error);
            }
            Err(error) => {
                return Err(refusal(request, &format!("cannot create: {error}")));
            }
        }
    }
    Err(refusal(
        request,
        &format!(
            "cannot create a temporary file beside it: {}",
            last_error.map_or_else(String::new, |error| error.to_string())
        ),
    ))
}
