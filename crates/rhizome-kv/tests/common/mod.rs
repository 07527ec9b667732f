//! Helpers shared by this crate's integration tests.

use rhizome_kv::Cursor;

/// A small deterministic generator (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    #[allow(dead_code)] // not every test file draws below a bound
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The entries a cursor yields from where it stands, forward or backward,
/// at most `limit` of them.
pub fn walk(c: &mut dyn Cursor, forward: bool, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while c.valid() && out.len() < limit {
        out.push((c.key().to_vec(), c.value().to_vec()));
        if forward {
            c.next()
        } else {
            c.prev()
        }
    }
    c.status().unwrap();
    out
}
