//! Writing an ordering's new segment: its segment and delta as a reader at
//! the cut sees them, merged with the sorted runs of a load, duplicates
//! dropped.

use super::cursor::IndexCursor;
use super::view::View;
use super::{columns, Key};
use crate::segment::{Segment, SegmentCursor, SegmentWriter};
use crate::{Error, Result};
use rhizome_kv::Cursor;
use std::sync::atomic::{AtomicBool, Ordering};

/// A load's sorted run of one ordering.
pub(crate) enum Run {
    /// A segment file the loader wrote.
    File(Segment),
    /// Keys as the key-value layer has them (big-endian ids).
    Memory(Vec<(Vec<u8>, Vec<u8>)>),
}

/// A source of keys in increasing order.
enum Source<'a> {
    View(IndexCursor<'a>),
    File(SegmentCursor<'a>),
    Memory(std::slice::Iter<'a, (Vec<u8>, Vec<u8>)>, Option<Key>),
}

fn memory_key(bytes: &[u8]) -> Result<Key> {
    if bytes.len() % 8 != 0 || bytes.len() > 32 {
        return Err(Error::Invalid(format!("a run's key of {} bytes in a quad index", bytes.len())));
    }
    let mut k = [0u64; 4];
    for (i, chunk) in bytes.chunks_exact(8).enumerate() {
        k[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
    }
    Ok(k)
}

impl Source<'_> {
    fn head(&mut self) -> Result<Option<Key>> {
        Ok(match self {
            Source::View(c) => {
                c.status()?;
                c.current_key()
            }
            Source::File(c) => c.valid().then(|| c.key()),
            Source::Memory(_, head) => *head,
        })
    }

    fn advance(&mut self) -> Result<()> {
        match self {
            Source::View(c) => c.next(),
            Source::File(c) => c.next()?,
            Source::Memory(it, head) => *head = it.next().map(|(k, _)| memory_key(k)).transpose()?,
        }
        Ok(())
    }
}

/// Writes into `writer` the keys of `slot` a reader at `at` sees in `view`
/// together with `runs`, in order, once each. Stops with an error when
/// `stop` is set (the store is closing). Returns the rows written.
pub(crate) fn write_merged(view: &View, slot: usize, at: u64, runs: &[Run], writer: &mut SegmentWriter, stop: &AtomicBool) -> Result<u64> {
    let columns = columns(slot);
    let mut sources = Vec::with_capacity(1 + runs.len());
    let mut own = IndexCursor::new(view.segment(slot), &view.deltas[slot], at, columns, &[], None);
    own.seek_first();
    sources.push(Source::View(own));
    for run in runs {
        sources.push(match run {
            Run::File(segment) => {
                if segment.columns() != columns {
                    return Err(Error::Invalid(format!("a run of {} ids for an ordering of {columns}", segment.columns())));
                }
                let mut c = segment.cursor();
                c.seek_first()?;
                Source::File(c)
            }
            Run::Memory(entries) => {
                let mut it = entries.iter();
                let head = it.next().map(|(k, _)| memory_key(k)).transpose()?;
                Source::Memory(it, head)
            }
        });
    }
    let mut heads: Vec<Option<Key>> = Vec::with_capacity(sources.len());
    for s in &mut sources {
        heads.push(s.head()?);
    }
    let mut last: Option<Key> = None;
    let mut rows = 0u64;
    let segment = view.segment(slot);
    loop {
        let Some(min) = heads.iter().flatten().min().copied() else { break };
        if let (Some(segment), Source::View(own)) = (segment, &mut sources[0]) {
            // A block of the segment that no delta entry and no run falls
            // in is copied as it is (most of a merge's blocks: a delta
            // touches few).
            if heads[0] == Some(min) {
                if let Some((block, fence)) = own.untouched_block() {
                    let others_after = heads[1..].iter().flatten().all(|h| fence.is_some_and(|f| *h >= f));
                    if others_after {
                        writer.copy_block(segment, block)?;
                        own.skip_block();
                        let before = rows;
                        rows += segment.block_rows(block);
                        last = None;
                        heads[0] = sources[0].head()?;
                        if before / 65_536 != rows / 65_536 && stop.load(Ordering::Relaxed) {
                            return Err(Error::Invalid("the store is closing".into()));
                        }
                        continue;
                    }
                }
            }
        }
        for (i, head) in heads.iter_mut().enumerate() {
            if *head == Some(min) {
                sources[i].advance()?;
                *head = sources[i].head()?;
                if head.is_some_and(|h| h <= min) {
                    return Err(Error::Invalid("a sorted run's keys are out of order".into()));
                }
            }
        }
        if last != Some(min) {
            writer.push(&min[..columns])?;
            rows += 1;
            last = Some(min);
            if rows % 65_536 == 0 && stop.load(Ordering::Relaxed) {
                return Err(Error::Invalid("the store is closing".into()));
            }
        }
    }
    Ok(rows)
}
