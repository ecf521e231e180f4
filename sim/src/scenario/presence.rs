//! [`Presence`]: which processors are present when, from the `hot-add`/`hot-remove` events,
//! indexed once when a scenario is read.

use super::types::{Event, EventKind, ProcessorSet};

/// Which processors are present when: each processor's `hot-add`/`hot-remove` events in the
/// order they happen (time, then file order), built once in one pass over the events
/// (O(Σ listed processors · log)), so that a presence question costs one binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Presence {
    /// Per processor: (`at_ms`, event number, added), sorted.
    changes: Vec<Vec<(u32, usize, bool)>>,
}

impl Presence {
    /// The presence changes of `processors` processors under `events`.
    #[must_use]
    pub fn new(processors: u32, events: &[Event]) -> Self {
        let mut changes: Vec<Vec<(u32, usize, bool)>> =
            vec![Vec::new(); usize::try_from(processors).unwrap_or(0)];
        for (number, event) in events.iter().enumerate() {
            let added = match event.kind {
                EventKind::HotAdd => true,
                EventKind::HotRemove => false,
                _ => continue,
            };
            // Hot-plug events list their processors ("all" is refused when read).
            if let ProcessorSet::List(list) = &event.processors {
                for &index in list {
                    if let Some(list) = usize::try_from(index).ok().and_then(|i| changes.get_mut(i))
                    {
                        list.push((event.at_ms, number, added));
                    }
                }
            }
        }
        for list in &mut changes {
            list.sort_unstable();
        }
        Self { changes }
    }

    /// Processor `index`'s changes: (`at_ms`, event number, added), in the order they happen.
    #[must_use]
    pub fn changes(&self, index: u32) -> &[(u32, usize, bool)] {
        usize::try_from(index).ok().and_then(|i| self.changes.get(i)).map_or(&[], Vec::as_slice)
    }

    /// Whether processor `index` is offered at boot (its first change, if any, is not a
    /// `hot-add`).
    #[must_use]
    pub fn initially_present(&self, index: u32) -> bool {
        self.changes(index).first().is_none_or(|(_, _, added)| !added)
    }

    /// Whether processor `index` is present when event `number` (at `at_ms`) happens: after
    /// every change that comes before it (time, then file order).
    #[must_use]
    pub fn present_at(&self, index: u32, at_ms: u32, number: usize) -> bool {
        let changes = self.changes(index);
        let before =
            changes.partition_point(|(other_ms, other, _)| (*other_ms, *other) < (at_ms, number));
        before
            .checked_sub(1)
            .and_then(|last| changes.get(last))
            .map_or_else(|| self.initially_present(index), |(_, _, added)| *added)
    }
}
