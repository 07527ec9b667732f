//! The time of one bare single-partition CQL read on a cluster: the floor
//! under every wait a lookup on the Cassandra backend makes (BENCHMARKS.md,
//! "Cassandra backend").
//!
//!     cargo run --release -p rhizome-kv --features cassandra --example cql_read_latency -- HOST[,HOST...] [READS]
//!
//! Writes one small row (RF 3 from three hosts, else 1) into keyspace
//! `rhizome_read_latency`, then reads it back by its full primary key,
//! one read after another, at QUORUM and at ONE, and 64 reads sent
//! together at QUORUM (as `get_many` sends them); prints one JSON line per
//! way with the median, 90th percentile and mean in milliseconds.

use scylla::client::session_builder::SessionBuilder;
use scylla::statement::Consistency;
use std::time::Instant;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let hosts: Vec<String> = args.next().ok_or("usage: cql_read_latency HOST[,HOST...] [READS]")?.split(',').map(|h| format!("{h}:9042")).collect();
    let reads: usize = args.next().map(|n| n.parse()).transpose()?.unwrap_or(2000);
    let session = SessionBuilder::new().known_nodes(&hosts).build().await?;
    let rf = if hosts.len() >= 3 { 3 } else { 1 };
    session
        .query_unpaged(format!("CREATE KEYSPACE IF NOT EXISTS rhizome_read_latency WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"), ())
        .await?;
    session.query_unpaged("CREATE TABLE IF NOT EXISTS rhizome_read_latency.rows (id blob, key blob, value blob, PRIMARY KEY (id, key))", ()).await?;
    session.await_schema_agreement().await?;
    let mut put = session.prepare("INSERT INTO rhizome_read_latency.rows (id, key, value) VALUES (?, ?, ?)").await?;
    put.set_consistency(Consistency::All);
    session.execute_unpaged(&put, (vec![1u8], vec![2u8], vec![3u8; 40])).await?;
    let mut line = Vec::new();
    for (name, consistency) in [("one after another, QUORUM", Consistency::Quorum), ("one after another, ONE", Consistency::One)] {
        let mut get = session.prepare("SELECT value FROM rhizome_read_latency.rows WHERE id = ? AND key = ?").await?;
        get.set_consistency(consistency);
        // Warm the connections, the statement and the nodes' caches.
        for _ in 0..200 {
            session.execute_unpaged(&get, (vec![1u8], vec![2u8])).await?;
        }
        let mut ms = Vec::with_capacity(reads);
        for _ in 0..reads {
            let t = Instant::now();
            session.execute_unpaged(&get, (vec![1u8], vec![2u8])).await?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        line.push(summary(name, ms));
    }
    let mut get = session.prepare("SELECT value FROM rhizome_read_latency.rows WHERE id = ? AND key = ?").await?;
    get.set_consistency(Consistency::Quorum);
    let mut ms = Vec::new();
    for _ in 0..reads / 64 {
        let t = Instant::now();
        futures_util::future::try_join_all((0..64).map(|_| session.execute_unpaged(&get, (vec![1u8], vec![2u8])))).await?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    line.push(summary("64 sent together, QUORUM (per wait)", ms));
    for l in line {
        println!("{l}");
    }
    Ok(())
}

fn summary(name: &str, mut ms: Vec<f64>) -> String {
    ms.sort_by(|a, b| a.total_cmp(b));
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    format!(
        "{{\"reads\": \"{name}\", \"count\": {}, \"median_ms\": {:.3}, \"p90_ms\": {:.3}, \"mean_ms\": {:.3}}}",
        ms.len(),
        ms[ms.len() / 2],
        ms[ms.len() * 9 / 10],
        mean
    )
}
