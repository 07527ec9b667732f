//! An index build as two threads: one reads changed documents and turns
//! them into index documents, batch after batch; the calling thread hands
//! each batch to the tantivy writer (whose own threads index it) and
//! commits. So reading and converting the next batch overlaps indexing
//! and committing the last one, on a machine's two cores.
//!
//! Commits are by time, not per batch: a synced commit (segments flushed,
//! `meta.json` written) is far dearer than a batch, so while batches keep
//! coming the writer commits every [`COMMIT_INTERVAL`]; it commits at once
//! when the reader falls quiet for [`IDLE_COMMIT`] (a slow batch, such as
//! one of a costly index function) and when the build is done. Every
//! commit is of whole batches and records the sequence its last batch
//! reached, so a process killed mid-build resumes from the last commit,
//! as before, and loses at most [`COMMIT_INTERVAL`] of work.

use crate::Result;
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};
use tantivy::schema::Field;
use tantivy::{IndexWriter, TantivyDocument, Term};

/// Changed documents read per batch.
pub const BATCH: usize = 2000;

/// Longest time between commits while batches keep coming.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(5);

/// How long the writer waits for the next batch before it commits what it
/// has (the reader is slow: committing now costs the build nothing).
pub const IDLE_COMMIT: Duration = Duration::from_millis(500);

/// Indexing threads of a build's writer (the machine's two cores; the
/// reading thread is mostly waiting on them or they on it).
pub const WRITER_THREADS: usize = 2;

/// Bytes of memory a build's writer may use in all, across its threads,
/// before it writes a segment (tantivy splits it among the threads, each
/// at least 15 MB).
pub const WRITER_BYTES: usize = 64 << 20;

/// One batch of changed documents, turned into index documents.
pub struct Batch<S> {
    /// Per changed database document: its id (whose old entries are
    /// deleted) and its new index documents (none when it is gone or
    /// indexes nothing).
    pub docs: Vec<(String, Vec<TantivyDocument>)>,
    /// The state after this batch (its sequence reached among it), which
    /// a commit of this batch records.
    pub state: S,
}

/// Runs a build: `produce` (on a thread of its own) sends batches in
/// order until the index is caught up, and returns; each batch goes into
/// `writer`, and at each commit `payload` of the last batch's state is
/// the commit's payload and `committed` is told that state.
pub fn run<S: Send>(
    writer: &mut IndexWriter<TantivyDocument>,
    id: Field,
    produce: impl FnOnce(SyncSender<Batch<S>>) -> Result<()> + Send,
    payload: impl Fn(&S) -> String,
    mut committed: impl FnMut(S) -> Result<()>,
) -> Result<()> {
    // One batch waiting while the next is made and the last is written:
    // at most three batches in memory.
    let (send, batches) = sync_channel::<Batch<S>>(1);
    std::thread::scope(|scope| {
        let producer = std::thread::Builder::new()
            .name("search-build-read".into())
            .spawn_scoped(scope, move || produce(send))
            .map_err(|e| crate::SearchError::Index(format!("starting the build's reading thread: {e}")))?;
        let mut pending: Option<S> = None;
        let mut last_commit = Instant::now();
        let mut commit = |writer: &mut IndexWriter<TantivyDocument>, pending: &mut Option<S>, last_commit: &mut Instant| -> Result<()> {
            if let Some(state) = pending.take() {
                let mut c = writer.prepare_commit()?;
                c.set_payload(&payload(&state));
                c.commit()?;
                *last_commit = Instant::now();
                committed(state)?;
            }
            Ok(())
        };
        let written: Result<()> = (|| loop {
            let batch = match batches.recv_timeout(IDLE_COMMIT) {
                Ok(b) => b,
                Err(RecvTimeoutError::Timeout) => {
                    commit(writer, &mut pending, &mut last_commit)?;
                    match batches.recv() {
                        Ok(b) => b,
                        Err(_) => return Ok(()),
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            };
            for (doc_id, docs) in batch.docs {
                writer.delete_term(Term::from_field_text(id, &doc_id));
                for d in docs {
                    writer.add_document(d)?;
                }
            }
            pending = Some(batch.state);
            if last_commit.elapsed() >= COMMIT_INTERVAL {
                commit(writer, &mut pending, &mut last_commit)?;
            }
        })();
        // On a writing error the receiver goes, and the reader's next send
        // fails, so it stops.
        drop(batches);
        let produced = producer.join().unwrap_or_else(|_| Err(crate::SearchError::Index("the build's reading thread panicked".into())));
        written?;
        // Whole batches only are pending: commit them even when the reader
        // failed later, then report its error.
        commit(writer, &mut pending, &mut last_commit)?;
        produced
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, STRING};
    use tantivy::Index;

    fn writer() -> (Index, Field, IndexWriter<TantivyDocument>) {
        let mut b = Schema::builder();
        let id = b.add_text_field("_id", STRING);
        let index = Index::create_in_ram(b.build());
        let writer = index.writer_with_num_threads(WRITER_THREADS, WRITER_BYTES).expect("a RAM index's writer");
        (index, id, writer)
    }

    fn batch(id: Field, first: u64, n: u64) -> Batch<u64> {
        let docs = (first..first + n)
            .map(|i| {
                let mut d = TantivyDocument::default();
                d.add_text(id, format!("d{i}"));
                (format!("d{i}"), vec![d])
            })
            .collect();
        Batch { docs, state: first + n }
    }

    #[test]
    fn batches_that_keep_coming_are_one_commit() {
        let (index, id, mut writer) = writer();
        let mut commits = Vec::new();
        let produce = |send: SyncSender<Batch<u64>>| {
            for b in 0..10 {
                send.send(batch(id, b * 100, 100)).expect("the writer waits for every batch");
            }
            Ok(())
        };
        run(&mut writer, id, produce, |s| s.to_string(), |s| {
            commits.push(s);
            Ok(())
        }).unwrap();
        // One commit unless the machine stalled the reader past
        // IDLE_COMMIT; a commit per batch before.
        assert_eq!(commits.last(), Some(&1000));
        assert!(commits.len() < 10, "{commits:?}");
        assert_eq!(index.load_metas().unwrap().payload.as_deref(), Some("1000"));
        let reader = index.reader().unwrap();
        assert_eq!(reader.searcher().num_docs(), 1000);
    }

    #[test]
    fn a_slow_reader_has_each_batch_committed_and_its_error_keeps_them() {
        let (index, id, mut writer) = writer();
        let mut commits = Vec::new();
        let produce = |send: SyncSender<Batch<u64>>| {
            send.send(batch(id, 0, 10)).expect("the writer waits");
            std::thread::sleep(IDLE_COMMIT * 3);
            send.send(batch(id, 10, 10)).expect("the writer waits");
            Err(crate::SearchError::Index("read failed".into()))
        };
        let out = run(&mut writer, id, produce, |s| s.to_string(), |s| {
            commits.push(s);
            Ok(())
        });
        assert!(matches!(out, Err(crate::SearchError::Index(m)) if m == "read failed"));
        // The first batch was committed while the reader was slow, the
        // second when it failed: both whole.
        assert_eq!(commits, [10, 20]);
        assert_eq!(index.load_metas().unwrap().payload.as_deref(), Some("20"));
    }
}
