//! `rhizome check` from outside: a sound store passes with a report of its
//! segments (their bytes per column and encoding) and orderings; a segment file with one byte changed inside a
//! block fails the check with the file and the block named, and queries
//! that reach that block answer an error, never wrong quads.

mod common;

use common::{output_ok, run, stderr, stdout};
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// `rhizome` on the segmented layout whatever the environment says: the
/// test is about segment files (`RHIZOME_INDEXES=keys` runs of the suite
/// would otherwise make a store without any).
fn rhizome(data: &Path) -> Command {
    let mut c = common::rhizome(data);
    c.env_remove("RHIZOME_INDEXES");
    c
}

#[test]
fn check_passes_a_sound_store_and_names_a_damaged_block() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let file = dir.path().join("data.nt");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
        // Enough rows for several blocks of 1,024 in each ordering.
        for i in 0..5000 {
            if i % 9 == 0 {
                // Two objects shared by many subjects: POS's subjects
                // within them rise by a few ids (a `delta` column).
                writeln!(w, "<http://check.example/s{}> <http://check.example/p0> <http://check.example/C{}> .", i / 4, i % 2).unwrap();
            } else {
                writeln!(w, "<http://check.example/s{}> <http://check.example/p{}> \"value {i}\" .", i / 4, i % 9).unwrap();
            }
        }
    }
    output_ok(rhizome(&data).args(["load", "--quiet"]).arg(&file));
    // A load this small goes through the delta; compacting merges it
    // into segments.
    let report: serde_json::Value = serde_json::from_str(&output_ok(rhizome(&data).arg("check"))).expect("a JSON report");
    assert_eq!(report["sound"], serde_json::Value::Bool(true), "{report}");
    assert_eq!(report["delta_quads"].as_u64(), Some(5000), "{report}");
    output_ok(rhizome(&data).arg("compact"));
    let report: serde_json::Value = serde_json::from_str(&output_ok(rhizome(&data).arg("check"))).expect("a JSON report");
    assert_eq!(report["sound"], serde_json::Value::Bool(true), "{report}");
    let orderings = report["orderings"].as_array().expect("orderings");
    for name in ["SPO", "POS", "OSP"] {
        let o = orderings.iter().find(|o| o["ordering"] == name).unwrap_or_else(|| panic!("{name} in {report}"));
        assert_eq!(o["quads"].as_u64(), Some(5000), "{name}");
    }
    assert!(report["segments"].as_array().is_some_and(|s| s.len() == 3), "three segments: {report}");
    // Where the bytes are, per ordering, column and encoding.
    let columns = report["segment_columns"].as_array().expect("segment columns");
    for name in ["SPO", "POS", "OSP"] {
        let blocks: u64 = columns.iter().filter(|c| c["ordering"] == name && c["column"] == 0).map(|c| c["blocks"].as_u64().unwrap()).sum();
        assert_eq!(blocks, 5, "{name}: 5,000 keys in blocks of 1,024");
    }
    assert!(columns.iter().any(|c| c["ordering"] == "POS" && c["column"] == 2 && c["kind"] == "delta"), "subjects as steps in POS: {report}");

    // One byte changed in the middle of the SPO file: inside a block, not
    // the header, index or footer.
    let spo = std::fs::read_dir(data.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("SPO-"))
        .expect("an SPO segment");
    let mut bytes = std::fs::read(&spo).unwrap();
    let middle = bytes.len() / 3;
    bytes[middle] ^= 0x5a;
    std::fs::write(&spo, &bytes).unwrap();

    let checked = run(rhizome(&data).arg("check"));
    assert!(!checked.status.success(), "a damaged segment passed the check");
    let out = stdout(&checked);
    let report: serde_json::Value = serde_json::from_str(&out).expect("a JSON report");
    assert_eq!(report["sound"], serde_json::Value::Bool(false));
    let problems = report["problems"].to_string();
    assert!(problems.contains("SPO-") && problems.contains("block") && problems.contains("checksum"), "the problem names the file, the block and why: {problems}");
    assert!(stderr(&checked).contains("failed the check"), "{}", stderr(&checked));

    // A full scan reads every block of SPO: an error, never wrong quads.
    let scanned = run(rhizome(&data).arg("quads"));
    assert!(!scanned.status.success(), "a scan over a damaged block succeeded");
    assert!(stderr(&scanned).contains("checksum"), "{}", stderr(&scanned));
}
