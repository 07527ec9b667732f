//! Tests' stand-in for a cluster's store: every read is a round trip
//! (`reads_are_round_trips`), and each call, however many keys or cursors
//! it carries, counts as one wait. Answered by the store it wraps.

use rhizome_kv::{Cursor, CursorSeek, Keyspace, KvRead, Result};
use std::cell::Cell;

pub(crate) struct RoundTrips<'a> {
    kv: &'a dyn KvRead,
    /// Waits so far; tests set it back to 0 between steps.
    pub(crate) waits: Cell<usize>,
}

impl<'a> RoundTrips<'a> {
    pub(crate) fn new(kv: &'a dyn KvRead) -> Self {
        RoundTrips { kv, waits: Cell::new(0) }
    }

    fn wait(&self) {
        self.waits.set(self.waits.get() + 1);
    }
}

impl KvRead for RoundTrips<'_> {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.wait();
        self.kv.get(ks, key)
    }
    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        self.wait();
        self.kv.cursor(ks, lower, upper)
    }
    fn reads_are_round_trips(&self) -> bool {
        true
    }
    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.wait();
        self.kv.get_many(ks, keys)
    }
    fn scan_ranges(&self, ks: Keyspace, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Vec<(Vec<u8>, Vec<u8>)>>> {
        self.wait();
        self.kv.scan_ranges(ks, ranges)
    }
    fn cursors_sought(&self, seeks: &[CursorSeek<'_>]) -> Vec<Box<dyn Cursor + '_>> {
        self.wait();
        self.kv.cursors_sought(seeks)
    }
}
