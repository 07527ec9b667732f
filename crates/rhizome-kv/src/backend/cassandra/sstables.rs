//! The bulk path: a big `ingest` writes its rows as SSTables and streams
//! them into the cluster, as CumulusRDF loaded (issue 47).
//!
//! Why: putting rows through CQL costs the nodes about 0.35 ms of CPU a
//! row at RF 3 (coordinator, commit log, memtable, flush, compaction, on
//! each replica), and a load is hundreds of thousands of rows: seed 000's
//! 97k triples took 81 s, bound by the three nodes' CPU. SSTables written
//! offline with Cassandra's own `CQLSSTableWriter` and streamed to every
//! replica by its bulk loader (what `sstableloader` runs) skip that write
//! path: a node receives whole files.
//!
//! What does not change: the rows are those a commit would write (the
//! `rows` table's layout, `buckets.rs`' partitions, this lease's version,
//! a put's marker byte), new buckets go to the bucket directory the same
//! way, and the version is published by the same compare-and-set once
//! the loader has streamed every file (`CassandraLease::publish`). A
//! process that dies before that leaves rows of a version nobody reads,
//! which the next writer marks aborted, exactly as for a failed commit.
//!
//! How: the tool is Java (`crates/rhizome-kv/java/SSTableLoad.java`, run
//! by `scripts/cassandra-sstables`, which compiles it against Cassandra's
//! class path from Maven). It gets the tables' CREATE and INSERT
//! statements from here (one definition of the schema) and the rows on
//! its standard input as raw column values; it writes the SSTables into a
//! temporary folder and streams them. The lease is renewed while it runs.
//! The command is `RHIZOME_CASSANDRA_SSTABLES`, else this checkout's
//! script.
//!
//! Where a load's seconds went (seed 000's 97k triples, 392,447 rows):
//! the JVM's start and Cassandra's classes about a second, now spent
//! while the loader sorts (the first sorted run starts the tool,
//! `start_early`); the rows' writing 6-7 s on one thread, now split by
//! token range over a writer per core, each streaming its files as soon
//! as it is written (`SSTableLoad.java`).

use super::{buckets, bucket_of, buckets_insert, buckets_table, rows_insert, rows_table, CassandraLease, StoreShared};
use crate::backend::SortedRun;
use crate::{Error, Result};
use std::collections::BTreeSet;
use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The tool's command: `RHIZOME_CASSANDRA_SSTABLES`, else the script of
/// the checkout this binary was built from.
fn tool() -> PathBuf {
    match std::env::var_os("RHIZOME_CASSANDRA_SSTABLES").filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/cassandra-sstables")),
    }
}

/// A temporary folder, removed when dropped.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tool, running and waiting for its input: started by
/// [`start_early`] while the loader still sorts its runs (its JVM takes
/// a second or more to start and load Cassandra's classes, and it reads
/// the ring meanwhile), or by [`write_and_stream`] itself. Dropped
/// unused (an ingest through CQL, a failed load), it is killed and its
/// folder removed; a loader that dies leaves it its input's end, on
/// which it exits without streaming anything.
pub(super) struct StartedTool {
    child: Child,
    stdin: Option<ChildStdin>,
    log_path: PathBuf,
    tool: PathBuf,
    // Declared last: removed after the child is killed (`Drop` below).
    _work: WorkDir,
}

impl Drop for StartedTool {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Starts the tool for the store's cluster and keyspace.
fn start(shared: &StoreShared) -> Result<StartedTool> {
    let settings = &shared.cluster.inner.settings;
    let ks = settings.keyspace.clone();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let work = WorkDir(std::env::temp_dir().join(format!("rhizome-sstables-{}-{nanos}", std::process::id())));
    std::fs::create_dir_all(&work.0).map_err(|e| Error::Engine(format!("cassandra: creating {}: {e}", work.0.display())))?;
    let log_path = work.0.join("tool.log");
    let log = std::fs::File::create(&log_path).map_err(|e| Error::Engine(format!("cassandra: creating {}: {e}", log_path.display())))?;
    let tool = tool();
    let hosts = settings.hosts.join(",");
    let mut child = Command::new(&tool)
        .arg(work.0.join("sstables"))
        .arg(&hosts)
        .args([rows_table(&ks), rows_insert(&ks), buckets_table(&ks), buckets_insert(&ks)])
        .stdin(Stdio::piped())
        .stdout(log.try_clone().map_err(|e| Error::Engine(format!("cassandra: {}: {e}", log_path.display())))?)
        .stderr(log)
        .spawn()
        .map_err(|e| {
            Error::Engine(format!(
                "cassandra: cannot run the SSTable loader {} ({e}): a bulk load into Cassandra writes SSTables with it (it needs Java 17 and Maven); \
                 set RHIZOME_CASSANDRA_SSTABLES to scripts/cassandra-sstables of a Rhizome checkout, or load through CQL (bulk=cql in the store's address)",
                tool.display()
            ))
        })?;
    let stdin = child.stdin.take();
    Ok(StartedTool { child, stdin, log_path, tool, _work: work })
}

/// Starts the tool ahead of a bulk load's ingest, where the store's
/// `bulk` setting may put it through SSTables, unless one is waiting
/// already. Best effort: a tool that cannot start is started again, and
/// its error reported, by the ingest.
pub(super) fn start_early(shared: &StoreShared) {
    if !shared.cluster.inner.settings.bulk.may_use_sstables() {
        return;
    }
    let mut waiting = shared.tool.lock().unwrap_or_else(|p| p.into_inner());
    if waiting.is_none() {
        *waiting = start(shared).ok();
    }
}

/// Drops the tool [`start_early`] started, if any (an ingest through CQL).
pub(super) fn stop_early(shared: &StoreShared) {
    drop(shared.tool.lock().unwrap_or_else(|p| p.into_inner()).take());
}

/// Writes every row of `runs` under the lease's version as SSTables and
/// streams them to the cluster; the caller publishes the version.
pub(super) fn write_and_stream(lease: &mut CassandraLease, runs: Vec<SortedRun>) -> Result<()> {
    let shared = lease.shared.clone();
    let id = shared.id.clone();
    let version = lease.version;
    // The buckets the directory may lack: like a commit, those this
    // process has not written or read.
    let mut new_buckets: BTreeSet<(u8, Vec<u8>)> = BTreeSet::new();
    {
        let known = shared.known_buckets.lock().unwrap_or_else(|p| p.into_inner());
        for run in &runs {
            if let SortedRun::Memory { ks, entries } = run {
                for (key, _) in entries {
                    let bucket = (ks.0, bucket_of(ks.0, key).to_vec());
                    if !known.contains(&bucket) {
                        new_buckets.insert(bucket);
                    }
                }
            }
        }
    }
    for run in &runs {
        if let SortedRun::File { path } = run {
            return Err(Error::Engine(format!("cassandra: cannot ingest the embedded engine's file {}", path.display())));
        }
    }
    // The tool started early if it still runs (it waits for its input);
    // else one started now.
    let early = shared.tool.lock().unwrap_or_else(|p| p.into_inner()).take();
    let mut started = match early.and_then(|mut t| (t.stdin.is_some() && matches!(t.child.try_wait(), Ok(None))).then_some(t)) {
        Some(t) => t,
        None => start(&shared)?,
    };
    let stdin = started.stdin.take().expect("a started tool's input is piped");
    let dir_rows: Vec<(u8, Vec<u8>)> = new_buckets.iter().cloned().collect();
    // Fed from a thread: the tool reads its input only once its JVM is up,
    // and meanwhile this thread renews the lease.
    let feeder = std::thread::spawn(move || feed(stdin, &id, version, &runs, &dir_rows));
    let status = loop {
        match started.child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(Error::Engine(format!("cassandra: waiting for the SSTable loader: {e}"))),
        }
        // An error here drops `started`, which kills the tool.
        lease.keep_alive()?;
        std::thread::sleep(Duration::from_millis(50));
    };
    let fed = feeder.join().unwrap_or_else(|_| Err(std::io::Error::other("the feeding thread panicked")));
    if !status.success() {
        let mut out = String::new();
        let _ = std::fs::File::open(&started.log_path).and_then(|mut f| f.read_to_string(&mut out));
        // The tool's own message first (a stack trace follows it).
        let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('\t')).collect();
        let tail = lines[lines.len().saturating_sub(12)..].join("\n");
        return Err(Error::Engine(format!("cassandra: the SSTable loader {} failed ({status}); nothing was committed:\n{tail}", started.tool.display())));
    }
    fed.map_err(|e| Error::Engine(format!("cassandra: feeding the SSTable loader: {e}")))?;
    shared.known_buckets.lock().unwrap_or_else(|p| p.into_inner()).extend(new_buckets);
    Ok(())
}

/// The tool's input (see `SSTableLoad.java`): each row as its table's
/// number and its columns' values, length-prefixed, then the end mark.
fn feed(stdin: ChildStdin, id: &[u8], version: i64, runs: &[SortedRun], dir_rows: &[(u8, Vec<u8>)]) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, stdin);
    let column = |out: &mut BufWriter<_>, bytes: &[&[u8]]| -> std::io::Result<()> {
        let len: usize = bytes.iter().map(|b| b.len()).sum();
        let len = u32::try_from(len).map_err(|_| std::io::Error::other("a value over 4 GiB"))?;
        out.write_all(&len.to_be_bytes())?;
        for b in bytes {
            out.write_all(b)?;
        }
        Ok(())
    };
    for run in runs {
        let SortedRun::Memory { ks, entries } = run else { continue };
        let ks_bytes = i32::from(ks.0).to_be_bytes();
        for (key, value) in entries {
            debug_assert!(buckets::fixed_key_len(ks.0).is_none_or(|n| n == key.len()), "keyspace {} has keys of fixed length", ks.0);
            out.write_all(&[0])?;
            column(&mut out, &[id])?;
            column(&mut out, &[&ks_bytes])?;
            column(&mut out, &[bucket_of(ks.0, key)])?;
            column(&mut out, &[key])?;
            column(&mut out, &[&version.to_be_bytes()])?;
            // A put's value: the marker byte 1, then its bytes.
            column(&mut out, &[&[1], value])?;
        }
    }
    for (ks, bucket) in dir_rows {
        out.write_all(&[1])?;
        column(&mut out, &[id])?;
        column(&mut out, &[&i32::from(*ks).to_be_bytes()])?;
        column(&mut out, &[bucket])?;
    }
    out.write_all(&[255])?;
    out.flush()
}
