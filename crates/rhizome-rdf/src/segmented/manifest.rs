//! The segment set, as one value under [`super::SEGMENT_SET`]: which file
//! holds each ordering, and the cut (the sequence number up to which the
//! files hold the log: records after it are replayed at open).
//!
//! Little-endian u64 words: the format, the cut, the next file number,
//! then per ordering (in slot order) its file's number (0: no file) and
//! its rows. A file is `SEGMENTS/<ordering>-<number>.seg`.

use super::{ORDERINGS, SLOTS};

const MANIFEST_FORMAT: u64 = 1;
pub(crate) const KEY: &[u8] = b"set";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub cut: u64,
    pub next_file: u64,
    /// Per slot: (file number, rows); number 0 when the ordering is empty.
    pub files: [(u64, u64); SLOTS],
}

pub(crate) fn file_name(slot: usize, number: u64) -> String {
    format!("{}-{number:08}.seg", ORDERINGS[slot].name())
}

impl Manifest {
    pub fn encode(&self) -> Vec<u8> {
        let mut words = vec![MANIFEST_FORMAT, self.cut, self.next_file];
        for (number, rows) in &self.files {
            words.push(*number);
            words.push(*rows);
        }
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    pub fn decode(bytes: &[u8]) -> rhizome_kv::Result<Manifest> {
        let corrupt = |what: &str| rhizome_kv::Error::Engine(format!("the store is corrupt: the segment set {what}"));
        if bytes.len() != (3 + 2 * SLOTS) * 8 {
            return Err(corrupt(&format!("is {} bytes long", bytes.len())));
        }
        let words: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        if words[0] != MANIFEST_FORMAT {
            return Err(corrupt(&format!("is of format {}, this build reads {MANIFEST_FORMAT}", words[0])));
        }
        let mut files = [(0, 0); SLOTS];
        for (slot, f) in files.iter_mut().enumerate() {
            *f = (words[3 + 2 * slot], words[4 + 2 * slot]);
            if f.0 >= words[2] {
                return Err(corrupt("names a file numbered past its next number"));
            }
        }
        Ok(Manifest { cut: words[1], next_file: words[2], files })
    }

    /// Whether `name` is one of this set's files.
    pub fn names(&self, name: &str) -> bool {
        self.files.iter().enumerate().any(|(slot, (number, _))| *number != 0 && file_name(slot, *number) == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_and_bad_ones_are_refused() {
        let mut m = Manifest { cut: 77, next_file: 12, ..Default::default() };
        m.files[1] = (3, 1000);
        m.files[7] = (11, 5);
        let bytes = m.encode();
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        assert!(m.names("POS-00000003.seg"));
        assert!(!m.names("SPO-00000003.seg"));
        assert!(Manifest::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut bad = bytes.clone();
        bad[0] = 2;
        assert!(Manifest::decode(&bad).is_err());
        let mut past = m.clone();
        past.next_file = 11;
        assert!(Manifest::decode(&past.encode()).is_err());
    }
}
