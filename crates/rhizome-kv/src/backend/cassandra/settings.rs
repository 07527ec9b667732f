//! `cassandra://HOST[:PORT][,HOST...]/KEYSPACE[?SETTING=VALUE&...]`.

use crate::{Error, Result};
use scylla::statement::{Consistency, SerialConsistency};

/// How to reach the cluster and how to use it.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub hosts: Vec<String>,
    pub keyspace: String,
    /// Replicas of every row, used when the keyspace is created
    /// (`replication_factor`, default 1 for one node, 3 from three hosts).
    pub replication_factor: u32,
    /// Reads and writes (`consistency`, default `quorum`).
    pub consistency: Consistency,
    /// Reads of a store's head that must see every decided compare-and-set.
    pub serial_read: Consistency,
    /// Compare-and-set (`serial_consistency`, default `serial`).
    pub serial: SerialConsistency,
    /// How long a writer's lease lasts unless renewed (`lease_ms`, default
    /// 10,000): a writer killed mid-commit holds up others this long.
    pub lease_ms: u64,
    /// Whether reads a caller has many of go out together (`get_many`,
    /// `scan_ranges`, a forward scan's read-ahead); `batch_reads=off`
    /// reads one after another, for comparisons (default on).
    pub batch_reads: bool,
    /// How long a writer keeps the lease after a commit for its own next
    /// transaction (`hold_ms`, default 25; 0 gives it up at every commit):
    /// a process writing back to back then pays one compare-and-set per
    /// transaction instead of two, and others wait at most this long once
    /// it is idle.
    pub hold_ms: u64,
    /// The longest a writer keeps the lease across transactions before it
    /// gives it up and lets others take a turn (`turn_ms`, default 250).
    pub turn_ms: u64,
    /// How a bulk load (`ingest`) writes its rows (`bulk`, default
    /// `auto`): `sstable` writes them as SSTables and streams them in
    /// (`sstables.rs`), `cql` puts them row by row, `auto` takes SSTables
    /// from [`Bulk::AUTO_MIN_ROWS`] rows.
    pub bulk: Bulk,
}

/// The path a bulk load's rows take (`bulk=auto|sstable|cql`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bulk {
    Auto,
    SSTables,
    Cql,
}

impl Bulk {
    /// Rows from which `auto` writes SSTables. Below, the tool's fixed cost
    /// (a JVM started, Cassandra's classes loaded, one streaming session per
    /// table: 5-10 s of CPU) is more than the nodes spend putting the rows
    /// through CQL (about 0.35 ms of the three nodes' CPU a row at RF 3).
    pub const AUTO_MIN_ROWS: usize = 50_000;

    /// Whether some load may go in as SSTables (the tool is then started
    /// ahead of a big load's ingest, `sstables::start_early`).
    pub fn may_use_sstables(self) -> bool {
        self != Bulk::Cql
    }

    /// Whether `rows` rows go in as SSTables.
    pub fn uses_sstables(self, rows: usize) -> bool {
        match self {
            Bulk::Auto => rows >= Self::AUTO_MIN_ROWS,
            Bulk::SSTables => true,
            Bulk::Cql => false,
        }
    }
}

const DEFAULT_PORT: u16 = 9042;

impl Settings {
    pub fn parse(url: &str) -> Result<Settings> {
        let bad = |why: &str| Error::Engine(format!("--store {url}: {why} (expected cassandra://HOST[:PORT][,HOST...]/KEYSPACE[?replication_factor=N&consistency=quorum&serial_consistency=serial&lease_ms=N&hold_ms=N&turn_ms=N&batch_reads=on&bulk=auto|sstable|cql])"));
        let rest = url.strip_prefix("cassandra://").ok_or_else(|| bad("not a cassandra:// address"))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (hosts, keyspace) = rest.split_once('/').ok_or_else(|| bad("no keyspace"))?;
        if keyspace.is_empty() || keyspace.len() > 48 || !keyspace.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || !keyspace.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(bad("a keyspace is a letter then up to 47 letters, digits or _"));
        }
        let hosts: Vec<String> = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(|h| if h.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) { h.to_owned() } else { format!("{h}:{DEFAULT_PORT}") })
            .collect();
        if hosts.is_empty() {
            return Err(bad("no host"));
        }
        let mut settings = Settings {
            replication_factor: if hosts.len() >= 3 { 3 } else { 1 },
            hosts,
            keyspace: keyspace.to_owned(),
            consistency: Consistency::Quorum,
            serial_read: Consistency::Serial,
            serial: SerialConsistency::Serial,
            lease_ms: 10_000,
            batch_reads: true,
            hold_ms: 25,
            turn_ms: 250,
            bulk: Bulk::Auto,
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').ok_or_else(|| bad(&format!("setting {pair} has no value")))?;
            match name {
                "replication_factor" => settings.replication_factor = value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| bad("replication_factor is a number from 1"))?,
                "consistency" => {
                    settings.consistency = match value.to_ascii_lowercase().as_str() {
                        "one" => Consistency::One,
                        "quorum" => Consistency::Quorum,
                        "local_quorum" => Consistency::LocalQuorum,
                        "all" => Consistency::All,
                        _ => return Err(bad("consistency is one, quorum, local_quorum or all")),
                    }
                }
                "serial_consistency" => {
                    (settings.serial, settings.serial_read) = match value.to_ascii_lowercase().as_str() {
                        "serial" => (SerialConsistency::Serial, Consistency::Serial),
                        "local_serial" => (SerialConsistency::LocalSerial, Consistency::LocalSerial),
                        _ => return Err(bad("serial_consistency is serial or local_serial")),
                    }
                }
                "lease_ms" => settings.lease_ms = value.parse().ok().filter(|n| *n >= 100).ok_or_else(|| bad("lease_ms is a number from 100"))?,
                "hold_ms" => settings.hold_ms = value.parse().map_err(|_| bad("hold_ms is a number of milliseconds"))?,
                "turn_ms" => settings.turn_ms = value.parse().map_err(|_| bad("turn_ms is a number of milliseconds"))?,
                "batch_reads" => {
                    settings.batch_reads = match value {
                        "on" => true,
                        "off" => false,
                        _ => return Err(bad("batch_reads is on or off")),
                    }
                }
                "bulk" => {
                    settings.bulk = match value {
                        "auto" => Bulk::Auto,
                        "sstable" => Bulk::SSTables,
                        "cql" => Bulk::Cql,
                        _ => return Err(bad("bulk is auto, sstable or cql")),
                    }
                }
                other => return Err(bad(&format!("unknown setting {other}"))),
            }
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_with_defaults_and_settings() {
        let s = Settings::parse("cassandra://127.0.0.1/rz").unwrap();
        assert_eq!(s.hosts, vec!["127.0.0.1:9042"]);
        assert_eq!(s.keyspace, "rz");
        assert_eq!(s.replication_factor, 1);
        assert_eq!(s.consistency, Consistency::Quorum);
        let s = Settings::parse("cassandra://127.0.0.1:9142,127.0.0.2,127.0.0.3/rz?consistency=all&lease_ms=500").unwrap();
        assert_eq!(s.hosts, vec!["127.0.0.1:9142", "127.0.0.2:9042", "127.0.0.3:9042"]);
        assert_eq!(s.replication_factor, 3);
        assert_eq!(s.consistency, Consistency::All);
        assert_eq!(s.lease_ms, 500);
        assert!(s.batch_reads);
        assert!(!Settings::parse("cassandra://h/ks?batch_reads=off").unwrap().batch_reads);
        assert_eq!((s.hold_ms, s.turn_ms), (25, 250));
        let s = Settings::parse("cassandra://h/ks?hold_ms=0&turn_ms=1000").unwrap();
        assert_eq!((s.hold_ms, s.turn_ms), (0, 1000));
        assert_eq!(s.bulk, Bulk::Auto);
        assert!(s.bulk.uses_sstables(Bulk::AUTO_MIN_ROWS) && !s.bulk.uses_sstables(Bulk::AUTO_MIN_ROWS - 1));
        assert_eq!(Settings::parse("cassandra://h/ks?bulk=sstable").unwrap().bulk, Bulk::SSTables);
        assert!(!Settings::parse("cassandra://h/ks?bulk=cql").unwrap().bulk.uses_sstables(usize::MAX));
        for bad in ["cassandra://h/ks?bulk=fast", "cassandra://h", "cassandra:///ks", "cassandra://h/1ks", "cassandra://h/ks?x=1", "cassandra://h/ks?consistency=two", "cassandra://h/ks?batch_reads=1", "cassandra://h/ks?hold_ms=-1", "http://h/ks"] {
            assert!(Settings::parse(bad).is_err(), "{bad}");
        }
    }
}
