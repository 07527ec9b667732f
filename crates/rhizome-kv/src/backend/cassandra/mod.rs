//! The Cassandra backend: the storage trait over an Apache Cassandra
//! cluster that several Rhizome processes share (ARCHITECTURE.md,
//! "On a Cassandra cluster", says why it is built this way).
//!
//! What Cassandra gives: keys ordered inside a partition only, writes
//! atomic and isolated inside one partition only, compare-and-set as a
//! lightweight transaction (Paxos) on one partition, no snapshots. What
//! the layers above need: ordered keyspaces, consistent snapshots and
//! atomic commits across keys. The bridge, in three tables:
//! - `rows`: every version of every key, partitioned by store, keyspace and
//!   bucket (a prefix of the key, `buckets.rs`), clustered by key and then
//!   version, newest first. A commit writes its keys under a version number
//!   nobody reads yet.
//! - `heads`: one row per store, changed only by lightweight transactions:
//!   the last committed version, the next version, the versions given up
//!   (`aborted`), and the write lease (owner, expiry). A snapshot is the
//!   committed version read at QUORUM: it sees each key's newest version at
//!   or below it, not aborted. A commit is one compare-and-set moving
//!   `committed` to its version; until then its rows are invisible, and a
//!   writer that dies leaves rows that the next writer marks aborted.
//! - `buckets`: the buckets each keyspace has, so that a scan finds the
//!   next non-empty bucket with one read.
//!
//! Reads are round trips (2-5 ms on a loaded machine), so what a layer
//! above would do one after another goes out together: `get_many` sends
//! point reads at once (the driver pipelines them), `scan_ranges` reads
//! every bucket of several ranges at once (the dictionary's chunks and
//! slices), `cursors_sought` reads several cursors' first pages at once
//! (a pattern's two index families), and a forward cursor that leaves a
//! bucket reads the next 32 bucket names (then up to 256) in one read of
//! the directory and their first pages together (`cursor.rs`). `reads_are_round_trips` tells the layers above to use
//! them.
//!
//! Bulk loads (`ingest` of 50,000 rows or more, setting `bulk`) do not put
//! their rows through CQL: they are written offline as SSTables and
//! streamed to every replica (`sstables.rs`, as CumulusRDF loaded), under
//! the lease's version like a commit's, and published by the same
//! compare-and-set once streamed.
//!
//! Writers of a store take turns on its lease (taken by compare-and-set,
//! renewed during long writes, taken over once expired), so transactions
//! are serializable across every process, as the embedded engine's writer
//! lock makes them within one. A process keeps the lease after a commit
//! for its next transaction (`Park`): a timer gives it up after `hold_ms`
//! unused, and a turn ends after `turn_ms`, when the process gives it up
//! and waits `hold_ms` before taking it again, so that a server polling
//! the head gets its turn. A process that finds the lease held polls the
//! head with plain reads and tries a compare-and-set only once the head
//! looks free or expired: Paxos rounds from waiters against the holder's
//! commits on one partition made two servers' writes time out.
//!
//! Known costs and limits: a transaction pays one Paxos round (the commit)
//! while its process keeps the lease, two when it takes the lease anew,
//! so one store's writes are serialized across servers: more servers add
//! read throughput, and write throughput across databases, but not write
//! throughput of one database (the target of 1.6x for two servers needs
//! the design below; on a 2-core machine the three nodes' CPU per write,
//! 13-18 ms, bounds it first). Versions are not collected yet: each write of
//! a hot key (a database's `update_seq`) adds a row, read past by scans of
//! that key's partition. `TERM2ID` buckets by the term's first 16 bytes, so
//! one IRI namespace is one partition. The bucket directory of a keyspace
//! is one partition. Names of buckets, heads and directories are per
//! store, so many databases spread over the cluster.
//!
//! Scaling to 100 nodes and 100 billion triples, on paper. Rows: 3
//! index rows per triple plus dictionary entries, about 350 billion rows;
//! at RF 3 about 3.5 billion per node. Partitions: SPO buckets hold 256
//! subjects (a few thousand rows), POS/OSP buckets 256 objects of one
//! predicate: bounded except for the one hot case left, a single (predicate,
//! object) pair with billions of subjects (`rdf:type` of a huge class),
//! which needs a third split level (the subject's high bytes), and
//! `TERM2ID`, which should bucket by a hash of the namespace plus the
//! term's prefix. The bucket directory must become two-level (a directory
//! of directory ranges) past ~10 million buckets per keyspace. Lookups
//! stay one partition read each (1 to 3 replicas at QUORUM), independent
//! of cluster size. Coordination: the per-store lease serializes writers
//! of one database; at scale writes must not share one head. The design
//! that scales: documents partitioned by id, each document's revision tree
//! its own Paxos partition (compare-and-set on the tree: one round per
//! document write, no global lease), `_changes` as per-shard sequences
//! joined into an opaque `since` (CouchDB 2/3), the quad index rows of a
//! document written under the document's version and made visible by its
//! tree's compare-and-set, and multi-document transactions refused (or
//! Accord in Cassandra 6). That replaces this backend's one serialization
//! point with one per document, and is what the 1.6x two-server target
//! and 100 nodes need.

mod buckets;
mod cursor;
mod settings;
mod sstables;

use super::{Backend, Cursor, CursorSeek, KvRead, Snapshot, SortedRun, SortedRunWriter, WaitStats, WriteBatch, WriteLease, WriteOp};
use crate::{Error, Keyspace, Result};
use buckets::bucket_of;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency, SerialConsistency};
use scylla::value::{CqlValue, Row};
use settings::Settings;
use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn engine<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> Error {
    move |e| Error::Engine(format!("cassandra: {what}: {e}"))
}

/// A connection to one cluster and keyspace, shared by every store the
/// process opens there.
pub struct Cluster {
    runtime: tokio::runtime::Runtime,
    inner: Arc<Inner>,
    /// Times a caller waited on the cluster (each wait one round trip or
    /// more sent together): what a read costs in latency, for benchmarks.
    waits: std::sync::atomic::AtomicU64,
    /// Nanoseconds callers spent in those waits.
    waited_ns: std::sync::atomic::AtomicU64,
}

struct Inner {
    session: Session,
    settings: Settings,
    st: Statements,
    /// CQL statements (and batches) sent: with `Cluster::waits`, how many
    /// a wait carries, for benchmarks.
    statements: AtomicU64,
    /// Nanoseconds of the waits from the driver's runtime's first poll of
    /// their work to its end.
    driver_ns: AtomicU64,
}

struct Statements {
    head_read: PreparedStatement,
    head_read_serial: PreparedStatement,
    head_create: PreparedStatement,
    acquire: PreparedStatement,
    takeover: PreparedStatement,
    renew: PreparedStatement,
    commit_release: PreparedStatement,
    commit_keep: PreparedStatement,
    abort_release: PreparedStatement,
    release: PreparedStatement,
    destroy: PreparedStatement,
    names: PreparedStatement,
    get: PreparedStatement,
    scan_forward: PreparedStatement,
    scan_forward_open: PreparedStatement,
    scan_reverse: PreparedStatement,
    bucket_after: PreparedStatement,
    buckets_after: PreparedStatement,
    buckets_between: PreparedStatement,
    bucket_before: PreparedStatement,
    bucket_last: PreparedStatement,
    bucket_range: PreparedStatement,
    bucket_add: PreparedStatement,
    buckets_of: PreparedStatement,
    put: PreparedStatement,
    drop_partition: PreparedStatement,
    drop_buckets: PreparedStatement,
}

/// Rows per unlogged batch (one partition each) and the bytes a batch
/// stays under (Cassandra warns at 5 KiB and refuses 50 KiB by default).
const BATCH_ROWS: usize = 64;
const BATCH_BYTES: usize = 24 * 1024;
/// Partitions written at once by a commit.
const PARALLEL_WRITES: usize = 32;
/// Reads sent at once by `get_many` and `scan_ranges`: the driver
/// pipelines them on its connections, so a batch of reads costs about one
/// round trip instead of one each.
pub(crate) const PARALLEL_READS: usize = 64;

impl Cluster {
    /// Connects, creating the keyspace and tables on first use.
    pub fn connect(url: &str) -> Result<Cluster> {
        let settings = Settings::parse(url)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("rhizome-cassandra")
            .enable_all()
            .build()
            .map_err(engine("starting the driver's runtime"))?;
        let inner = runtime.block_on(Inner::connect(settings))?;
        Ok(Cluster { runtime, inner: Arc::new(inner), waits: Default::default(), waited_ns: Default::default() })
    }

    /// Runs a driver future on the cluster's runtime and waits for it; the
    /// caller may itself be on another runtime's thread (the server's).
    fn run<T: Send + 'static>(&self, f: impl Future<Output = Result<T>> + Send + 'static) -> Result<T> {
        use std::sync::atomic::Ordering::Relaxed;
        self.waits.fetch_add(1, Relaxed);
        let started = Instant::now();
        let inner = self.inner.clone();
        let out = self.run_in_background(async move {
            let polled = Instant::now();
            let out = f.await;
            inner.driver_ns.fetch_add(polled.elapsed().as_nanos() as u64, Relaxed);
            out
        });
        self.waited_ns.fetch_add(started.elapsed().as_nanos() as u64, Relaxed);
        out
    }

    /// As `run`, for work no caller waits on (the kept lease's timer), so
    /// not counted in `waits`.
    fn run_in_background<T: Send + 'static>(&self, f: impl Future<Output = Result<T>> + Send + 'static) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv().map_err(|_| Error::Engine("cassandra: the driver's runtime stopped".into()))?
    }

    /// How many times callers waited on the cluster so far.
    pub fn waits(&self) -> u64 {
        self.waits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits, the time spent in them and the statements sent, so far.
    pub fn wait_stats(&self) -> WaitStats {
        use std::sync::atomic::Ordering::Relaxed;
        let seconds = |ns: &AtomicU64| ns.load(Relaxed) as f64 / 1e9;
        WaitStats {
            waits: self.waits.load(Relaxed),
            seconds: seconds(&self.waited_ns),
            statements: self.inner.statements.load(Relaxed),
            driver_seconds: seconds(&self.inner.driver_ns),
        }
    }

    pub fn store_exists(&self, name: &str) -> Result<bool> {
        let inner = self.inner.clone();
        let name = name.to_owned();
        self.run(async move { Ok(inner.read_head(&name, false).await?.is_some()) })
    }

    pub fn store_names(&self) -> Result<Vec<String>> {
        let inner = self.inner.clone();
        self.run(async move {
            let mut names = Vec::new();
            let mut rows = inner.send().execute_iter(inner.st.names.clone(), ()).await.map_err(engine("listing stores"))?.rows_stream::<(String,)>().map_err(engine("listing stores"))?;
            while let Some((name,)) = rows.try_next().await.map_err(engine("listing stores"))? {
                names.push(name);
            }
            names.sort();
            Ok(names)
        })
    }

    /// Deletes a store: its head first (it is gone for every process at
    /// once), then its rows.
    pub fn destroy_store(&self, name: &str) -> Result<()> {
        let inner = self.inner.clone();
        let name = name.to_owned();
        self.run(async move {
            let Some(head) = inner.read_head(&name, true).await? else { return Ok(()) };
            inner.send().execute_unpaged(&inner.st.destroy, (&name,)).await.map_err(engine("deleting a store"))?;
            for ks in 0..64i32 {
                let mut buckets = inner
                    .send()
                    .execute_iter(inner.st.buckets_of.clone(), (&head.id, ks))
                    .await
                    .map_err(engine("deleting a store"))?
                    .rows_stream::<(Vec<u8>,)>()
                    .map_err(engine("deleting a store"))?;
                while let Some((bucket,)) = buckets.try_next().await.map_err(engine("deleting a store"))? {
                    inner.send().execute_unpaged(&inner.st.drop_partition, (&head.id, ks, bucket)).await.map_err(engine("deleting a store"))?;
                }
                inner.send().execute_unpaged(&inner.st.drop_buckets, (&head.id, ks)).await.map_err(engine("deleting a store"))?;
            }
            Ok(())
        })
    }
}

/// A store's head row.
#[derive(Clone, Debug)]
struct Head {
    id: Vec<u8>,
    committed: i64,
    next: i64,
    aborted: Vec<i64>,
    owner: Option<String>,
    lease_until: i64,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A value unique to this process and moment (store ids, lease owners).
fn unique_bytes() -> Vec<u8> {
    use std::hash::{BuildHasher, Hasher};
    let mut out = Vec::with_capacity(16);
    for salt in 0..2u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.write_u32(std::process::id());
        h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
        out.extend_from_slice(&h.finish().to_be_bytes());
    }
    out
}

fn applied(row: &Row) -> bool {
    matches!(row.columns.first(), Some(Some(CqlValue::Boolean(true))))
}

impl Inner {
    async fn connect(settings: Settings) -> Result<Inner> {
        let session = SessionBuilder::new()
            .known_nodes(&settings.hosts)
            // Agreement is awaited below, once for the tables together.
            .auto_await_schema_agreement(false)
            .build()
            .await
            .map_err(|e| Error::Engine(format!("cassandra: connecting to {}: {e}", settings.hosts.join(","))))?;
        let ks = &settings.keyspace;
        let keyspace = format!(
            "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {}}}",
            settings.replication_factor
        );
        let tables = [
            format!(
                "CREATE TABLE IF NOT EXISTS {ks}.heads (store text PRIMARY KEY, id blob, committed bigint, next bigint, \
                 aborted set<bigint>, owner text, lease_until bigint)"
            ),
            rows_table(ks),
            buckets_table(ks),
        ];
        let ddl = |statement: &str| {
            let statement = statement.to_owned();
            let session = &session;
            async move { session.query_unpaged(statement.as_str(), ()).await.map(|_| ()).map_err(|e| Error::Engine(format!("cassandra: {statement}: {e}"))) }
        };
        // A new keyspace's schema changes took about 2 s each, one after
        // another (a bench's every load creates one): the keyspace first
        // (every node must know it before a table goes in), then its
        // three tables at once, one wait for the nodes' agreement.
        ddl(&keyspace).await?;
        session.await_schema_agreement().await.map_err(engine("waiting for schema agreement"))?;
        futures_util::future::try_join_all(tables.iter().map(|t| ddl(t))).await?;
        session.await_schema_agreement().await.map_err(engine("waiting for schema agreement"))?;
        let st = Statements::prepare(&session, &settings).await?;
        Ok(Inner { session, settings, st, statements: AtomicU64::new(0), driver_ns: AtomicU64::new(0) })
    }

    /// The session, for one statement (or batch) to send: counted.
    fn send(&self) -> &Session {
        self.statements.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &self.session
    }

    async fn read_head(&self, store: &str, serial: bool) -> Result<Option<Head>> {
        let statement = if serial { &self.st.head_read_serial } else { &self.st.head_read };
        let result = self.send().execute_unpaged(statement, (store,)).await.map_err(engine("reading a store's head"))?;
        let rows = result.into_rows_result().map_err(engine("reading a store's head"))?;
        type HeadRow = (Option<Vec<u8>>, Option<i64>, Option<i64>, Option<Vec<i64>>, Option<String>, Option<i64>);
        let row: Option<HeadRow> = rows.maybe_first_row().map_err(engine("reading a store's head"))?;
        Ok(row.and_then(|(id, committed, next, aborted, owner, lease_until)| {
            Some(Head { id: id?, committed: committed?, next: next?, aborted: aborted.unwrap_or_default(), owner, lease_until: lease_until.unwrap_or(0) })
        }))
    }

    async fn lwt(&self, statement: &PreparedStatement, values: impl scylla::serialize::row::SerializeRow) -> Result<bool> {
        let result = self.send().execute_unpaged(statement, values).await.map_err(engine("compare-and-set on a store's head"))?;
        let rows = result.into_rows_result().map_err(engine("compare-and-set on a store's head"))?;
        let row: Option<Row> = rows.maybe_first_row().map_err(engine("compare-and-set on a store's head"))?;
        Ok(row.as_ref().is_some_and(applied))
    }
}

/// The `rows` table of keyspace `ks` (also the schema of the SSTables a
/// bulk load writes, `sstables.rs`).
fn rows_table(ks: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {ks}.rows (id blob, ks int, bucket blob, key blob, version bigint, value blob, \
         PRIMARY KEY ((id, ks, bucket), key, version)) WITH CLUSTERING ORDER BY (key ASC, version DESC) \
         AND compression = {{'class': 'ZstdCompressor', 'chunk_length_in_kb': 16}}"
    )
}

fn rows_insert(ks: &str) -> String {
    format!("INSERT INTO {ks}.rows (id, ks, bucket, key, version, value) VALUES (?, ?, ?, ?, ?, ?)")
}

/// The bucket directory's table of keyspace `ks`.
fn buckets_table(ks: &str) -> String {
    format!("CREATE TABLE IF NOT EXISTS {ks}.buckets (id blob, ks int, bucket blob, PRIMARY KEY ((id, ks), bucket))")
}

fn buckets_insert(ks: &str) -> String {
    format!("INSERT INTO {ks}.buckets (id, ks, bucket) VALUES (?, ?, ?)")
}

impl Statements {
    /// Every statement prepared at once: the driver prepares each on every
    /// node, a round trip each, and a process opening a store (every
    /// `rhizome load`) waited on 27 of them one after another.
    async fn prepare(session: &Session, settings: &Settings) -> Result<Statements> {
        let ks = &settings.keyspace;
        let prepare = |cql: String, serial: bool| async move {
            let mut p = session.prepare(cql.clone()).await.map_err(|e| Error::Engine(format!("cassandra: preparing {cql}: {e}")))?;
            p.set_consistency(if serial { settings.serial_read } else { settings.consistency });
            p.set_serial_consistency(Some(settings.serial));
            Ok::<_, Error>(p)
        };
        let head = "id, committed, next, aborted, owner, lease_until";
        // In the order of the fields taken below.
        let cqls: Vec<(String, bool)> = vec![
            (format!("SELECT {head} FROM {ks}.heads WHERE store = ?"), false),
            (format!("SELECT {head} FROM {ks}.heads WHERE store = ?"), true),
            (format!("INSERT INTO {ks}.heads (store, id, committed, next, aborted) VALUES (?, ?, 0, 1, {{}}) IF NOT EXISTS"), false),
            (format!("UPDATE {ks}.heads SET owner = ?, lease_until = ? WHERE store = ? IF owner = null AND next = ? AND id = ?"), false),
            (
                format!("UPDATE {ks}.heads SET owner = ?, lease_until = ?, aborted = aborted + ?, next = ? WHERE store = ? IF owner = ? AND lease_until = ? AND next = ? AND id = ?"),
                false,
            ),
            (format!("UPDATE {ks}.heads SET lease_until = ? WHERE store = ? IF owner = ?"), false),
            (format!("UPDATE {ks}.heads SET committed = ?, next = ?, owner = null WHERE store = ? IF owner = ?"), false),
            (format!("UPDATE {ks}.heads SET committed = ?, next = ?, lease_until = ? WHERE store = ? IF owner = ?"), false),
            (format!("UPDATE {ks}.heads SET aborted = aborted + ?, next = ?, owner = null WHERE store = ? IF owner = ?"), false),
            (format!("UPDATE {ks}.heads SET owner = null WHERE store = ? IF owner = ?"), false),
            (format!("DELETE FROM {ks}.heads WHERE store = ? IF EXISTS"), false),
            (format!("SELECT store FROM {ks}.heads"), false),
            (format!("SELECT version, value FROM {ks}.rows WHERE id = ? AND ks = ? AND bucket = ? AND key = ? AND version <= ? LIMIT ?"), false),
            (format!("SELECT key, version, value FROM {ks}.rows WHERE id = ? AND ks = ? AND bucket = ? AND key >= ? AND key < ? LIMIT ?"), false),
            (format!("SELECT key, version, value FROM {ks}.rows WHERE id = ? AND ks = ? AND bucket = ? AND key >= ? LIMIT ?"), false),
            (
                format!("SELECT key, version, value FROM {ks}.rows WHERE id = ? AND ks = ? AND bucket = ? AND key >= ? AND key < ? ORDER BY key DESC, version ASC LIMIT ?"),
                false,
            ),
            (format!("SELECT bucket FROM {ks}.buckets WHERE id = ? AND ks = ? AND bucket > ? LIMIT 1"), false),
            (format!("SELECT bucket FROM {ks}.buckets WHERE id = ? AND ks = ? AND bucket > ? LIMIT ?"), false),
            (format!("SELECT bucket FROM {ks}.buckets WHERE id = ? AND ks = ? AND bucket > ? AND bucket <= ? LIMIT ?"), false),
            (format!("SELECT bucket FROM {ks}.buckets WHERE id = ? AND ks = ? AND bucket < ? ORDER BY bucket DESC LIMIT 1"), false),
            (format!("SELECT bucket FROM {ks}.buckets WHERE id = ? AND ks = ? ORDER BY bucket DESC LIMIT 1"), false),
            (format!("SELECT bucket FROM {ks}.buckets WHERE id = ? AND ks = ? AND bucket >= ? AND bucket <= ?"), false),
            (buckets_insert(ks), false),
            (format!("SELECT bucket FROM {ks}.buckets WHERE id = ? AND ks = ?"), false),
            (rows_insert(ks), false),
            (format!("DELETE FROM {ks}.rows WHERE id = ? AND ks = ? AND bucket = ?"), false),
            (format!("DELETE FROM {ks}.buckets WHERE id = ? AND ks = ?"), false),
        ];
        let count = cqls.len();
        let prepared = futures_util::future::try_join_all(cqls.into_iter().map(|(cql, serial)| prepare(cql, serial))).await?;
        debug_assert_eq!(prepared.len(), count);
        let mut prepared = prepared.into_iter();
        let mut next = move || prepared.next().expect("one prepared statement per field");
        let mut head_read = next();
        head_read.set_is_idempotent(true);
        let mut head_read_serial = next();
        head_read_serial.set_consistency(match settings.serial {
            SerialConsistency::LocalSerial => Consistency::LocalSerial,
            _ => Consistency::Serial,
        });
        let (head_create, acquire, takeover, renew, commit_release, commit_keep, abort_release, release, destroy, names) =
            (next(), next(), next(), next(), next(), next(), next(), next(), next(), next());
        let mut get = next();
        get.set_is_idempotent(true);
        let (scan_forward, scan_forward_open, scan_reverse) = (next(), next(), next());
        let (bucket_after, buckets_after, buckets_between, bucket_before, bucket_last, bucket_range, bucket_add, buckets_of) =
            (next(), next(), next(), next(), next(), next(), next(), next());
        let mut put = next();
        put.set_is_idempotent(true);
        let (drop_partition, drop_buckets) = (next(), next());
        Ok(Statements {
            head_read,
            head_read_serial,
            head_create,
            acquire,
            takeover,
            renew,
            commit_release,
            commit_keep,
            abort_release,
            release,
            destroy,
            names,
            get,
            scan_forward,
            scan_forward_open,
            scan_reverse,
            bucket_after,
            buckets_after,
            buckets_between,
            bucket_before,
            bucket_last,
            bucket_range,
            bucket_add,
            buckets_of,
            put,
            drop_partition,
            drop_buckets,
        })
    }
}

/// What this process knows of a store's head, from its last look.
#[derive(Clone, Debug)]
struct Known {
    committed: i64,
    next: i64,
    aborted: Arc<Vec<i64>>,
}

/// One store in a cluster, as one process sees it.
pub(crate) struct StoreShared {
    cluster: Arc<Cluster>,
    name: String,
    id: Vec<u8>,
    /// The lease owner this process writes as.
    owner: String,
    known: Mutex<Known>,
    /// The committed version after this process's last commit (or at
    /// open): a lease that finds another tells the layers above.
    last_own: Mutex<i64>,
    /// Buckets known to be in the directory (written or read).
    known_buckets: Mutex<HashSet<(u8, Vec<u8>)>>,
    /// The lease kept between this process's transactions (`hold_ms`).
    park: Mutex<Park>,
    park_changed: Condvar,
    parks: AtomicU64,
    /// When this process last ended a turn (`turn_ms`): its next acquire
    /// waits `hold_ms` from then, so a server polling the head sees the
    /// lease free and takes it.
    turn_ended: Mutex<Option<Instant>>,
    /// The SSTable tool started ahead of a bulk load's ingest.
    tool: Mutex<Option<sstables::StartedTool>>,
}

impl Drop for StoreShared {
    /// A store closed with its lease kept gives it up at once rather
    /// than after `hold_ms` (its timer holds no reference to the store).
    fn drop(&mut self) {
        if matches!(*self.park.get_mut().unwrap_or_else(|p| p.into_inner()), Park::Held(_)) {
            let _ = self.release_now(false);
        }
    }
}

/// The write lease while no transaction of this process uses it.
enum Park {
    Empty,
    /// Held since a commit: the next transaction here takes it without a
    /// round trip; a timer gives it up after `hold_ms` unused.
    Held(ParkedLease),
    /// Being given up by that timer. An acquire waits for the outcome: the
    /// release's compare-and-set names this process as the owner, so it
    /// would also release a lease this process took meanwhile.
    Releasing,
}

struct ParkedLease {
    committed: i64,
    aborted: Arc<Vec<i64>>,
    version: i64,
    renewed: Instant,
    turn_started: Instant,
    /// Which parking the timer was started for.
    number: u64,
}

pub struct CassandraBackend {
    shared: Arc<StoreShared>,
}

impl CassandraBackend {
    /// Opens store `name`, creating it if missing.
    pub fn open(cluster: Arc<Cluster>, name: &str) -> Result<CassandraBackend> {
        let inner = cluster.inner.clone();
        let store = name.to_owned();
        let head = cluster.run(async move {
            if let Some(head) = inner.read_head(&store, false).await? {
                return Ok(head);
            }
            inner.lwt(&inner.st.head_create, (&store, unique_bytes())).await?;
            inner.read_head(&store, true).await?.ok_or_else(|| Error::Engine(format!("cassandra: store {store} vanished while it was created")))
        })?;
        let owner = unique_bytes().iter().map(|b| format!("{b:02x}")).collect();
        let known = Known { committed: head.committed, next: head.next, aborted: Arc::new(head.aborted.clone()) };
        Ok(CassandraBackend {
            shared: Arc::new(StoreShared {
                cluster,
                name: name.to_owned(),
                id: head.id,
                owner,
                known: Mutex::new(known),
                last_own: Mutex::new(head.committed),
                known_buckets: Mutex::default(),
                park: Mutex::new(Park::Empty),
                park_changed: Condvar::new(),
                parks: AtomicU64::new(0),
                turn_ended: Mutex::new(None),
                tool: Mutex::new(None),
            }),
        })
    }
}

impl StoreShared {
    fn inner(&self) -> Arc<Inner> {
        self.cluster.inner.clone()
    }

    fn gone(&self) -> Error {
        Error::Engine(format!("cassandra: store {} was deleted (or deleted and created again) by another process; open it again", self.name))
    }

    fn current_head(&self, serial: bool) -> Result<Head> {
        let inner = self.inner();
        let name = self.name.clone();
        let head = self.cluster.run(async move { inner.read_head(&name, serial).await })?;
        match head {
            Some(head) if head.id == self.id => Ok(head),
            _ => Err(self.gone()),
        }
    }

    fn lease_ms(&self) -> i64 {
        self.cluster.inner.settings.lease_ms as i64
    }

    /// Takes the store's write lease, waiting while another process holds
    /// it and taking it over once it has expired.
    fn acquire(self: &Arc<Self>) -> Result<CassandraLease> {
        if let Some(lease) = self.unpark()? {
            return Ok(lease);
        }
        let ended = self.turn_ended.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(left) = ended.and_then(|at| self.hold().checked_sub(at.elapsed())) {
            // This process just ended a turn: a server polling the head
            // gets this long to see the lease free and take it.
            std::thread::sleep(left);
        }
        let mut wait = Duration::from_millis(1);
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // Compare-and-set only when the head looks free: while another
        // process holds the lease, plain reads of the head wait for it, so
        // that waiting writers do not run Paxos rounds against the
        // holder's commits on the same partition (two servers' writes
        // timed out on that contention).
        let mut try_cas = true;
        loop {
            if try_cas {
                let inner = self.inner();
                let (store, owner, id, next) = (self.name.clone(), self.owner.clone(), self.id.clone(), known.next);
                let until = now_ms() + self.lease_ms();
                let got = self.cluster.run(async move { inner.lwt(&inner.st.acquire, (owner, until, store, next, id)).await })?;
                if got {
                    let version = known.next;
                    return Ok(self.lease(known, version));
                }
            }
            try_cas = true;
            // A plain QUORUM read, not a SERIAL one: a serial read is a Paxos
            // round on the very partition the writers contend for, and every
            // decision below is taken again by a compare-and-set that fails
            // if the read was stale.
            let head = self.current_head(false)?;
            known = Known { committed: head.committed, next: head.next, aborted: Arc::new(head.aborted.clone()) };
            *self.known.lock().unwrap_or_else(|p| p.into_inner()) = known.clone();
            match &head.owner {
                None => {
                    // Free, or a stale read: try again soon, not at once.
                    std::thread::sleep(wait / 2);
                    wait = (wait * 2).min(Duration::from_millis(20));
                }
                // Our own lease left held by a commit whose outcome was unknown
                // (this process holds one lease per store at a time), or
                // another's past its expiry.
                Some(holder) if *holder == self.owner || head.lease_until < now_ms() => {
                    // The holder died or stalled past its lease: its version
                    // (`next`) may have rows written; they stay invisible.
                    let inner = self.inner();
                    let (store, owner, id) = (self.name.clone(), self.owner.clone(), self.id.clone());
                    let (holder, held_until, next) = (holder.clone(), head.lease_until, head.next);
                    let until = now_ms() + self.lease_ms();
                    let got = self.cluster.run(async move {
                        inner.lwt(&inner.st.takeover, (owner, until, vec![next], next + 1, store, holder, held_until, next, id)).await
                    })?;
                    if got {
                        let mut aborted = head.aborted.clone();
                        aborted.push(head.next);
                        let known = Known { committed: head.committed, next: head.next + 1, aborted: Arc::new(aborted) };
                        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = known.clone();
                        return Ok(self.lease(known, head.next + 1));
                    }
                }
                Some(_) => {
                    std::thread::sleep(wait);
                    // Polled at most every 10 ms: a holder that ends its
                    // turn leaves the lease free for `hold_ms` (25).
                    wait = (wait * 2).min(Duration::from_millis(10));
                    try_cas = false;
                }
            }
        }
    }

    fn hold(&self) -> Duration {
        Duration::from_millis(self.cluster.inner.settings.hold_ms)
    }

    /// The longest turn: `turn_ms`, and at most half the lease, so a kept
    /// lease is always far from expiring.
    fn turn(&self) -> Duration {
        Duration::from_millis(self.cluster.inner.settings.turn_ms.min(self.cluster.inner.settings.lease_ms / 2))
    }

    /// The lease this process kept from its last transaction, if its turn
    /// is not over; a kept lease whose turn is over is given up here.
    fn unpark(self: &Arc<Self>) -> Result<Option<CassandraLease>> {
        let mut park = self.park.lock().unwrap_or_else(|p| p.into_inner());
        while matches!(*park, Park::Releasing) {
            park = self.park_changed.wait(park).unwrap_or_else(|p| p.into_inner());
        }
        let Park::Held(kept) = std::mem::replace(&mut *park, Park::Empty) else { return Ok(None) };
        if kept.turn_started.elapsed() < self.turn() {
            return Ok(Some(CassandraLease {
                shared: self.clone(),
                committed: kept.committed,
                aborted: kept.aborted,
                version: kept.version,
                held: true,
                renewed: kept.renewed,
                changed: false,
                turn_started: kept.turn_started,
            }));
        }
        // Given up while the park is locked: no acquire of this process
        // runs meanwhile (see `Park::Releasing`).
        let result = self.release_now(true);
        *self.turn_ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        result.map(|_| None)
    }

    /// Keeps a lease that a transaction of this process finished with, for
    /// the next one; a timer gives it up after `hold_ms` unused.
    fn park(self: &Arc<Self>, lease: &CassandraLease) {
        let number = self.parks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *self.park.lock().unwrap_or_else(|p| p.into_inner()) = Park::Held(ParkedLease {
            committed: lease.committed,
            aborted: lease.aborted.clone(),
            version: lease.version,
            renewed: lease.renewed,
            turn_started: lease.turn_started,
            number,
        });
        let shared = Arc::downgrade(self);
        let hold = self.hold();
        std::thread::spawn(move || {
            std::thread::sleep(hold);
            if let Some(shared) = shared.upgrade() {
                shared.release_idle(number);
            }
        });
    }

    /// The timer's end: gives the kept lease up if it is still the one
    /// parked as `number` (no transaction took it meanwhile).
    fn release_idle(&self, number: u64) {
        {
            let mut park = self.park.lock().unwrap_or_else(|p| p.into_inner());
            match &*park {
                Park::Held(kept) if kept.number == number => *park = Park::Releasing,
                _ => return,
            }
        }
        // Best effort: a lease not given up expires (`lease_ms`).
        let _ = self.release_now(false);
        *self.park.lock().unwrap_or_else(|p| p.into_inner()) = Park::Empty;
        self.park_changed.notify_all();
    }

    /// Gives this process's lease up (nothing is written under its next
    /// version).
    /// `counted`: a caller waits on it (see `Cluster::waits`).
    fn release_now(&self, counted: bool) -> Result<bool> {
        let inner = self.inner();
        let (store, owner) = (self.name.clone(), self.owner.clone());
        let release = async move { inner.lwt(&inner.st.release, (store, owner)).await };
        if counted {
            self.cluster.run(release)
        } else {
            self.cluster.run_in_background(release)
        }
    }

    /// Whether a transaction finishing with the lease keeps it for the next
    /// one (`hold_ms` above 0 and the turn not over).
    fn keeps(&self, lease: &CassandraLease) -> bool {
        !self.hold().is_zero() && lease.turn_started.elapsed() < self.turn()
    }

    fn lease(self: &Arc<Self>, known: Known, version: i64) -> CassandraLease {
        let changed = known.committed != *self.last_own.lock().unwrap_or_else(|p| p.into_inner());
        CassandraLease { shared: self.clone(), committed: known.committed, aborted: known.aborted, version, held: true, renewed: Instant::now(), changed, turn_started: Instant::now() }
    }

    fn snapshot_at(self: &Arc<Self>, committed: i64, aborted: Arc<Vec<i64>>) -> Arc<dyn Snapshot> {
        Arc::new(CassandraSnapshot { shared: self.clone(), committed, aborted })
    }
}

impl Backend for CassandraBackend {
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        let head = self.shared.current_head(false)?;
        Ok(self.shared.snapshot_at(head.committed, Arc::new(head.aborted)))
    }

    fn commit(&self, batch: WriteBatch) -> Result<()> {
        let mut lease = self.shared.acquire()?;
        lease.commit(batch, true)
    }

    /// A bulk load's runs, kept in memory; the first one starts the
    /// SSTable tool, so that its JVM starts while the loader sorts.
    fn sorted_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        sstables::start_early(&self.shared);
        Ok(crate::memory_run_writer(ks))
    }

    /// A derived index's runs (a view built from nothing): no early tool,
    /// these are rarely a bulk load's size.
    fn index_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        Ok(crate::memory_run_writer(ks))
    }

    fn ingest(&self, runs: Vec<SortedRun>) -> Result<()> {
        let mut lease = self.shared.acquire()?;
        lease.ingest(runs)
    }

    /// Cassandra compacts by itself.
    fn compact(&self) -> Result<()> {
        Ok(())
    }

    /// The cluster's nodes hold the data; `nodetool tablestats` tells.
    fn size_on_disk(&self) -> Result<u64> {
        Ok(0)
    }

    fn begin_write(&self) -> Result<Option<Box<dyn WriteLease>>> {
        Ok(Some(Box::new(self.shared.acquire()?)))
    }

    fn is_shared(&self) -> bool {
        true
    }
}

/// The write lease on a store, with the version its next commit takes.
struct CassandraLease {
    shared: Arc<StoreShared>,
    committed: i64,
    aborted: Arc<Vec<i64>>,
    version: i64,
    held: bool,
    renewed: Instant,
    changed: bool,
    /// When this process took the lease: it keeps it across transactions
    /// for at most `turn_ms` from then.
    turn_started: Instant,
}

impl CassandraLease {
    fn check_held(&self) -> Result<()> {
        if self.held {
            Ok(())
        } else {
            Err(Error::Engine(format!("cassandra: the write lease on {} was given up", self.shared.name)))
        }
    }

    /// Renews the lease when a third of it has passed (long commits).
    fn keep_alive(&mut self) -> Result<()> {
        if self.renewed.elapsed() < Duration::from_millis(self.shared.lease_ms() as u64 / 3) {
            return Ok(());
        }
        let inner = self.shared.inner();
        let (store, owner) = (self.shared.name.clone(), self.shared.owner.clone());
        let until = now_ms() + self.shared.lease_ms();
        if !self.shared.cluster.run(async move { inner.lwt(&inner.st.renew, (until, store, owner)).await })? {
            self.held = false;
            return Err(Error::Engine(format!("cassandra: lost the write lease on {} (expired and taken over)", self.shared.name)));
        }
        self.renewed = Instant::now();
        Ok(())
    }

    /// Writes the batch's keys under this lease's version.
    fn write_rows(&mut self, ops: Vec<WriteOp>) -> Result<()> {
        // Group by partition, keeping the last write of a key.
        let mut by_partition: std::collections::BTreeMap<(u8, Vec<u8>), Vec<(Vec<u8>, Vec<u8>)>> = Default::default();
        for op in ops {
            let (ks, key, value) = match op {
                WriteOp::Put(ks, key, value) => {
                    let mut v = Vec::with_capacity(value.len() + 1);
                    v.push(1);
                    v.extend_from_slice(&value);
                    (ks, key, v)
                }
                WriteOp::Delete(ks, key) => (ks, key, vec![0]),
            };
            // Reads name such a keyspace's buckets from the bounds alone
            // (`buckets::from_bounds`): a key of another length would be missed.
            debug_assert!(buckets::fixed_key_len(ks.0).is_none_or(|n| n == key.len()), "keyspace {} has keys of fixed length", ks.0);
            let bucket = bucket_of(ks.0, &key).to_vec();
            by_partition.entry((ks.0, bucket)).or_default().push((key, value));
        }
        let new_buckets: Vec<(u8, Vec<u8>)> = {
            let known = self.shared.known_buckets.lock().unwrap_or_else(|p| p.into_inner());
            by_partition.keys().filter(|k| !known.contains(*k)).cloned().collect()
        };
        let mut batches: Vec<(i32, Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>)> = Vec::new();
        for ((ks, bucket), rows) in by_partition {
            let mut current: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut bytes = 0;
            for row in rows {
                bytes += row.0.len() + row.1.len() + 32;
                current.push(row);
                if current.len() >= BATCH_ROWS || bytes >= BATCH_BYTES {
                    batches.push((ks as i32, bucket.clone(), std::mem::take(&mut current)));
                    bytes = 0;
                }
            }
            if !current.is_empty() {
                batches.push((ks as i32, bucket, current));
            }
        }
        // Long writes (bulk loads) renew the lease between groups.
        let mut groups: Vec<Vec<_>> = Vec::new();
        let mut group_rows = 0;
        for batch in batches {
            if groups.is_empty() || group_rows >= 50_000 {
                groups.push(Vec::new());
                group_rows = 0;
            }
            group_rows += batch.2.len();
            groups.last_mut().expect("pushed").push(batch);
        }
        let version = self.version;
        let id = self.shared.id.clone();
        let inner = self.shared.inner();
        let dir = new_buckets.clone();
        let dir_id = id.clone();
        self.shared.cluster.run(async move {
            stream::iter(dir.into_iter().map(|(ks, bucket)| {
                let inner = inner.clone();
                let id = dir_id.clone();
                async move { inner.send().execute_unpaged(&inner.st.bucket_add, (id, ks as i32, bucket)).await.map(|_| ()).map_err(engine("adding a bucket")) }
            }))
            .buffer_unordered(PARALLEL_WRITES)
            .try_collect::<()>()
            .await
        })?;
        for group in groups {
            self.keep_alive()?;
            let inner = self.shared.inner();
            let id = id.clone();
            self.shared.cluster.run(async move {
                stream::iter(group.into_iter().map(|(ks, bucket, rows)| {
                    let inner = inner.clone();
                    let id = id.clone();
                    async move {
                        let mut batch = Batch::new(BatchType::Unlogged);
                        batch.set_consistency(inner.settings.consistency);
                        batch.set_is_idempotent(true);
                        let mut values = Vec::with_capacity(rows.len());
                        for (key, value) in rows {
                            batch.append_statement(inner.st.put.clone());
                            values.push((id.clone(), ks, bucket.clone(), key, version, value));
                        }
                        inner.send().batch(&batch, values).await.map(|_| ()).map_err(engine("writing rows"))
                    }
                }))
                .buffer_unordered(PARALLEL_WRITES)
                .try_collect::<()>()
                .await
            })?;
        }
        self.shared.known_buckets.lock().unwrap_or_else(|p| p.into_inner()).extend(new_buckets);
        Ok(())
    }

    /// Gives the lease up, marking this version aborted (some of its rows
    /// may be written); best effort: an expired lease is taken over and
    /// the version aborted by the next writer anyway.
    fn abort(&mut self) {
        if !self.held {
            return;
        }
        self.held = false;
        let inner = self.shared.inner();
        let (store, owner, version) = (self.shared.name.clone(), self.shared.owner.clone(), self.version);
        let _ = self.shared.cluster.run(async move { inner.lwt(&inner.st.abort_release, (vec![version], version + 1, store, owner)).await });
        // The head moved; the next acquire reads it again.
        self.shared.known.lock().unwrap_or_else(|p| p.into_inner()).next = -1;
    }

    /// Publishes this lease's version, whose rows are all written: one
    /// compare-and-set moving the head's `committed` to it. Until then no
    /// snapshot sees them, and a writer that dies before leaves them to
    /// the next writer, which marks the version aborted.
    fn publish(&mut self, release: bool) -> Result<()> {
        // A commit that gives the lease up keeps it instead while this
        // process's turn lasts (`park`): its next transaction then needs
        // no compare-and-set to take it.
        let keep = release && self.shared.keeps(self);
        let release = release && !keep;
        let inner = self.shared.inner();
        let (store, owner, version) = (self.shared.name.clone(), self.shared.owner.clone(), self.version);
        let until = now_ms() + self.shared.lease_ms();
        let committed = self.shared.cluster.run(async move {
            if release {
                inner.lwt(&inner.st.commit_release, (version, version + 1, store, owner)).await
            } else {
                inner.lwt(&inner.st.commit_keep, (version, version + 1, until, store, owner)).await
            }
        });
        match committed {
            Ok(true) => {}
            Ok(false) => {
                // Taken over after expiring: the new holder aborted our version.
                self.held = false;
                self.shared.known.lock().unwrap_or_else(|p| p.into_inner()).next = -1;
                return Err(Error::Engine(format!("cassandra: lost the write lease on {} before committing; nothing was committed", self.shared.name)));
            }
            Err(e) => {
                // The outcome is unknown (a timeout): the next writer reads
                // the head and sees whether this version committed.
                self.held = false;
                self.shared.known.lock().unwrap_or_else(|p| p.into_inner()).next = -1;
                return Err(e);
            }
        }
        self.committed = version;
        self.version = version + 1;
        self.renewed = Instant::now();
        self.held = !release;
        if release {
            *self.shared.turn_ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
        *self.shared.known.lock().unwrap_or_else(|p| p.into_inner()) = Known { committed: version, next: version + 1, aborted: self.aborted.clone() };
        *self.shared.last_own.lock().unwrap_or_else(|p| p.into_inner()) = version;
        if keep {
            self.held = false;
            self.shared.park(self);
        }
        Ok(())
    }
}

impl WriteLease for CassandraLease {
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        Ok(self.shared.snapshot_at(self.committed, self.aborted.clone()))
    }

    fn commit(&mut self, batch: WriteBatch, release: bool) -> Result<()> {
        self.check_held()?;
        if batch.is_empty() {
            if release {
                self.held = false;
                if self.shared.keeps(self) {
                    self.shared.park(self);
                    return Ok(());
                }
                if !self.shared.release_now(true)? {
                    return Err(Error::Engine(format!("cassandra: lost the write lease on {}", self.shared.name)));
                }
                *self.shared.turn_ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            }
            return Ok(());
        }
        if let Err(e) = self.write_rows(batch.ops) {
            self.abort();
            return Err(e);
        }
        self.publish(release)
    }

    /// A big load's rows go in as SSTables (`sstables.rs`, setting `bulk`),
    /// a small one's as a commit's; either way under this lease's version,
    /// published only once every row is in.
    fn ingest(&mut self, runs: Vec<SortedRun>) -> Result<()> {
        self.check_held()?;
        let rows: usize = runs.iter().map(|run| if let SortedRun::Memory { entries, .. } = run { entries.len() } else { 0 }).sum();
        if rows > 0 && self.shared.cluster.inner.settings.bulk.uses_sstables(rows) {
            if let Err(e) = sstables::write_and_stream(self, runs) {
                self.abort();
                return Err(e);
            }
            return self.publish(true);
        }
        sstables::stop_early(&self.shared);
        let mut batch = WriteBatch::default();
        for run in runs {
            match run {
                SortedRun::Memory { ks, entries } => {
                    for (k, v) in entries {
                        batch.ops.push(WriteOp::Put(ks, k, v));
                    }
                }
                SortedRun::Empty => {}
                SortedRun::File { path } => {
                    return Err(Error::Engine(format!("cassandra: cannot ingest the embedded engine's file {}", path.display())));
                }
            }
        }
        self.commit(batch, true)
    }

    fn changed_elsewhere(&self) -> bool {
        self.changed
    }
}

impl Drop for CassandraLease {
    fn drop(&mut self) {
        if self.held {
            // Nothing of this version was written (commits write and
            // commit in one call), so it can be kept or plainly released.
            self.held = false;
            if self.shared.keeps(self) {
                self.shared.park(self);
            } else {
                let _ = self.shared.release_now(true);
                *self.shared.turn_ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            }
        }
    }
}

/// A read view: each key's newest version at or below `committed`, not
/// among `aborted`.
pub(crate) struct CassandraSnapshot {
    shared: Arc<StoreShared>,
    committed: i64,
    aborted: Arc<Vec<i64>>,
}

impl CassandraSnapshot {
    fn visible(&self, version: i64) -> bool {
        version <= self.committed && !self.aborted.contains(&version)
    }
}

impl Snapshot for CassandraSnapshot {}

impl KvRead for CassandraSnapshot {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let inner = self.shared.inner();
        let id = self.shared.id.clone();
        let bucket = bucket_of(ks.0, key).to_vec();
        let key = key.to_vec();
        let committed = self.committed;
        let limit = 1 + self.aborted.len().min(64) as i32;
        let rows: Vec<(i64, Vec<u8>)> = self.shared.cluster.run(async move {
            let result = inner.send().execute_unpaged(&inner.st.get, (id, ks.0 as i32, bucket, key, committed, limit)).await.map_err(engine("reading a key"))?;
            let rows = result.into_rows_result().map_err(engine("reading a key"))?;
            let out: std::result::Result<Vec<(i64, Vec<u8>)>, _> = rows.rows::<(i64, Vec<u8>)>().map_err(engine("reading a key"))?.collect();
            out.map_err(engine("reading a key"))
        })?;
        for (version, value) in rows {
            if self.visible(version) {
                return Ok(match value.first() {
                    Some(1) => Some(value[1..].to_vec()),
                    _ => None,
                });
            }
        }
        Ok(None)
    }

    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        Box::new(cursor::CassandraCursor::new(self, ks, lower, upper))
    }

    fn reads_are_round_trips(&self) -> bool {
        self.shared.cluster.inner.settings.batch_reads
    }

    /// The cursors' first pages in one wait (`cursor::seek_together`).
    fn cursors_sought(&self, seeks: &[CursorSeek<'_>]) -> Vec<Box<dyn Cursor + '_>> {
        if !self.reads_are_round_trips() {
            return super::cursors_sought_one_by_one(self, seeks);
        }
        let mut cursors: Vec<cursor::CassandraCursor<'_>> = seeks.iter().map(|s| cursor::CassandraCursor::new(self, s.ks, s.lower, s.upper)).collect();
        let keys: Vec<&[u8]> = seeks.iter().map(|s| s.at).collect();
        cursor::seek_together(&mut cursors, &keys);
        cursors.into_iter().map(|c| Box::new(c) as Box<dyn Cursor + '_>).collect()
    }

    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let inner = self.shared.inner();
        let id = self.shared.id.clone();
        let committed = self.committed;
        let aborted = self.aborted.clone();
        let limit = 1 + self.aborted.len().min(64) as i32;
        let keys = keys.to_vec();
        self.shared.cluster.run(async move {
            stream::iter(keys.into_iter().map(|key| {
                let (inner, id, aborted) = (inner.clone(), id.clone(), aborted.clone());
                async move {
                    let bucket = bucket_of(ks.0, &key).to_vec();
                    let result = inner.send().execute_unpaged(&inner.st.get, (id, ks.0 as i32, bucket, key, committed, limit)).await.map_err(engine("reading keys"))?;
                    let rows = result.into_rows_result().map_err(engine("reading keys"))?;
                    for row in rows.rows::<(i64, Vec<u8>)>().map_err(engine("reading keys"))? {
                        let (version, value) = row.map_err(engine("reading keys"))?;
                        if version <= committed && !aborted.contains(&version) {
                            return Ok(live_value(value));
                        }
                    }
                    Ok(None)
                }
            }))
            .buffered(PARALLEL_READS)
            .try_collect()
            .await
        })
    }

    /// Every bucket of every range at once: one read of the bucket
    /// directory per range, then each bucket's rows, all sent together.
    fn scan_ranges(&self, ks: Keyspace, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Vec<(Vec<u8>, Vec<u8>)>>> {
        let inner = self.shared.inner();
        let id = self.shared.id.clone();
        let ranges = ranges.to_vec();
        let range_count = ranges.len();
        // The buckets of each range: named from its bounds where the
        // layout allows (ID2TERM's chunks: no wait), else read from the
        // bucket directory (one wait for every such range together).
        let mut range_buckets: Vec<Option<Vec<Vec<u8>>>> =
            ranges.iter().map(|(lower, upper)| if lower >= upper { Some(Vec::new()) } else { buckets::from_bounds(ks.0, lower, upper) }).collect();
        let dir_ranges: Vec<(usize, Vec<u8>, Vec<u8>)> =
            ranges.iter().enumerate().filter(|(i, _)| range_buckets[*i].is_none()).map(|(i, (lower, upper))| (i, lower.clone(), upper.clone())).collect();
        if !dir_ranges.is_empty() {
            let dir_inner = inner.clone();
            let dir_id = id.clone();
            let found: Vec<(usize, Vec<Vec<u8>>)> = self.shared.cluster.run(async move {
                stream::iter(dir_ranges.into_iter().map(|(i, lower, upper)| {
                    let (inner, id) = (dir_inner.clone(), dir_id.clone());
                    async move {
                        let (first, last) = (bucket_of(ks.0, &lower).to_vec(), bucket_of(ks.0, &upper).to_vec());
                        let mut found = Vec::new();
                        let mut rows = inner
                            .send()
                            .execute_iter(inner.st.bucket_range.clone(), (id, ks.0 as i32, first, last))
                            .await
                            .map_err(engine("reading the bucket directory"))?
                            .rows_stream::<(Vec<u8>,)>()
                            .map_err(engine("reading the bucket directory"))?;
                        while let Some((bucket,)) = rows.try_next().await.map_err(engine("reading the bucket directory"))? {
                            found.push(bucket);
                        }
                        Ok::<_, Error>((i, found))
                    }
                }))
                .buffered(PARALLEL_READS)
                .try_collect()
                .await
            })?;
            for (i, bs) in found {
                range_buckets[i] = Some(bs);
            }
        }
        let reads: Vec<(usize, Vec<u8>, Vec<u8>, Vec<u8>)> = range_buckets
            .into_iter()
            .enumerate()
            .flat_map(|(i, bs)| {
                let bs = bs.expect("every range's buckets are named or read");
                let (lower, upper) = ranges[i].clone();
                bs.into_iter().map(move |b| (i, b, lower.clone(), upper.clone()))
            })
            .collect();
        let (committed, aborted) = (self.committed, self.aborted.clone());
        let pages: Vec<(usize, Vec<(Vec<u8>, Vec<u8>)>)> = self.shared.cluster.run(async move {
            stream::iter(reads.into_iter().map(|(i, bucket, lower, upper)| {
                let (inner, id, aborted) = (inner.clone(), id.clone(), aborted.clone());
                async move {
                    let mut rows = inner
                        .send()
                        .execute_iter(inner.st.scan_forward.clone(), (id, ks.0 as i32, bucket, lower, upper, i32::MAX))
                        .await
                        .map_err(engine("scanning"))?
                        .rows_stream::<(Vec<u8>, i64, Vec<u8>)>()
                        .map_err(engine("scanning"))?;
                    // Versions of a key come newest first: the first
                    // visible one is the key's value.
                    let mut entries = Vec::new();
                    let mut decided: Option<Vec<u8>> = None;
                    while let Some((key, version, value)) = rows.try_next().await.map_err(engine("scanning"))? {
                        if decided.as_ref() == Some(&key) || version > committed || aborted.contains(&version) {
                            continue;
                        }
                        if let Some(value) = live_value(value) {
                            entries.push((key.clone(), value));
                        }
                        decided = Some(key);
                    }
                    Ok::<_, Error>((i, entries))
                }
            }))
            .buffered(PARALLEL_READS)
            .try_collect()
            .await
        })?;
        let mut out: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); range_count];
        for (i, entries) in pages {
            out[i].extend(entries);
        }
        Ok(out)
    }
}

/// A stored value: a put's bytes after its marker, or `None` for a delete.
fn live_value(mut value: Vec<u8>) -> Option<Vec<u8>> {
    match value.first() {
        Some(1) => {
            value.remove(0);
            Some(value)
        }
        _ => None,
    }
}
