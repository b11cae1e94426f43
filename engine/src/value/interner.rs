//! The table of symbols and records every slot of those types indexes.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use super::{MAX_RECORD_DEPTH, NIL, RecordType};

/// The table of symbols and records. A query's table is a child of the model's: it resolves
/// the model's symbols and records through the shared parent and numbers its own after them,
/// so the model is never copied or changed by a query.
#[derive(Debug, Default, Clone)]
pub(crate) struct Interner {
    parent: Option<Arc<Interner>>,
    offset: u32,
    strings: Vec<Arc<str>>,
    /// Ids by string, once there are more than [`SCAN_SYMBOLS`] of them (a query's table
    /// holds a few symbols of its request, searched in place).
    ids: HashMap<Arc<str>, u32>,
    /// Records: the slots of each, by id from `record_offset + 1` (0 is `nil`).
    records: Vec<Arc<[u32]>>,
    /// How deeply each record nests (1 for one of no records).
    record_depths: Vec<u16>,
    /// Set when a record deeper than [`MAX_RECORD_DEPTH`] was asked for (and `nil` given).
    pub(crate) too_deep: bool,
    record_ids: HashMap<Arc<[u32]>, u32>,
    record_offset: u32,
    /// The program's record types, which decoding a record reads.
    pub(crate) record_types: Arc<[RecordType]>,
}

/// Tables with at most this many symbols of their own are searched without a hash map.
const SCAN_SYMBOLS: usize = 8;

impl Interner {
    /// A child table over a frozen parent.
    pub(crate) fn child(parent: Arc<Interner>) -> Self {
        let offset = parent.len();
        let record_offset = parent.record_offset + parent.records.len() as u32;
        let record_types = Arc::clone(&parent.record_types);
        Interner {
            parent: Some(parent),
            offset,
            strings: Vec::new(),
            ids: HashMap::default(),
            records: Vec::new(),
            record_depths: Vec::new(),
            too_deep: false,
            record_ids: HashMap::default(),
            record_offset,
            record_types,
        }
    }

    /// A table for a program whose record types are `record_types`.
    pub(crate) fn with_record_types(record_types: Arc<[RecordType]>) -> Self {
        Interner {
            record_types,
            ..Interner::default()
        }
    }

    /// The id of the record with field slots `fields`, if interned.
    pub(crate) fn get_record(&self, fields: &[u32]) -> Option<u32> {
        if let Some(parent) = &self.parent
            && let Some(id) = parent.get_record(fields)
        {
            return Some(id);
        }
        self.record_ids.get(fields).copied()
    }

    /// The id of the record with field slots `fields`, nesting `depth` deep, interning it if
    /// new (hash-consing: equal fields, equal id); `nil` and [`Interner::too_deep`] set past
    /// [`MAX_RECORD_DEPTH`].
    pub(crate) fn intern_record(&mut self, fields: &[u32], depth: u16) -> u32 {
        if let Some(id) = self.get_record(fields) {
            return id;
        }
        if depth > MAX_RECORD_DEPTH {
            self.too_deep = true;
            return NIL;
        }
        self.records.push(Arc::from(fields));
        self.record_depths.push(depth);
        let id = self.record_offset + self.records.len() as u32;
        self.record_ids.insert(Arc::from(fields), id);
        id
    }

    /// How deeply record `id` nests (0 for `nil`).
    pub(crate) fn record_depth(&self, id: u32) -> u16 {
        if id == NIL {
            return 0;
        }
        if id <= self.record_offset {
            return self.parent.as_ref().map_or(0, |p| p.record_depth(id));
        }
        let at = (id - self.record_offset - 1) as usize;
        self.record_depths.get(at).copied().unwrap_or(0)
    }

    /// The field slots of record `id`; none for `nil` (and ids never produced here).
    pub(crate) fn resolve_record(&self, id: u32) -> Option<&[u32]> {
        if id == NIL {
            return None;
        }
        if id <= self.record_offset {
            return self.parent.as_ref()?.resolve_record(id);
        }
        self.records
            .get((id - self.record_offset - 1) as usize)
            .map(|r| &r[..])
    }

    /// Number of symbols visible (parent's and own).
    pub(crate) fn len(&self) -> u32 {
        self.offset + self.strings.len() as u32
    }

    /// The id of `s`, if interned.
    pub(crate) fn get(&self, s: &str) -> Option<u32> {
        if let Some(parent) = &self.parent
            && let Some(id) = parent.get(s)
        {
            return Some(id);
        }
        if self.ids.is_empty() {
            return self
                .strings
                .iter()
                .position(|x| **x == *s)
                .map(|i| self.offset + i as u32);
        }
        self.ids.get(s).copied()
    }

    /// The id of `s`, interning it if new.
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(id) = self.get(s) {
            return id;
        }
        let id = self.len();
        let arc: Arc<str> = Arc::from(s);
        self.strings.push(arc.clone());
        if !self.ids.is_empty() {
            self.ids.insert(arc, id);
        } else if self.strings.len() > SCAN_SYMBOLS {
            let offset = self.offset;
            self.ids = (self.strings.iter().cloned()).zip(offset..).collect();
        }
        id
    }

    /// The string of an id, shared (no copy). Unknown ids resolve to "".
    pub(crate) fn resolve_shared(&self, id: u32) -> Arc<str> {
        if id < self.offset {
            return self
                .parent
                .as_ref()
                .map_or_else(|| Arc::from(""), |p| p.resolve_shared(id));
        }
        self.strings
            .get((id - self.offset) as usize)
            .cloned()
            .unwrap_or_else(|| Arc::from(""))
    }

    /// The string of an id. Unknown ids (never produced by this table) resolve to "".
    pub(crate) fn resolve(&self, id: u32) -> &str {
        if id < self.offset {
            return self.parent.as_ref().map_or("", |p| p.resolve(id));
        }
        self.strings
            .get((id - self.offset) as usize)
            .map_or("", |s| s.as_ref())
    }
}
