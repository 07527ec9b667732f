//! A view: the segment set and the deltas readers use together. Views are
//! never changed but by writers adding versions to the deltas; a merge or
//! a load makes a new one, and readers that took the old one keep it (and
//! its files) as long as they need.

use super::carried::Carried;
use super::delta::Delta;
use super::SLOTS;
use crate::segment::Segment;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// An open segment of the set, removed from disk once it is replaced and
/// the last view holding it is gone.
pub(crate) struct SegmentFile {
    pub segment: Segment,
    /// Its number in the set (see `manifest`).
    pub number: u64,
    /// Where it is on disk (`None`: in memory).
    pub path: Option<PathBuf>,
    obsolete: AtomicBool,
}

impl SegmentFile {
    pub fn new(segment: Segment, number: u64, path: Option<PathBuf>) -> Arc<SegmentFile> {
        Arc::new(SegmentFile { segment, number, path, obsolete: AtomicBool::new(false) })
    }

    /// Marks the file for removal when the last view holding it goes.
    pub fn retire(&self) {
        self.obsolete.store(true, Ordering::SeqCst);
    }
}

impl Drop for SegmentFile {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            if self.obsolete.load(Ordering::SeqCst) {
                // A file left behind is removed at the next open.
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

pub(crate) struct View {
    pub segments: [Option<Arc<SegmentFile>>; SLOTS],
    pub deltas: [Delta; SLOTS],
    /// The carried keyspaces' writes since the cut (`carried.rs`).
    pub carried: Carried,
    /// The sequence number up to which the segments hold the log.
    pub cut: u64,
    /// When the view was made (a merge or a load): with changes in its
    /// deltas, a view past an age is merged.
    pub created: std::time::Instant,
}

impl View {
    pub fn segment(&self, slot: usize) -> Option<&Segment> {
        self.segments[slot].as_deref().map(|f| &f.segment)
    }

    /// Quad changes in the deltas: each is a version in the first
    /// ordering of its family (SPO or GSPO).
    pub fn delta_quads(&self) -> u64 {
        self.deltas[super::TRIPLE_SLOTS.start].changes() + self.deltas[super::QUAD_SLOTS.start].changes()
    }
}
