//! Segment files (`rhizome_rdf::segment`) from untrusted bytes.
//!
//! First byte even: the rest is a file; opening, checking and reading it
//! never panics, whatever it holds. First byte odd: the rest makes keys
//! (6 bytes each, up to the first 0xFF byte), written as a valid file of
//! 3 or 4 columns (its bit 2 set: few distinct leading pairs, so the last
//! column rises within long runs, as POS's subjects, and is `delta`
//! encoded; bit 3: in format 1), and then changed at the places the bytes after the
//! 0xFF name (two bytes of position, one of XOR each): reading it is an
//! error, or gives back exactly the keys written (never another key).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rhizome_rdf::segment::{Segment, SegmentWriter, MAX_COLUMNS};
use std::path::Path;

fn read_all(segment: &Segment) -> rhizome_rdf::Result<Vec<[u64; MAX_COLUMNS]>> {
    let mut out = Vec::new();
    let mut c = segment.cursor();
    c.seek_first()?;
    while c.valid() {
        out.push(c.key());
        c.next()?;
    }
    Ok(out)
}

fn key_of(b: &[u8], columns: usize, long_runs: bool) -> [u64; MAX_COLUMNS] {
    let mut k = [0u64; MAX_COLUMNS];
    k[0] = 0x0200_0000_0000_0000 | u64::from(b[0]) << 8 | u64::from(b[1]);
    k[1] = 0x0200_0000_0000_0000 | u64::from(b[2] & 0x3F);
    if long_runs {
        k[0] = 0x0200_0000_0000_0000 | u64::from(b[0] & 3);
        k[1] = 0x0200_0000_0000_0000 | u64::from(b[2] & 1);
    }
    // Objects of several kinds (top bytes), some near each other.
    k[2] = u64::from(b[3] >> 4) << 56 | u64::from(b[3] & 0x0F) << 40 | u64::from(b[4]) << 8 | u64::from(b[5]);
    if columns == 4 {
        k[3] = 0x0200_0000_0000_0000 | u64::from(b[2] >> 6);
    }
    k
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let name = Path::new("fuzzed");
    if mode % 2 == 0 {
        if let Ok(segment) = Segment::from_bytes(rest, name) {
            let _ = segment.verify();
            let _ = read_all(&segment);
            let mut c = segment.cursor();
            for t in rest.chunks_exact(8).take(64) {
                let target = u64::from_le_bytes(t.try_into().unwrap());
                if c.seek(&[target]).is_ok() && c.valid() {
                    let _ = c.key();
                    let _ = c.next();
                }
            }
        }
        return;
    }
    let columns = if mode & 2 == 0 { 3 } else { 4 };
    let split = rest.iter().position(|b| *b == 0xFF).unwrap_or(rest.len());
    let long_runs = mode & 4 != 0;
    let mut keys: Vec<[u64; MAX_COLUMNS]> = rest[..split].chunks_exact(6).map(|b| key_of(b, columns, long_runs)).collect();
    // Repeated to pass a block now and then.
    let copies = usize::from(mode >> 4) * 80;
    for i in 0..copies.min(keys.len() * 80) {
        let mut k = keys[i % keys.len()];
        if long_runs {
            k[2] += 3 * i as u64 + 1;
        } else {
            k[1] += 0x40 + i as u64;
        }
        keys.push(k);
    }
    keys.sort_unstable();
    keys.dedup();
    let mut w = if mode & 8 != 0 { SegmentWriter::in_memory_of_format(columns, 1) } else { SegmentWriter::in_memory(columns) };
    for k in &keys {
        w.push(&k[..columns]).unwrap();
    }
    let mut bytes = w.finish_in_memory();
    for change in rest.get(split + 1..).unwrap_or(&[]).chunks_exact(3) {
        let at = usize::from(u16::from_le_bytes([change[0], change[1]])) % bytes.len();
        bytes[at] ^= change[2];
    }
    match Segment::from_bytes(&bytes, name).and_then(|s| read_all(&s)) {
        Ok(read) => assert_eq!(read, keys, "a changed file read back other keys"),
        Err(rhizome_rdf::Error::Corrupt(_)) | Err(rhizome_rdf::Error::Invalid(_)) => {}
        Err(e) => panic!("unexpected error: {e}"),
    }
});
