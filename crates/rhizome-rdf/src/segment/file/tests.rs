use super::*;
use std::collections::BTreeSet;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Keys shaped like an ordering's: a leading id repeating a few times,
/// small predicate ids, objects mixing dictionary ids and inlined values.
fn keys(n: usize, columns: usize, seed: u64) -> Vec<[u64; MAX_COLUMNS]> {
    keys_spread(n, columns, seed, 5)
}

/// As [`keys`], about `per_lead` keys per leading id (1: nearly all
/// distinct, as an OSP ordering's objects, and the leading column is not
/// run-length encoded; mixed tags make it clustered).
fn keys_spread(n: usize, columns: usize, seed: u64, per_lead: u64) -> Vec<[u64; MAX_COLUMNS]> {
    let mut x = seed | 1;
    let mut set = BTreeSet::new();
    while set.len() < n {
        let mut k = [0u64; MAX_COLUMNS];
        k[0] = if per_lead == 1 && xorshift(&mut x) % 4 == 0 { 0x0700_0000_0000_0000 | xorshift(&mut x) >> 24 } else { 0x0200_0000_0000_0000 + xorshift(&mut x) % (n as u64 * 10 / per_lead + 1) };
        k[1] = 0x0200_0000_0000_0000 + xorshift(&mut x) % 40;
        k[2] = if xorshift(&mut x) % 10 == 0 { 0x0700_0000_0000_0000 | xorshift(&mut x) >> 20 } else { 0x0200_0000_0000_0000 + xorshift(&mut x) % 1_000_000 };
        if columns == 4 {
            k[3] = 0x0200_0000_0000_0000 + xorshift(&mut x) % 7;
        }
        set.insert(k);
    }
    set.into_iter().collect()
}

fn write(dir: &Path, name: &str, keys: &[[u64; MAX_COLUMNS]], columns: usize) -> PathBuf {
    let path = dir.join(name);
    let mut w = SegmentWriter::create(&path, columns).unwrap();
    for k in keys {
        w.push(&k[..columns]).unwrap();
    }
    assert_eq!(w.rows(), keys.len() as u64);
    w.finish().unwrap();
    path
}

fn scan(segment: &Segment) -> Result<Vec<[u64; MAX_COLUMNS]>> {
    let mut out = Vec::new();
    let mut c = segment.cursor();
    c.seek_first()?;
    while c.valid() {
        out.push(c.key());
        c.next()?;
    }
    Ok(out)
}

#[test]
fn keys_read_back_in_order_and_every_seek_finds_the_first_key_at_or_after_its_target() {
    let dir = tempfile::tempdir().unwrap();
    for (n, columns, per_lead) in [(0, 3, 5), (1, 3, 5), (1023, 3, 5), (1024, 4, 5), (1025, 3, 5), (7000, 3, 5), (5000, 4, 5), (6000, 3, 1), (3000, 4, 1)] {
        let keys = keys_spread(n, columns, n as u64 + 7, per_lead);
        let segment = Segment::open(&write(dir.path(), &format!("s-{n}-{columns}-{per_lead}"), &keys, columns)).unwrap();
        if per_lead == 1 {
            let leading: Vec<&str> = segment.encoding_summary().unwrap().iter().filter(|e| e.0 == 0).map(|e| e.1).collect();
            assert!(leading.iter().all(|k| *k != "runs"), "leading column {leading:?}");
        }
        assert_eq!(segment.rows(), n as u64);
        assert_eq!(scan(&segment).unwrap(), keys);
        segment.verify().unwrap();
        let set: BTreeSet<[u64; MAX_COLUMNS]> = keys.iter().copied().collect();
        let mut x = 99;
        let mut cursor = segment.cursor();
        for i in 0..2000 {
            // Targets: stored keys, their prefixes, and keys near them.
            let mut target = if keys.is_empty() { [0; MAX_COLUMNS] } else { keys[xorshift(&mut x) as usize % keys.len()] };
            let len = 1 + (xorshift(&mut x) as usize % columns);
            if i % 3 == 0 {
                target[len - 1] = target[len - 1].wrapping_add(xorshift(&mut x) % 3).wrapping_sub(1);
            }
            let mut lower = [0u64; MAX_COLUMNS];
            lower[..len].copy_from_slice(&target[..len]);
            let expected = set.range(lower..).next().copied();
            // The keys starting with the target, counted from the blocks.
            let starting = keys.iter().filter(|k| k[..len] == target[..len]).count();
            assert_eq!(segment.count_prefix(&target[..len]).unwrap(), starting as u64, "n {n}, count of {:x?}", &target[..len]);
            // Seeks from wherever the cursor was, as reused scans do.
            cursor.seek(&target[..len]).unwrap();
            assert_eq!(cursor.valid().then(|| cursor.key()), expected, "n {n}, target {:x?}", &target[..len]);
            if cursor.valid() {
                // Step a little: the next key is the next one.
                let at = cursor.key();
                cursor.next().unwrap();
                assert_eq!(cursor.valid().then(|| cursor.key()), set.range((std::ops::Bound::Excluded(at), std::ops::Bound::Unbounded)).next().copied());
            }
        }
        for k in keys.iter().step_by(97) {
            assert!(segment.contains(&k[..columns]).unwrap());
        }
    }
}

/// Counts of prefixes whose keys run over several blocks (a predicate's
/// thousands of quads), end at a block's last row, or sit before every
/// key and after the last, against the keys themselves.
#[test]
fn a_prefix_count_spans_blocks_from_the_fences() {
    let dir = tempfile::tempdir().unwrap();
    let mut keys = Vec::new();
    for lead in 0..12u64 {
        // 0, 1, 2, ... 3,300 keys under a leading id: within one block, to
        // its very end, and over up to four blocks.
        let n = [0, 1, 2, 1023, 1024, 1025, 2048, 3300, 5, 700, 1500, 64][lead as usize];
        for i in 0..n {
            keys.push([10 + lead * 2, 5 + i / 300, 1000 + i, 0]);
        }
    }
    let segment = Segment::open(&write(dir.path(), "spans", &keys, 3)).unwrap();
    let mut targets: Vec<Vec<u64>> = vec![vec![], vec![0], vec![u64::MAX], vec![9], vec![u64::MAX, u64::MAX]];
    for lead in 8..36u64 {
        targets.push(vec![lead]);
        for second in 4..17u64 {
            targets.push(vec![lead, second]);
            targets.push(vec![lead, second, 1000 + (second - 5) * 300]);
        }
    }
    for target in targets {
        let want = keys.iter().filter(|k| k[..target.len()] == target[..]).count() as u64;
        assert_eq!(segment.count_prefix(&target).unwrap(), want, "count of {target:?}");
    }
}

/// One cursor reused for lookups, as a pattern's scan is: each seeks a
/// prefix and reads the keys starting with it. Lookups in key order land in
/// the block the last one read (decoded in windows, then whole once read
/// past the windows' share) or the next one; random ones jump back before
/// it. Every lookup reads exactly the model's keys, absent prefixes none.
#[test]
fn a_cursor_reused_across_lookups_reads_each_lookups_keys() {
    let dir = tempfile::tempdir().unwrap();
    for (columns, per_lead) in [(3, 5), (4, 5), (3, 1), (4, 40)] {
        let keys = keys_spread(5000, columns, 11 + per_lead, per_lead);
        let segment = Segment::open(&write(dir.path(), &format!("r-{columns}-{per_lead}"), &keys, columns)).unwrap();
        let lookup = |cursor: &mut SegmentCursor<'_>, prefix: &[u64]| {
            cursor.seek(prefix).unwrap();
            let mut out = Vec::new();
            while cursor.valid() && cursor.key()[..prefix.len()] == *prefix {
                out.push(cursor.key());
                cursor.next().unwrap();
            }
            out
        };
        let model = |prefix: &[u64]| keys.iter().filter(|k| k[..prefix.len()] == *prefix).copied().collect::<Vec<_>>();
        let mut cursor = segment.cursor();
        let mut x = 5;
        let mut targets: Vec<usize> = (0..keys.len()).step_by(3).collect();
        targets.extend((0..400).map(|_| xorshift(&mut x) as usize % keys.len()));
        for (i, at) in targets.into_iter().enumerate() {
            let len = 1 + i % columns;
            let mut prefix = keys[at][..len].to_vec();
            assert_eq!(lookup(&mut cursor, &prefix), model(&prefix), "{columns} columns, prefix {prefix:x?}");
            // A prefix just past it (absent, or another key's).
            prefix[len - 1] += 1;
            assert_eq!(lookup(&mut cursor, &prefix), model(&prefix), "{columns} columns, prefix {prefix:x?}");
        }
    }
}

#[test]
fn sorted_columns_take_a_few_bytes_per_key() {
    // A POS-like ordering: one predicate, objects rising, subjects random.
    let dir = tempfile::tempdir().unwrap();
    let mut x = 5;
    let mut keys: Vec<[u64; MAX_COLUMNS]> = (0..100_000u64)
        .map(|i| [0x0200_0000_0000_0010, 0x0200_0000_0000_0000 + i * 3, 0x0200_0000_0000_0000 + xorshift(&mut x) % 500_000, 0])
        .collect();
    keys.sort_unstable();
    let segment = Segment::open(&write(dir.path(), "pos", &keys, 3)).unwrap();
    let per_key = segment.bytes() as f64 / keys.len() as f64;
    // Objects: deltas in an 11-bit frame; subjects: 19 bits.
    assert!(per_key < 4.5, "{per_key} bytes per key");
    assert_eq!(scan(&segment).unwrap(), keys);
}

/// Every bit of a small file flipped in turn: the file is refused when
/// opened, or a read of it fails, or it reads back exactly as written
/// (never a crash, never another key).
#[test]
fn a_flipped_bit_anywhere_is_an_error_or_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys(2100, 3, 3);
    let bytes = std::fs::read(write(dir.path(), "small", &keys, 3)).unwrap();
    let name = Path::new("flipped");
    let mut unchanged = 0;
    for bit in (0..bytes.len() * 8).step_by(7) {
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        let read = Segment::from_bytes(&b, name).and_then(|s| scan(&s));
        match read {
            Err(Error::Corrupt(_)) | Err(Error::Invalid(_)) => {}
            Err(e) => panic!("bit {bit}: unexpected error {e}"),
            Ok(read) => {
                assert_eq!(read, keys, "bit {bit} changed the keys");
                unchanged += 1;
            }
        }
    }
    // Only the footer's copy of the block count... nothing is unchecked:
    // every word is covered by a checksum or a check.
    assert_eq!(unchanged, 0);
    // Cut short anywhere: refused.
    for len in (0..bytes.len()).step_by(61) {
        assert!(Segment::from_bytes(&bytes[..len], name).and_then(|s| scan(&s)).is_err(), "cut at {len}");
    }
}

#[test]
fn a_segment_written_in_memory_is_the_file_written_to_disk() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys(3000, 4, 11);
    let on_disk = std::fs::read(write(dir.path(), "d", &keys, 4)).unwrap();
    let mut w = SegmentWriter::in_memory(4);
    for k in &keys {
        w.push(k).unwrap();
    }
    assert_eq!(w.finish_in_memory(), on_disk);
}

#[test]
fn another_format_version_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(write(dir.path(), "v", &keys(10, 3, 1), 3)).unwrap();
    bytes[8] = FORMAT_VERSION as u8 + 1;
    let err = Segment::from_bytes(&bytes, Path::new("v-next")).err().expect("refused");
    assert!(err.to_string().contains(&format!("format {}", FORMAT_VERSION + 1)), "{err}");
}

/// A segment file of format 1, as builds before `DELTA` wrote it (an SPO
/// segment of `bench/gen-faculty 10k`, written by the build at 0bfa093).
/// It reads and checks; this build's format 1 path writes the same bytes
/// from its keys (so that path is the earlier build's); its blocks copy
/// into a file of format 2 (a merge of an old segment), and a block of
/// format 2 into a file of 1 is written again in 1's kinds; the same
/// quads as POS keys take fewer bytes in format 2 (`DELTA` subjects).
#[test]
fn a_file_of_format_1_reads_as_written_and_its_blocks_copy_into_format_2() {
    let bytes = include_bytes!("../../../tests/data/segment-format-1-spo.seg");
    let old = Segment::from_bytes(bytes, Path::new("format-1")).unwrap();
    assert_eq!(old.format_version(), 1);
    old.verify().unwrap();
    let keys = scan(&old).unwrap();
    assert_eq!(keys.len() as u64, old.rows());
    assert!(keys.len() > 10_000, "{} keys", keys.len());
    let written = |mut w: SegmentWriter, keys: &[[u64; MAX_COLUMNS]]| {
        for k in keys {
            w.push(&k[..3]).unwrap();
        }
        w.finish_in_memory()
    };
    assert!(written(SegmentWriter::in_memory_of_format(3, 1), &keys) == bytes[..], "this build's format 1 is the earlier build's");
    let mut w = SegmentWriter::in_memory(3);
    for b in 0..old.blocks() {
        w.copy_block(&old, b).unwrap();
    }
    let copied = Segment::from_bytes(&w.finish_in_memory(), Path::new("copied")).unwrap();
    assert_eq!(copied.format_version(), FORMAT_VERSION);
    copied.verify().unwrap();
    assert_eq!(scan(&copied).unwrap(), keys);

    let mut pos: Vec<[u64; MAX_COLUMNS]> = keys.iter().map(|k| [k[1], k[2], k[0], 0]).collect();
    pos.sort_unstable();
    let pos_1 = Segment::from_bytes(&written(SegmentWriter::in_memory_of_format(3, 1), &pos), Path::new("pos-1")).unwrap();
    let pos_2 = Segment::from_bytes(&written(SegmentWriter::in_memory(3), &pos), Path::new("pos-2")).unwrap();
    pos_2.verify().unwrap();
    assert_eq!(scan(&pos_2).unwrap(), pos);
    assert!(pos_2.encoding_summary().unwrap().iter().any(|e| e.0 == 2 && e.1 == "delta"));
    assert!(pos_2.bytes() < pos_1.bytes(), "{} bytes against {}", pos_2.bytes(), pos_1.bytes());
    let mut w = SegmentWriter::in_memory_of_format(3, 1);
    for b in 0..pos_2.blocks() {
        w.copy_block(&pos_2, b).unwrap();
    }
    let back = Segment::from_bytes(&w.finish_in_memory(), Path::new("back")).unwrap();
    assert_eq!(back.format_version(), 1);
    assert_eq!(scan(&back).unwrap(), pos);
    assert!(back.encoding_summary().unwrap().iter().all(|e| e.1 != "delta"));
}

/// The first read's order check finds a row not above the one before it
/// whichever column tells them apart, equal rows included.
#[test]
fn the_order_check_finds_the_first_row_not_above_its_predecessor() {
    let mut columns = [[0u64; BLOCK_ROWS]; 3];
    for r in 0..10 {
        columns[0][r] = 7;
        columns[1][r] = r as u64 / 4;
        columns[2][r] = r as u64 % 4;
    }
    assert_eq!(first_unordered_row(&columns, 10), None);
    assert_eq!(first_unordered_row(&columns[..2], 10), Some(1), "rows 0 and 1 equal in the first two columns");
    columns[2][6] = 0;
    columns[2][5] = 0;
    assert_eq!(first_unordered_row(&columns, 10), Some(5));
    columns[0][8] = 6;
    assert_eq!(first_unordered_row(&columns[..1], 10), Some(1));
    assert_eq!(first_unordered_row(&columns, 5), None);
}
