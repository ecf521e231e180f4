//! `ppm-sim run --trace`: every OS read of the runtime as a CSV row, written as the run digests
//! it (so a trace of millions of reads needs no memory).
//!
//! Columns: `time_ms` (when the read took its nominal count, runtime ms), `processor`,
//! `counter_index`, `nominal_count`, `actual_count` (what the PEP returned), `served`,
//! `faulted` (an MSR read faulted during the call), then for a served read that closes an
//! interval (a previous served read of the counter on the same handle): `delta_nominal`,
//! `delta_actual`, `measured_mhz` (`NominalRate × ΔActual / ΔNominal`: what Windows computes
//! for the FREQUENCY counter), `true_mhz` (the simulated processor's delivered MHz over the
//! interval, C0-weighted; empty when it was idle) and `discontinuity` (the counters jumped).
//! Summing a processor's counter-0 deltas reproduces the report's `measured_mhz`.
//!
//! Rows come in the order the reads were digested: in time order per processor, one sample
//! late; sort by `time_ms` for one timeline.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::pofx::{ReadObserver, TracedRead};

/// One CSV row (its field names are the header).
#[derive(Debug, Default, Serialize)]
struct Row {
    time_ms: f64,
    processor: u32,
    counter_index: u32,
    nominal_count: u64,
    actual_count: u64,
    served: bool,
    faulted: bool,
    delta_nominal: Option<i128>,
    delta_actual: Option<i128>,
    measured_mhz: Option<f64>,
    true_mhz: Option<f64>,
    discontinuity: Option<bool>,
}

/// A trace file being written.
#[derive(Debug)]
pub struct TraceFile {
    state: Mutex<TraceState>,
}

#[derive(Debug)]
struct TraceState {
    writer: csv::Writer<BufWriter<File>>,
    rows: u64,
    /// The first write error (later rows are dropped).
    error: Option<String>,
}

impl TraceFile {
    /// A trace written to `file` (created before the run: see [`crate::output`]).
    #[must_use]
    pub fn new(file: File) -> Arc<Self> {
        let writer = csv::Writer::from_writer(BufWriter::new(file));
        Arc::new(Self { state: Mutex::new(TraceState { writer, rows: 0, error: None }) })
    }

    /// Writes `read` as a row.
    pub fn write(&self, read: &TracedRead) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.error.is_some() {
            return;
        }
        let interval = read.interval;
        let row = Row {
            time_ms: (read.time_ms * 1e6).round() / 1e6,
            processor: read.processor,
            counter_index: read.counter_index,
            nominal_count: read.nominal,
            actual_count: read.actual,
            served: read.served,
            faulted: read.faulted,
            delta_nominal: interval.map(|interval| interval.delta_nominal),
            delta_actual: interval.map(|interval| interval.delta_actual),
            measured_mhz: interval
                .and_then(|interval| interval.measured_mhz)
                .map(|mhz| (mhz * 1e3).round() / 1e3),
            true_mhz: interval
                .and_then(|interval| interval.true_mhz)
                .map(|mhz| (mhz * 1e3).round() / 1e3),
            discontinuity: interval.map(|interval| interval.discontinuity),
        };
        match state.writer.serialize(row) {
            Ok(()) => state.rows += 1,
            Err(error) => state.error = Some(error.to_string()),
        }
    }

    /// An observer that writes every read here and then passes it to `next` (if any).
    #[must_use]
    pub fn observer(self: &Arc<Self>, next: Option<ReadObserver>) -> ReadObserver {
        let file = Arc::clone(self);
        ReadObserver(Arc::new(move |read: &TracedRead| {
            file.write(read);
            if let Some(next) = &next {
                (next.0)(read);
            }
        }))
    }

    /// Flushes the file; returns the rows written. `path` is the name messages give.
    ///
    /// # Errors
    /// A one-line message when a row or the flush could not be written.
    pub fn finish(&self, path: &Path) -> Result<u64, String> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.rows == 0 && state.error.is_none() {
            // No read: the header alone (the writer writes it before its first row).
            if let Err(error) = state.writer.write_record(header()) {
                state.error = Some(error.to_string());
            }
        }
        if let Some(error) = state.error.take() {
            return Err(format!("--trace: {}: cannot write: {error}", path.display()));
        }
        state
            .writer
            .flush()
            .map_err(|error| format!("--trace: {}: cannot write: {error}", path.display()))?;
        Ok(state.rows)
    }
}

/// The CSV header: [`Row`]'s field names, as the writer writes them before the first row.
fn header() -> Vec<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let text = writer
        .serialize(Row::default())
        .ok()
        .and_then(|()| writer.into_inner().ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default();
    text.lines().next().unwrap_or_default().split(',').map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::TraceFile;

    #[test]
    fn a_trace_without_reads_is_its_header() {
        let path = std::env::temp_dir().join(format!("ppm-sim-trace-{}.csv", std::process::id()));
        let trace = TraceFile::new(std::fs::File::create(&path).expect("a scratch file"));
        assert_eq!(trace.finish(&path), Ok(0));
        let text = std::fs::read_to_string(&path).expect("the trace");
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            text,
            "time_ms,processor,counter_index,nominal_count,actual_count,served,faulted,\
             delta_nominal,delta_actual,measured_mhz,true_mhz,discontinuity\n"
        );
    }
}
