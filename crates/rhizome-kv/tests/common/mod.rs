//! Helpers shared by this crate's integration tests.

use rhizome_kv::Cursor;

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
