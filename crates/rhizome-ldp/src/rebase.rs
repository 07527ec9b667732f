//! Moving the LDP index to another base IRI (`rhizome rebase`), in the
//! caller's transaction. Resources are keyed by path (relative to the
//! database's LDP root), so only membership resources, which are IRIs,
//! move: in `RESOURCES` values and `MEMBERSHIP_TARGETS` keys.

use crate::index::{MEMBERSHIP_TARGETS, RESOURCES};
use crate::LdpError;
use rhizome_kv::Transaction;
use rhizome_rdf::term::rebased_iri;

/// Where a `RESOURCES` value's membership resource IRI starts (after the
/// format, the model byte and the generation).
const MEMBERSHIP_AT: usize = 10;

/// Moves every membership resource under `old` to `new`; returns how many
/// index entries changed.
pub fn rebase_index(txn: &mut Transaction<'_>, old: &str, new: &str) -> Result<u64, LdpError> {
    let mut puts: Vec<(rhizome_kv::Keyspace, Vec<u8>, Vec<u8>)> = Vec::new();
    let mut deletes: Vec<Vec<u8>> = Vec::new();
    {
        let mut c = txn.cursor(RESOURCES, &[], None);
        c.seek_first();
        while c.valid() {
            let v = c.value();
            let iri = v.get(MEMBERSHIP_AT..).and_then(|b| std::str::from_utf8(b).ok()).ok_or_else(|| LdpError::Corrupt(format!("the entry of {:?}", String::from_utf8_lossy(c.key()))))?;
            if let Some(moved) = rebased_iri(iri, old, new) {
                let mut value = v[..MEMBERSHIP_AT].to_vec();
                value.extend_from_slice(moved.as_bytes());
                puts.push((RESOURCES, c.key().to_vec(), value));
            }
            c.next();
        }
        c.status()?;
        let mut c = txn.cursor(MEMBERSHIP_TARGETS, &[], None);
        c.seek_first();
        while c.valid() {
            let k = c.key();
            let nul = k.iter().position(|b| *b == 0).ok_or_else(|| LdpError::Corrupt("a membership target key".into()))?;
            let iri = std::str::from_utf8(&k[..nul]).map_err(|_| LdpError::Corrupt("a membership target key".into()))?;
            if let Some(moved) = rebased_iri(iri, old, new) {
                let mut key = moved.into_bytes();
                key.extend_from_slice(&k[nul..]);
                deletes.push(k.to_vec());
                puts.push((MEMBERSHIP_TARGETS, key, c.value().to_vec()));
            }
            c.next();
        }
        c.status()?;
    }
    for k in &deletes {
        txn.delete(MEMBERSHIP_TARGETS, k);
    }
    let changed = puts.len() as u64;
    for (ks, k, v) in puts {
        txn.put(ks, &k, &v);
    }
    Ok(changed)
}
