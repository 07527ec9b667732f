//! Databases are cheap by the hundred (issue 44, point 7): a database
//! preallocates nothing that scales with the count, idle ones are closed
//! past `--max-open-databases` (and their files, memory and descriptors
//! given back), a closed database opens again on its next request with
//! everything it held, DELETE frees its disk, and a server killed while
//! hundreds of databases were being written loses no answered write.
//!
//! The budgets asserted are the documented ones (README, "Limits"): per
//! open database at most 8 file descriptors, 1.5 MiB of disk and 1 MiB of
//! memory; per closed one 256 KiB of disk.

mod common;

use common::process::{allocated_bytes, open_fds, rss_bytes};
use common::server::{ServerProcess, ADMIN};

const DATABASES: usize = 300;
const MAX_OPEN: usize = 40;
const MIB: u64 = 1 << 20;

#[test]
fn hundreds_of_databases_stay_within_their_budget_and_survive_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let max_open = MAX_OPEN.to_string();
    let mut server = ServerProcess::start_with_env(&data, &[("RHIZOME_MAX_OPEN_DATABASES", &max_open)]);
    let pid = server.child.id();
    let (fds0, disk0, rss0) = (open_fds(pid), allocated_bytes(&data), rss_bytes(pid));
    let within_budget = |created: usize| {
        let open = created.min(MAX_OPEN) as u64;
        let closed = created as u64 - open;
        let (fds, disk, rss) = (open_fds(pid), allocated_bytes(&data), rss_bytes(pid));
        assert!(fds <= fds0 + 8 * MAX_OPEN, "{fds} descriptors open with {created} databases (at start {fds0})");
        let disk_budget = disk0 + open * 3 * MIB / 2 + closed * MIB / 4;
        assert!(disk <= disk_budget, "{disk} bytes of disk with {created} databases, over the budget of {disk_budget}");
        let rss_budget = rss0 + open * MIB + 16 * MIB;
        assert!(rss <= rss_budget, "{rss} bytes resident with {created} databases, over the budget of {rss_budget}");
    };
    for i in 0..DATABASES {
        assert_eq!(server.request("PUT", &format!("/db{i}"), Some(ADMIN), None).0, 201);
        let (status, body) = server.request("PUT", &format!("/db{i}/doc"), Some(ADMIN), Some(&format!(r#"{{"n": {i}}}"#)));
        assert_eq!(status, 201, "{body}");
        // Checked as they are made: a server that preallocates per
        // database fails after a few, not after gigabytes.
        if i % 10 == 9 {
            within_budget(i + 1);
        }
    }
    // Every database answers, the closed ones opened again on demand.
    for i in (0..DATABASES).step_by(7) {
        let (status, body) = server.request("GET", &format!("/db{i}/doc"), Some(ADMIN), None);
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&format!(r#""n":{i}"#)), "{body}");
    }
    within_budget(DATABASES);

    // Killed without warning: every answered write is there after a
    // restart, in the databases open at the time and in the closed ones.
    server.restart();
    for i in 0..DATABASES {
        let (status, body) = server.request("GET", &format!("/db{i}/doc"), Some(ADMIN), None);
        assert_eq!(status, 200, "db{i}: {body}");
        assert!(body.contains(&format!(r#""n":{i}"#)), "db{i}: {body}");
    }

    // DELETE gives the disk back.
    for i in 0..DATABASES {
        assert_eq!(server.request("DELETE", &format!("/db{i}"), Some(ADMIN), None).0, 200);
    }
    let disk = allocated_bytes(&data);
    assert!(disk <= disk0 + 4 * MIB, "{disk} bytes of disk after deleting every database (at start {disk0})");
    assert_eq!(server.request("GET", "/_all_dbs", Some(ADMIN), None).1.trim(), r#"["_replicator","_users"]"#);
}
