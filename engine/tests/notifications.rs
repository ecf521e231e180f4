//! The notification table ([`ppm_engine::notification`]) is complete, agrees with what the
//! engine answers, and, with the documentation of every row (`notifications/docs.rs`), is what
//! `docs/notifications.md` shows.
//!
//! - every DPM id the documentation lists and every PPM id 0x01..=0x2B has one row, and one row
//!   of documentation;
//! - every row's fixed outputs lie in the bytes it may write, inside its structure, and every
//!   row's IRQL is one the documentation gives;
//! - no row refuses a notification the documentation says a PEP must handle;
//! - sent through the real callbacks with a live handle, every row that is not a dedicated query
//!   returns what the table says, leaves the structure untouched when refusing or acknowledging,
//!   and writes exactly the documented output fields when declining in its outputs;
//! - `docs/notifications.md` is the table rendered (`PPM_PEP_UPDATE_DOCS=1 cargo test -p
//!   ppm-engine --test notifications` rewrites it).
#![cfg(not(loom))]

#[path = "notifications/docs.rs"]
mod docs;

use std::fmt::Write as _;
use std::path::PathBuf;

use ppm_caller::fixture::NoCounters;
use ppm_engine::abi::{
    PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE, PEP_DPM_POWER_CONTROL_REQUEST, PEP_DPM_WORK, PEPHANDLE,
    STATUS_NOT_IMPLEMENTED,
};
use ppm_engine::config::Config;
use ppm_engine::notification::{
    Answer, Callback, DISPATCH_LEVEL, DPM, HIGH_LEVEL, Notification, Output, PASSIVE_LEVEL, PPM,
    find, irql_of,
};

use docs::{DOCS, Doc, Requirement};

/// The documentation row of `row`.
fn doc(row: &Notification) -> &'static Doc {
    DOCS.iter().find(|doc| doc.callback == row.callback && doc.name == row.name).unwrap()
}

/// The DPM ids of `dpm-notifications.md`'s table.
const DOCUMENTED_DPM_IDS: [u32; 30] = [
    0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x0D, 0x0E, 0x0F, 0x10, 0x12, 0x13, 0x15, 0x18, 0x19, 0x1A,
    0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
];

#[test]
fn every_documented_id_has_one_row() {
    let dpm: Vec<u32> = DPM.iter().map(|row| row.id).collect();
    assert_eq!(dpm, DOCUMENTED_DPM_IDS);
    let ppm: Vec<u32> = PPM.iter().map(|row| row.id).collect();
    assert_eq!(ppm, (0x01..=0x2B).collect::<Vec<u32>>());
    let documented: Vec<(Callback, &str)> =
        DOCS.iter().map(|doc| (doc.callback, doc.name)).collect();
    let rows: Vec<(Callback, &str)> =
        DPM.iter().chain(PPM).map(|row| (row.callback, row.name)).collect();
    assert_eq!(documented, rows);
    assert!(
        DPM.iter().all(|row| row.callback == Callback::Dpm && row.name.starts_with("PEP_DPM_"))
    );
    assert!(
        PPM.iter()
            .all(|row| row.callback == Callback::Ppm && row.name.starts_with("PEP_NOTIFY_PPM_"))
    );
}

#[test]
fn nothing_the_documentation_requires_is_refused() {
    for row in DPM.iter().chain(PPM) {
        if doc(row).requirement == Requirement::Must {
            assert_ne!(row.answer, Answer::Refused, "{} must be handled", row.name);
        }
    }
    let must: Vec<&str> = DOCS
        .iter()
        .filter(|doc| doc.requirement == Requirement::Must)
        .map(|doc| doc.name)
        .collect();
    assert_eq!(must, ["PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE"]);
}

#[test]
fn outputs_lie_in_the_bytes_a_row_may_write() {
    for row in DPM.iter().chain(PPM) {
        for output in row.outputs {
            let end = output.offset + output.bytes.len();
            assert!(row.writes.start <= output.offset && end <= row.writes.end, "{}", row.name);
        }
        if !row.writes.is_empty() {
            assert!(row.answer.returns(), "{} writes but refuses", row.name);
            let size = row.payload.map_or(0, |payload| payload.size);
            assert!(row.writes.end <= size, "{} writes beyond its structure", row.name);
        }
    }
    let size = |callback, id| find(callback, id).and_then(|row| row.payload).unwrap().size;
    assert_eq!(size(Callback::Ppm, 0x0A), 24, "FEEDBACK_READ");
    assert_eq!(size(Callback::Dpm, 0x03), 40, "REGISTER_DEVICE_V2");
    assert_eq!(find(Callback::Ppm, 0x0A).unwrap().writes, 8..24, "NominalCount, ActualCount");
    assert_eq!(find(Callback::Ppm, 0x2A).unwrap().writes, 4..16, "DomainId is an input");
}

#[test]
fn the_irql_of_every_row_is_documented() {
    // ppm-notifications.md: FEEDBACK_READ "may be called at IRQL = DISPATCH_LEVEL", the
    // processor-initialisation queries "always ... PASSIVE_LEVEL", IDLE_EXECUTE with interrupts
    // disabled; dpm-notifications.md: REGISTER_CRASHDUMP_DEVICE "IRQL <= HIGH_LEVEL".
    assert_eq!(irql_of(Callback::Ppm, 0x0A), Some(DISPATCH_LEVEL));
    assert_eq!(irql_of(Callback::Ppm, 0x01), Some(PASSIVE_LEVEL));
    assert_eq!(irql_of(Callback::Ppm, 0x05), Some(HIGH_LEVEL));
    assert_eq!(irql_of(Callback::Dpm, 0x19), Some(HIGH_LEVEL));
    assert_eq!(irql_of(Callback::Dpm, 0x01), Some(PASSIVE_LEVEL));
    assert_eq!(irql_of(Callback::Ppm, 0x2C), None);
    assert_eq!(irql_of(Callback::Dpm, 0x06), None);
    // AcceptDeviceNotification runs at IRQL <= DISPATCH_LEVEL but for the crash-dump one.
    for row in DPM.iter().filter(|row| row.id != 0x19) {
        assert!(row.irql <= DISPATCH_LEVEL, "{}", row.name);
    }
    for row in DPM.iter().chain(PPM) {
        assert!([0, 1, DISPATCH_LEVEL, HIGH_LEVEL].contains(&row.irql), "{}", row.name);
    }
}

/// The byte every structure is filled with before a call.
const FILL: u8 = 0xA5;

/// A structure-sized, 8-aligned buffer larger than any PoFx structure sent here.
#[repr(C, align(16))]
struct Buffer([u8; 256]);

impl Buffer {
    /// Filled with [`FILL`], with `handle` at offset 0 (where every DPM structure sent here
    /// keeps its `DeviceHandle`).
    fn with_handle(handle: PEPHANDLE) -> Self {
        let mut buffer = Self([FILL; 256]);
        buffer.0[..8].copy_from_slice(&handle.addr().to_ne_bytes());
        buffer
    }

    const fn pointer(&mut self) -> *mut core::ffi::c_void {
        self.0.as_mut_ptr().cast()
    }

    /// The offsets that differ from `before`.
    fn changed(&self, before: &Self) -> Vec<usize> {
        (0..self.0.len()).filter(|&at| self.0[at] != before.0[at]).collect()
    }
}

/// Sends `row` with `handle` and a filled buffer: what it returned, the buffer before and after.
fn send(row: &Notification, handle: PEPHANDLE) -> (bool, Buffer, Buffer) {
    let mut buffer = Buffer::with_handle(handle);
    let before = Buffer::with_handle(handle);
    let pointer = buffer.pointer();
    let returned = match row.callback {
        // SAFETY: a 256-byte, 16-aligned buffer, larger than the structure of any notification
        // sent here, valid for the call.
        Callback::Dpm => unsafe { ppm_caller::dpm::<NoCounters>(row.id, pointer) },
        // SAFETY: as above.
        Callback::Ppm => unsafe { ppm_caller::ppm::<NoCounters>(handle, row.id, pointer) },
    };
    (returned, before, buffer)
}

#[test]
fn the_engine_answers_what_the_table_says() {
    let slots = ppm_caller::table(2);
    let _pep = ppm_caller::boot_with(NoCounters, &Config::new(), slots);
    let handle = ppm_caller::add_processor::<NoCounters>("\\_SB.CPU0");
    let forged: PEPHANDLE = core::ptr::without_provenance_mut(0x5A5A_0000);
    let mut checked = 0;
    for row in DPM.iter().chain(PPM).filter(|row| row.fixed()) {
        let (returned, before, after) = send(row, handle);
        assert_eq!(returned, row.answer.returns(), "{} returned {returned}", row.name);
        let mut expected = before;
        for output in row.outputs {
            expected.0[output.offset..output.offset + output.bytes.len()]
                .copy_from_slice(output.bytes);
        }
        assert!(
            after.changed(&expected).is_empty(),
            "{}: {:?}",
            row.name,
            after.changed(&expected)
        );
        if row.callback == Callback::Ppm && row.answer == Answer::Refused {
            let (returned, before, after) = send(row, core::ptr::null_mut());
            assert!(!returned && after.changed(&before).is_empty(), "{} with NULL", row.name);
        }
        checked += 1;
    }
    assert_eq!(checked, 59, "rows with a fixed answer");
    // The documented outputs, spelled out once.
    let write = |id| DPM.iter().find(|row| row.id == id).unwrap().outputs;
    assert_eq!(write(PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE), [Output { offset: 17, bytes: &[1] }]);
    // DPM_WORK: NeedWork FALSE only; WorkInformation (offset 0) is the OS's and stays as passed.
    assert_eq!(write(PEP_DPM_WORK), [Output { offset: 8, bytes: &[0] }]);
    // POWER_CONTROL_REQUEST: "not implemented", not "the PEP does not own the device".
    assert_eq!(write(PEP_DPM_POWER_CONTROL_REQUEST)[1].bytes, STATUS_NOT_IMPLEMENTED.to_le_bytes());
    // COMPONENT_IDLE_STATE is completed for any handle; the other DPM notifications that
    // name a device refuse, untouched, a handle that is not a live one of the PEP's.
    for row in DPM.iter().filter(|row| row.fixed() && row.answer != Answer::Refused) {
        let (returned, before, after) = send(row, forged);
        match row.id {
            PEP_DPM_NOTIFY_COMPONENT_IDLE_STATE => assert!(returned && after.0[17] == 1),
            PEP_DPM_WORK => assert!(returned),
            _ => assert!(!returned && after.changed(&before).is_empty(), "{} forged", row.name),
        }
    }
}

/// The table as `docs/notifications.md` shows it.
fn render() -> String {
    let mut page = String::from(
        "# Notifications: what PoFx can send, what the documentation says, what the PEP answers\n\n\
         <!-- Generated from engine/src/notification.rs and engine/tests/notifications/docs.rs by \
         engine/tests/notifications.rs \
         (PPM_PEP_UPDATE_DOCS=1 cargo test -p ppm-engine --test notifications); do not edit. -->\n\n\
         Every DPM notification id Microsoft's documentation lists and every PPM id 0x01–0x2B of \
         `pepfx.h`/`pep_x.h`, with what the documentation says about handling or declining it, \
         what this PEP answers and why. The rule: where the documentation says a PEP must handle \
         a notification, it is handled as documented; where it documents a decline through \
         output fields, the PEP declines that way; where it is silent, the answer is the one \
         that can neither crash the system nor report wrong data. A NULL or misaligned \
         structure, and (where the notification names a device) a handle that is not a live one \
         of the PEP's, are always answered FALSE with nothing written. The engine's answers, \
         this page and the emulator's `notifications.documented_answers` check all follow the \
         one table in `engine/src/notification.rs`; a test fails if they disagree.\n\n\
         \"The PEP must understand and accept most device power management notifications even if \
         the PEP chooses not to act on them. The PEP must refuse to handle (by returning FALSE) \
         every notification that it does not recognize\" (`pepfx/nc-pepfx-pepcallbacknotifydpm.md`). \
         This PEP recognises every DPM id below; it accepts (TRUE) the ones about its processor \
         devices' lifecycle and state, including those it does not act on (`DEVICE_POWER_STATE`, \
         `DEVICE_STARTED`, `NOTIFY_COMPONENT_IDLE_STATE`, `POWER_CONTROL_REQUEST`, `WORK`), and \
         answers FALSE where the documentation lets a PEP decline, where the notification \
         belongs to a feature it never opts into (component perf states, SoC subsystem \
         accounting, platform idle states), or where the id is deprecated. IRQL: \
         `AcceptDeviceNotification` \"can be called at IRQL <= DISPATCH_LEVEL\" (and \
         `REGISTER_CRASHDUMP_DEVICE` at IRQL <= HIGH_LEVEL), `AcceptProcessorNotification` up \
         to HIGH_LEVEL; every answer, accepted or refused, touches only the PEP's processor \
         table and the notification's structure: it never allocates, blocks or waits.\n\n\
         Sources: `dpm-notifications.md` and `ppm-notifications.md` are \
         `windows-driver-docs-pr/kernel/` of MicrosoftDocs/windows-driver-docs; `pepfx/…` pages \
         are `wdk-ddi-src/content/pepfx/` of MicrosoftDocs/windows-driver-docs-ddi.\n",
    );
    for (title, table) in [
        ("Device (DPM) notifications: `AcceptDeviceNotification`", DPM),
        ("Processor (PPM) notifications: `AcceptProcessorNotification`", PPM),
    ] {
        let _ = write!(
            page,
            "\n## {title}\n\n| Id | Notification | Documentation | PEP answers | Why | Source |\n|---|---|---|---|---|---|\n"
        );
        for row in table {
            let doc = doc(row);
            let source = doc
                .source
                .trim_start_matches("windows-driver-docs-ddi ")
                .trim_start_matches("windows-driver-docs kernel/");
            let _ = writeln!(
                page,
                "| {:#04X} | `{}` | **{}**: {} | **{}**: {} | {} | {} |",
                row.id,
                row.name,
                doc.requirement.label(),
                doc.documented,
                row.answer.label(),
                doc.detail,
                doc.why,
                source,
            );
        }
    }
    page
}

#[test]
fn the_page_is_the_table() {
    for doc in DOCS {
        for text in [doc.documented, doc.detail, doc.why, doc.source] {
            assert!(!text.contains('|') && !text.contains('\n'), "{}: {text}", doc.name);
        }
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/notifications.md");
    let page = render();
    if std::env::var_os("PPM_PEP_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == page,
        "docs/notifications.md differs from the notification table: run PPM_PEP_UPDATE_DOCS=1 cargo test -p ppm-engine --test notifications"
    );
}
