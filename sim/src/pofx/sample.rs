//! The OS's periodic read of one processor's feedback counters.

use std::rc::Rc;

use ppm_caller::payload::{handle, read_counts};

use super::analysis::{analyse_read, raw_read};
use super::nested::{self, NestingSetup, PLATFORM_CALL_NS};
use super::observations::ProcessorRecord;
use super::pep::PepUnderTest;
use super::records::ReadRecord;
use crate::machine::Machine;
use crate::platform::{self, PlatformOp};

/// One processor's part of a sample: as the processor, `FEEDBACK_READ` every counter it
/// described — with `nesting`, each interrupted by nested notifications (see [`NestedCall`](super::NestedCall)).
/// Reads only that processor's record and returns its new reads with the platform operations
/// they made (the nested ones included), so that a runtime with one thread per processor runs
/// it concurrently (the PEP under test and the machine are shared by reference; "running as"
/// is per thread).
pub(super) fn sample_processor(
    pep: &PepUnderTest,
    machine: &Machine,
    record: &ProcessorRecord,
    nesting: Option<NestingSetup>,
) -> (Vec<ReadRecord>, Vec<PlatformOp>) {
    let Some(handle_value) = record.handle else { return (Vec::new(), Vec::new()) };
    let count = u32::try_from(record.described_counters().len()).unwrap_or(0);
    let mut reads = Vec::with_capacity(count as usize);
    let mut operations = Vec::new();
    for counter_index in 0..count {
        let deliveries: Option<Rc<nested::Nesting>> = nesting.map(|setup| {
            nested::Nesting::new(pep.callbacks().clone(), handle_value, counter_index, setup)
        });
        let guard = deliveries
            .as_ref()
            .map(|deliveries| platform::nest(deliveries.hook(), PLATFORM_CALL_NS));
        let (sent, trace) =
            pep.on(record.index, |callbacks| callbacks.read(handle(handle_value), counter_index));
        drop(guard);
        let (nested, nested_operations) =
            deliveries.map(|deliveries| deliveries.finish()).unwrap_or_default();
        let (nominal, actual) = read_counts(&sent.payload);
        let (access, faulted) = analyse_read(&trace);
        let raw = raw_read(&trace);
        reads.push(ReadRecord {
            // With nested notifications the call goes on after it read the counters.
            at_ns: raw.map_or_else(|| machine.processor_now_ns(record.index), |raw| raw.at_ns),
            counter_index,
            returned: sent.handled(),
            nominal,
            actual,
            access,
            faulted,
            handle: handle_value,
            raw,
            nested,
        });
        operations.extend(trace);
        operations.extend(nested_operations);
    }
    (reads, operations)
}
