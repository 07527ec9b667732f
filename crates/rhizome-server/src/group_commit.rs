//! Group commit: concurrent document writes to one database share one
//! transaction and one fsync.
//!
//! Every write must be durable before it is answered, and an fsync costs
//! far more than the write itself, so writes that arrive while another
//! commit is running wait, then go together: the first waiter becomes the
//! leader, takes every queued request, runs them as one `update_docs` call
//! (documents in arrival order, each checked against the ones before it,
//! exactly as if the requests had run one after another) and hands each
//! request its own outcomes. While more writes queue up it runs their
//! groups too, up to [`GROUPS_PER_LEADER`] (waking another thread to lead
//! costs about 5% of a group); then it passes leadership to the next
//! waiter, so no thread serves others for long. (The same idea as
//! PostgreSQL's commit_delay and RocksDB's write groups, without a timer.)
//! What can be
//! done before the transaction (`Database::prepare_docs`: the JSON-LD
//! parse) runs on each request's own thread before it queues, so the
//! leader's thread, which all writes wait on, does not do it.
//!
//! Tried and measured, not kept (issue 45, TPC-B scale 10, in process, 8
//! and 32 clients): a queued `_transaction` reading its documents on its
//! own thread (record and winning body, at a snapshot of its own, results
//! dropped) so that the leader would find cold blocks decompressed in the
//! block cache. The leader's instructions per transaction fell 553k ->
//! 455k (callgrind), the reading threads spent 205k more each, and
//! throughput fell 20-55% in alternated runs (load 8-19): done before
//! queueing it shrinks the groups; done while waiting, the readers take
//! the cores from the leader. Exact either way (it only reads), but the
//! leader needs the cores, not a cache warmed by others.
//!
//! Nor kept (the same target; the code is at c252ee7): each request
//! running its operations ahead at a snapshot (read, apply, prepare the new
//! revisions), the leader writing a document from that speculation when its
//! winner is unchanged and redoing it otherwise. Exact, and the leader's
//! instructions per transaction fell 491k -> 320k, but the whole process's
//! rose 551k -> 627k, and alternated wall-clock runs on the shared machine
//! (load 5-19) lost: speculating before queueing halved the throughput at 8
//! clients (smaller groups); speculating while queued, 8 clients 3,376 /
//! 2,533 -> 2,624 / 1,549 transactions/s, 32 clients 6,347 / 4,304 ->
//! 4,096 / 2,223. Not measured on a quiet machine, where the second core
//! would be free for it.
//!
//! Nor kept (issue 45; the code is at 196042b and 341f200): a pipelined
//! commit. A group's commit written without its fsync (RocksDB
//! `sync=false`, then `SyncWAL` from a request's thread, covering every
//! group written before it), the leader going on to the next group at
//! once, readers of every door kept at the last synced state (RocksDB
//! shows an unsynced write to every later snapshot, so the engine gave
//! readers the snapshot taken just before the first unsynced write, each
//! sync publishing the one just after the last write it covered). Exact
//! (its isolation, crash and kill tests passed), but alternated in process
//! (load 7.5-9.5): TPC-B scale 10 at 8 clients gained (median 1,622 ->
//! 2,737 transactions/s, 5 pairs of 5 s), at 32 clients lost (6,698 ->
//! 4,560, 4 pairs), and the graph benchmark's durable writes (25 writers,
//! Pokec) lost (8,297 / 7,952 -> 4,487 / 4,932 per second). With many
//! writers the groups shrink: the next group is formed while the last one
//! syncs, from the few requests queued, and gets an fsync of its own;
//! strace of 20,000 Pokec writes: 1,040 -> 2,637 log writes, 907 -> 1,795
//! fdatasyncs, and an fdatasync with appends to the log under way took
//! 285 us against 68 (strace's own times). Bounding the pipeline to one
//! group ahead of its sync, and waking each request once from the
//! syncer, changed neither. What might keep both (not built): applying the next group
//! in memory while the last syncs, adding every request that queues until
//! the sync lands, and writing it to the log only then (groups as large
//! as today, no append during an fsync); it needs a group's requests
//! applied in several passes, which the rerun of a failed request (the
//! documents of plain writes are consumed) does not allow yet.
//!
//! Measured since (issue 45, h/tpcb11, in process, scale 10, machine
//! loaded: load 5-12, three other builds). The leader's time per group
//! (env-gated counters, not kept), 8 clients on disk: 6.5 requests, apply
//! 592 us, RocksDB write 241, fdatasync 2,700 (a disk shared with the
//! builds), waking the group's requests 272, idle between groups 20; on
//! tmpfs: 5.2 requests (groups of 7 alternate with groups of 1, the one
//! that queued during the commit), apply 369, write 145, sync 3, waking
//! 224 (the woken clients take the leader's core), idle 4. The leader is
//! never idle, so hiding the fsync reaches at best the tmpfs rate (9,825/s
//! quiet, 2.9x pgbench): 3x also needs fewer instructions. The pipeline
//! above reapplied and used only while at most 8 writers are in flight
//! (e44f00d): 8 clients on disk median 1,765 -> 2,858/s (6 pairs of 5 s),
//! 32 even, on tmpfs 8 even and 32 lost 3 of 3; the graph benchmark's
//! durable writes (`bench/graph/writes`, 25 writers) lost 8,608 -> 7,308
//! (median of 5) and 10,212 -> 6,430 (of 3), and 6,945 -> 3,455 with the
//! pipeline never used: its machinery (a write without sync then
//! `SyncWAL`, the readers' durable snapshot kept per commit) costs where
//! it does not pipeline. The design named above needs none of it: the
//! next group is applied in memory (reading the last group's batch) while
//! that one's synced write runs (RocksDB shows a synced write only once
//! its log is synced), so the engine holds only synced commits.
//!
//! That design, built (h/tpcb15, 2026-12-01; the code is at 1422efd,
//! reverted in 1f19c5c): a kv transaction frozen after its group (writer
//! lock released, its writes kept in a slot on the store), the next writer
//! of any door reading through the frozen writes and committing only
//! after they land (failing if they failed), the leader adding requests
//! until the previous write lands, then freezing, handing over and writing
//! its own group. Only `Work::Ops` groups used it. Alternated with main at
//! load 9.4-11.8 (a test build beside it), 1 / 8 / 32 clients: 306 / 1,195
//! / 1,840 and 166 / 1,535 / 1,158 transactions/s against 163 / 1,836 /
//! 1,196 and 240 / 1,071 / 1,635: noise larger than any difference, so no
//! gain shown; a first version with a thread per synced write lost 2-3x
//! (the thread waits for a core). One run of its concurrent-transfer test
//! refused every transfer and was not explained. Next, if taken up: a quiet
//! A/B first, and a per-request undo (savepoint) so that plain document
//! groups can be formed while a write lands without shrinking.
//!
//! Measured since (h/tpcb16, 2026-12-01, scale 10, in process, 8 clients;
//! never quiet: load 4-10, Cassandra and builds beside it). The transfer
//! test's failure is explained: it never created its accounts, and an
//! `inc` of a missing document is refused, so it failed on every run;
//! with the accounts made it passed 30 of 30, and the CLI's transactions
//! tests (kill test included) 25 of 25 on that build (scratch branch
//! scratch/tpcb16-layered, 3b463d9). The layered commit costs no instructions
//! (whole process 329.7k per transaction against 327.6k, callgrind); what
//! it changes is the groups: 4.7 transactions per fdatasync against 6.3
//! (strace, 10 s), since a group closes when the last one lands, before
//! that one's requests are answered, so two groups share the 8 clients.
//! That pays only where a sync is short against applying a group; on this
//! loaded disk an fdatasync took 1.0 ms on average (p50 0.42 ms), half the
//! leader's time. Alternated 10 s runs: main 4,330 / 3,618 / 3,097 /
//! 2,640, layered 3,230 / 2,374 / 2,909 / 2,898; two alternated
//! `bench/tpcb/run` rounds (pgbench in each): main 3,573 and 3,202 (pgbench
//! 1,318 and 872), layered 3,239 and 5,026 (1,460 and 1,775). Then,
//! with the load down to 2.3-3.2, it lost in every round: 8 clients 6,039
//! / 5,884 / 5,240 / 5,000 against 5,788 / 3,876 / 3,446 / 3,269, CPU per
//! transaction 132-145 us against 144-197 (the kernel's share rising most:
//! more syncs and wake-ups); 32 clients (load 3.4-4.8) 8,590 / 7,954 against
//! 6,834 / 6,020; one `bench/tpcb/run` each (load 5): 8 / 32 clients
//! 5,526 (2.47x pgbench) / 9,021 (3.62x) against 4,414 (1.82x) / 5,869
//! (2.15x). Graph writes (25 writers) even: 7,968 / 8,961 against 10,448
//! / 7,764. Settled: it does not pay as built, at 8 clients or at 32.
//!
//! Scale 10 against scale 1 (same build): alternated 10 s runs gave
//! 3,994 / 4,396 / 3,987 transactions/s against 4,243 / 4,478 / 3,883, so
//! most of the 30% between the published runs (6,627 and 4,694, made on
//! different days) is the runs' own spread. What differs: 10% more
//! instructions (327.6k against 298.0k: cold account blocks' LZ4 and
//! checksums, a longer memtable search), and more CPU time per transaction
//! in 2 of those 3 rounds (148 and 150 us against 123 and 118; the third
//! 146 against 149): cycles more than instructions. The
//! memtable's skiplist insert (`FindSpliceForLevel`, 9-10% of cycles at
//! both scales, the largest single item) misses the caches more while a
//! million accounts' blocks are read. Not the block cache's size (the
//! accounts' blocks, 18 MB compressed, fit the 256 MiB cache: nothing is
//! evicted in a run), nor compaction (flushes and compactions 3-4% of the
//! instructions). Tried, not kept: 4 KiB blocks (tps lower in 3 of 3
//! rounds), a 32 MiB memtable budget (CPU per transaction +17%, tps lower
//! in 2 of 2). Per transaction the memtable takes 12 puts and 3 deletes
//! (44.7k instructions); the deletes, each the old `SEQS` entry of a
//! rewritten document, cost 3.8k each, the most of any insert (random
//! positions): a changes index that skips stale entries on read instead
//! of deleting them would save about 11k (3.4%), not built.

use crate::error::HttpError;
use rhizome_docs::{is_aborted, Database, DocError, EmptiedGraphs, OpResult, PreparedDoc, Refusals, Rev, TxnOp, WriteOutcome, Writer};
use rhizome_rdf::StoreTransaction;
use serde_json::{Map, Value};
use std::sync::{Arc, Condvar, Mutex};

type Outcomes = Result<Vec<(String, WriteOutcome)>, HttpError>;

/// Groups a leader runs back to back before handing over. Measured on
/// Pokec writes (25 writers, alternated A/B, 6 rounds in process, 2 over
/// HTTP): 8 gave 3.9% more writes in process and 9-11% over HTTP than 1,
/// with the HTTP p99 from 8.5 to 11.5 ms (the leader's own caller waits for
/// the groups after its own); 4 gained nothing over HTTP.
const GROUPS_PER_LEADER: usize = 8;

/// One request's writes, each kind with its writer's rights
/// (`rhizome_docs::Writer`; a document's preparation carries them).
enum Work {
    /// Documents each with its own outcome (`_bulk_docs`, PUT, ...).
    Docs { docs: Vec<(Map<String, Value>, PreparedDoc)>, new_edits: bool },
    /// `_bulk_docs` with `all_or_nothing` (issue 45): all or none. The
    /// documents are kept for a rerun (see `run`).
    Atomic { docs: Vec<Map<String, Value>>, prepared: Option<Vec<PreparedDoc>>, writer: Writer },
    /// A server-side transaction (`POST /{db}/_transaction`).
    Ops(Vec<TxnOp>, Writer),
    /// An RDF write (a SPARQL Update): run in the group's transaction, its
    /// graphs made revisions (`record_graph_writes_in`). Run again alone
    /// when it fails (its part in the group's transaction is dropped).
    Graph(GraphWrite, EmptiedGraphs, Writer),
}

/// An RDF write to run inside a store transaction, as often as needed.
pub type GraphWrite = Box<dyn FnMut(&mut StoreTransaction<'_>) -> Result<Value, HttpError> + Send>;

/// What a request gets back.
pub enum Done {
    Docs(Vec<(String, WriteOutcome)>),
    Atomic(Result<Vec<(String, Rev)>, Refusals>),
    Ops(Result<Vec<OpResult>, (usize, DocError)>),
    Graph(Value),
}

enum Role {
    Waiting,
    Leader,
    Done(Result<Done, HttpError>),
}

struct Request {
    work: Mutex<Option<Work>>,
    role: Mutex<Role>,
    wake: Condvar,
}

#[derive(Default)]
struct Queue {
    leader_active: bool,
    pending: Vec<Arc<Request>>,
}

#[derive(Default)]
pub struct GroupCommit {
    queue: Mutex<Queue>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl GroupCommit {
    /// Writes `docs` (one request's worth, by `writer`) and returns their
    /// outcomes once they are durable. Each document keeps its own
    /// writer's rights in the group (its preparation carries them).
    pub fn write(&self, db: &Database, docs: Vec<Map<String, Value>>, new_edits: bool, writer: Writer) -> Outcomes {
        let prepared = db.prepare_docs(&docs, new_edits, writer).map_err(HttpError::from)?;
        let fetched = db.fetched_contexts(&docs);
        let docs = docs.into_iter().zip(prepared).collect();
        match self.submit(db, Work::Docs { docs, new_edits })? {
            Done::Docs(out) => {
                // Durable: the remote contexts of the documents written are
                // kept on disk (as `Database::update_prepared` does).
                db.confirm_contexts(fetched, out.iter().map(|(_, o)| o.is_ok()));
                Ok(out)
            }
            _ => Err(HttpError::internal("group commit answered another kind of request")),
        }
    }

    /// Writes every document of `docs` or none (`all_or_nothing`), once
    /// durable: each document's new revision, or each failing document's
    /// error (nothing written). By `writer`, under `rhizome_docs`' rights
    /// rules: one document it may not write refuses them all.
    pub fn write_atomic(&self, db: &Database, docs: Vec<Map<String, Value>>, writer: Writer) -> Result<Result<Vec<(String, Rev)>, Refusals>, HttpError> {
        let prepared = db.prepare_docs(&docs, true, writer).map_err(HttpError::from)?;
        let fetched = db.fetched_contexts(&docs);
        match self.submit(db, Work::Atomic { docs, prepared: Some(prepared), writer })? {
            Done::Atomic(out) => {
                if out.is_ok() {
                    db.confirm_contexts(fetched, std::iter::repeat(true));
                }
                Ok(out)
            }
            _ => Err(HttpError::internal("group commit answered another kind of request")),
        }
    }

    /// Runs a server-side transaction's operations, once durable; a
    /// refusal names the operation (nothing written). By `writer`, under
    /// `rhizome_docs`' rights rules.
    pub fn apply_ops(&self, db: &Database, ops: Vec<TxnOp>, writer: Writer) -> Result<Result<Vec<OpResult>, (usize, DocError)>, HttpError> {
        match self.submit(db, Work::Ops(ops, writer))? {
            Done::Ops(out) => Ok(out),
            _ => Err(HttpError::internal("group commit answered another kind of request")),
        }
    }

    /// Runs an RDF write (a SPARQL Update) in a group, once durable; its
    /// answer, or its own error with nothing written. The revisions it
    /// makes are `writer`'s, under `rhizome_docs`' rights rules.
    pub fn write_graphs(&self, db: &Database, emptied: EmptiedGraphs, writer: Writer, write: GraphWrite) -> Result<Value, HttpError> {
        match self.submit(db, Work::Graph(write, emptied, writer))? {
            Done::Graph(out) => Ok(out),
            _ => Err(HttpError::internal("group commit answered another kind of request")),
        }
    }

    fn submit(&self, db: &Database, work: Work) -> Result<Done, HttpError> {
        let me = Arc::new(Request { work: Mutex::new(Some(work)), role: Mutex::new(Role::Waiting), wake: Condvar::new() });
        {
            let mut q = lock(&self.queue);
            q.pending.push(me.clone());
            if q.leader_active {
                drop(q);
                let mut role = lock(&me.role);
                loop {
                    match std::mem::replace(&mut *role, Role::Waiting) {
                        Role::Waiting => role = me.wake.wait(role).unwrap_or_else(|p| p.into_inner()),
                        Role::Done(out) => return out,
                        Role::Leader => break,
                    }
                }
            } else {
                q.leader_active = true;
            }
        }
        // Leader: run what is queued (this request included) and, while
        // more queue up, the next groups too, up to a limit; then hand over.
        // Each hand-over wakes another thread (0.08-0.11 ms a group of 20,
        // measured); the limit bounds how long the leader's own caller
        // waits past its outcome.
        for groups in 1.. {
            let batch = std::mem::take(&mut lock(&self.queue).pending);
            run(db, batch);
            let mut q = lock(&self.queue);
            if q.pending.is_empty() {
                q.leader_active = false;
                break;
            }
            if groups == GROUPS_PER_LEADER {
                let next = q.pending[0].clone();
                *lock(&next.role) = Role::Leader;
                next.wake.notify_one();
                break;
            }
        }
        let role = std::mem::replace(&mut *lock(&me.role), Role::Waiting);
        match role {
            Role::Done(out) => out,
            _ => Err(HttpError::internal("group commit lost a request's outcome")),
        }
    }
}

/// Runs a group in one transaction and one commit. All-or-nothing writes
/// and server-side transactions go first: each leaves all or nothing of
/// itself in the transaction, except when a document fails past the
/// checks (`is_aborted`); then the transaction is dropped, that request
/// runs alone (its own outcome), and the group runs again without it.
/// The other writes go last, once: their documents are consumed.
fn run(db: &Database, mut batch: Vec<Arc<Request>>) {
    batch.sort_by_key(|r| matches!(lock(&r.work).as_ref(), Some(Work::Docs { .. })));
    loop {
        let mut txn = match db.store().transaction() {
            Ok(t) => t,
            Err(e) => return finish_all(&batch, HttpError::from(DocError::from(e))),
        };
        let mut outcomes: Vec<Done> = Vec::with_capacity(batch.len());
        let mut failed = None;
        for (i, r) in batch.iter().enumerate() {
            let mut work = lock(&r.work);
            match apply(db, &mut txn, work.as_mut()) {
                Ok(done) => outcomes.push(done),
                Err(e) if is_aborted(&e) => {
                    failed = Some(i);
                    break;
                }
                Err(e) => {
                    drop(work);
                    return finish_all(&batch, HttpError::from(e));
                }
            }
        }
        if let Some(i) = failed {
            drop(txn);
            let r = batch.remove(i);
            let work = lock(&r.work).take();
            finish(&r, alone(db, work));
            continue;
        }
        if let Err(e) = txn.commit() {
            return finish_all(&batch, HttpError::from(DocError::from(e)));
        }
        for (r, done) in batch.iter().zip(outcomes) {
            finish(r, Ok(done));
        }
        return;
    }
}

fn apply(db: &Database, txn: &mut StoreTransaction<'_>, work: Option<&mut Work>) -> Result<Done, DocError> {
    match work {
        Some(Work::Docs { docs, new_edits }) => {
            let (docs, prepared) = std::mem::take(docs).into_iter().unzip();
            Ok(Done::Docs(db.write_prepared_in(txn, docs, prepared, *new_edits)?))
        }
        Some(Work::Atomic { docs, prepared, writer }) => {
            let prepared = match prepared.take() {
                Some(p) => p,
                None => db.prepare_docs(docs, true, *writer)?,
            };
            Ok(Done::Atomic(db.write_atomic_in(txn, docs.clone(), prepared)?))
        }
        Some(Work::Ops(ops, writer)) => Ok(Done::Ops(db.apply_ops_in(txn, ops, None, *writer)?)),
        Some(Work::Graph(write, emptied, writer)) => {
            // Its failure may leave a part of it behind: run alone instead.
            let out = write(txn).map_err(|e| DocError::Coded { status: e.status, error: "aborted", reason: e.reason })?;
            db.record_graph_writes_in(txn, *emptied, None, *writer).map_err(|e| DocError::Coded { status: 500, error: "aborted", reason: e.to_string() })?;
            Ok(Done::Graph(out))
        }
        None => Err(DocError::BadRequest("group commit ran a request twice".into())),
    }
}

/// A request that failed past its checks in a group, run in a transaction
/// of its own (which commits it if it passes now, or explains why not).
fn alone(db: &Database, work: Option<Work>) -> Result<Done, HttpError> {
    match work {
        Some(Work::Atomic { docs, writer, .. }) => Ok(Done::Atomic(db.write_atomic(docs, writer)?)),
        Some(Work::Ops(ops, writer)) => Ok(Done::Ops(db.apply_ops(&ops, None, writer)?)),
        Some(Work::Docs { docs, new_edits }) => {
            let (docs, prepared) = docs.into_iter().unzip();
            Ok(Done::Docs(db.update_prepared(docs, prepared, new_edits)?))
        }
        Some(Work::Graph(mut write, emptied, writer)) => Ok(Done::Graph(db.rdf_write_checked(emptied, None, writer, |txn| write(txn))?)),
        None => Err(HttpError::internal("group commit lost a request")),
    }
}

fn finish_all(batch: &[Arc<Request>], e: HttpError) {
    for r in batch {
        finish(r, Err(e.clone()));
    }
}

fn finish(r: &Request, out: Result<Done, HttpError>) {
    *lock(&r.role) = Role::Done(out);
    r.wake.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn concurrent_writers_get_their_own_outcomes_as_if_run_one_by_one() {
        let db = Arc::new(Database::memory());
        let group = Arc::new(GroupCommit::default());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (db, group) = (db.clone(), group.clone());
                std::thread::spawn(move || {
                    let mut created = 0;
                    for i in 0..50 {
                        // Everyone races to create "shared-i": one wins each.
                        let docs = vec![json!({"_id": format!("own-{t}-{i}")}), json!({"_id": format!("shared-{i}"), "by": t})];
                        let docs = docs.into_iter().map(|d| d.as_object().cloned().unwrap()).collect();
                        let out = group.write(&db, docs, true, Writer::Member).unwrap();
                        assert_eq!(out.len(), 2);
                        assert_eq!(out[0].0, format!("own-{t}-{i}"));
                        assert!(out[0].1.is_ok());
                        created += out[1].1.is_ok() as usize;
                    }
                    created
                })
            })
            .collect();
        let won: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(won, 50, "each shared id is created exactly once");
        assert_eq!(db.info().unwrap().doc_count, 8 * 50 + 50);
    }
}
