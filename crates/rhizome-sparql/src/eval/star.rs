//! The quads of the subjects a star looks up, read through one cursor
//! kept from row to row instead of one lookup per row.
//!
//! A star (`?x :p ?a ; :q ?b` with `?x` bound on the left) reads each
//! subject's quads whole and matches them to its patterns in memory
//! (`Evaluator::star_lookup`). The rows on the left mostly come in subject
//! order (a scan of `?x a :C` or of another index sorted by `?x`), and a
//! loader numbers a subject's neighbours densely, so the subjects a star
//! asks for are usually a few quads apart in the SPO index. A lookup per
//! row (a scan re-pointed, quads taken one at a time, the scan given back)
//! cost about 5,600 instructions a professor in m22 (callgrind, 4.8M),
//! ten times the quads' own reading. [`SubjectRuns`] keeps one scan over
//! the whole subject-first index and reads it in batches of id columns
//! that grow while the subjects asked for keep falling in them: a subject
//! at or just past the batch read is found by moving along it; one further
//! on, the same one again or one before it (rows not in order), by a
//! seek. The rows' order only decides the cost, never the quads.

use crate::error::Result;
use rhizome_rdf::{QuadBatch, QuadScan, TermId};

/// A batch's rows after a seek: a lookup's few quads, not a block's.
const BATCH_AFTER_SEEK: usize = 32;
/// The largest batch (a segment block's rows).
const BATCH_MAX: usize = 1024;
/// A subject at most this many ids past the last one read is read on to
/// rather than sought (ids of neighbouring subjects are dense).
const READ_ON_IDS: u64 = 4;

/// One scan over every subject's quads, in subject order, read in
/// batches; see the module doc.
pub(super) struct SubjectRuns<'a> {
    scan: QuadScan<'a>,
    batch: QuadBatch,
    /// The first quad of `batch` not yet passed.
    at: usize,
    /// Rows the next batch reads.
    batch_rows: usize,
    /// The scan has no quads after `batch`.
    ended: bool,
    /// The last subject asked for (`None`: nothing read yet).
    last: Option<TermId>,
}

impl<'a> SubjectRuns<'a> {
    /// `None` when the scan does not come out in subject order.
    pub(super) fn new(scan: QuadScan<'a>) -> Option<Self> {
        scan.sorted_by(0).then(|| SubjectRuns { scan, batch: QuadBatch::default(), at: 0, batch_rows: BATCH_AFTER_SEEK, ended: false, last: None })
    }

    /// Appends the quads of subject `x` to `out`, in the scan's order; at
    /// most `max` + 1 of them (more than `max`: the caller looks the
    /// subject up another way).
    pub(super) fn quads_of(&mut self, x: TermId, out: &mut Vec<[TermId; 4]>, max: usize) -> Result<()> {
        // A subject asked for again (or an earlier one) is sought.
        let in_order = self.last.is_some_and(|l| l < x);
        self.last = Some(x);
        if !(in_order && self.pass_to(x)?) {
            self.seek(x)?;
        }
        loop {
            let subjects = &self.batch.column(0)[self.at..];
            let run = subjects.iter().take_while(|s| **s == x).count();
            for i in self.at..self.at + run.min(max + 1 - out.len()) {
                out.push(self.batch.quad(i));
            }
            self.at += run;
            if self.at < self.batch.len() || out.len() > max || !self.refill()? {
                return Ok(());
            }
        }
    }

    /// Moves past the quads before subject `x`, reading on while `x` is
    /// within a few ids of the quads read; `false` when a seek is better.
    fn pass_to(&mut self, x: TermId) -> Result<bool> {
        loop {
            let subjects = &self.batch.column(0)[self.at..];
            // Sorted: the first quad at or after x.
            self.at += subjects.partition_point(|s| *s < x);
            if self.at < self.batch.len() {
                return Ok(true);
            }
            let last_read = self.batch.column(0).last().copied();
            if self.ended {
                return Ok(true);
            }
            if !last_read.is_some_and(|l| x.0 <= l.0.saturating_add(READ_ON_IDS)) || !self.refill()? {
                return Ok(self.ended);
            }
        }
    }

    /// Reads the next batch, larger than the last (the subjects asked for
    /// keep falling in what is read); `false` at the scan's end.
    fn refill(&mut self) -> Result<bool> {
        if self.ended {
            return Ok(false);
        }
        self.batch.clear();
        self.at = 0;
        let n = self.scan.next_batch(&mut self.batch, self.batch_rows)?;
        self.batch_rows = (self.batch_rows * 4).min(BATCH_MAX);
        self.ended = n == 0;
        Ok(n > 0)
    }

    /// Puts the scan on subject `x` and reads a small batch from there.
    fn seek(&mut self, x: TermId) -> Result<()> {
        self.scan.seek_component_anywhere(0, x)?;
        self.ended = false;
        self.batch_rows = BATCH_AFTER_SEEK;
        self.refill()?;
        Ok(())
    }
}
