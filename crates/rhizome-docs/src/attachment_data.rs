//! Attachment bytes by digest, whole or in chunks.
//!
//! An attachment up to [`CHUNK_BYTES`] is one value in `ATTACHMENTS`
//! (digest -> bytes), as in format 1. A larger one is stored as chunks of
//! [`CHUNK_BYTES`] in `ATTACHMENT_CHUNKS` (digest, 0, chunk number ->
//! bytes), so that a reader can send it a chunk at a time: held whole, a
//! 50 MB attachment asked for by 70 slow clients was 3.5 GB of memory.
//! Chunks came with document format 2 (`keys::FORMAT_VERSION_2`; every
//! database is moved to the current format when opened), which an older
//! build refuses to open rather than report those attachments missing.

use crate::keys::{self, ATTACHMENTS, ATTACHMENT_CHUNKS};
use crate::{DocError, Result};
use rhizome_kv::{KvRead, Transaction};

/// Bytes of one stored chunk of a large attachment.
pub const CHUNK_BYTES: usize = 256 << 10;

fn chunk_prefix(digest: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(digest.len() + 5);
    key.extend_from_slice(digest.as_bytes());
    // Digests are base64 text: a zero byte ends one and sorts before any
    // longer digest it is a prefix of.
    key.push(0);
    key
}

fn chunk_key(digest: &str, n: u32) -> Vec<u8> {
    let mut key = chunk_prefix(digest);
    key.extend_from_slice(&n.to_be_bytes());
    key
}

/// Whether the bytes of `digest` are stored.
pub fn exists(kv: &dyn KvRead, digest: &str) -> Result<bool> {
    if kv.get(ATTACHMENTS, digest.as_bytes())?.is_some() {
        return Ok(true);
    }
    Ok(kv.get(ATTACHMENT_CHUNKS, &chunk_key(digest, 0))?.is_some())
}

/// Stores `bytes` under `digest` (nothing if they are there already).
pub fn put(txn: &mut Transaction<'_>, digest: &str, bytes: &[u8]) -> Result<()> {
    if exists(txn, digest)? {
        return Ok(());
    }
    if bytes.len() <= CHUNK_BYTES {
        txn.put(ATTACHMENTS, digest.as_bytes(), bytes);
        return Ok(());
    }
    for (n, chunk) in bytes.chunks(CHUNK_BYTES).enumerate() {
        let n = u32::try_from(n).map_err(|_| DocError::Validation(format!("attachment {digest} is too large")))?;
        txn.put(ATTACHMENT_CHUNKS, &chunk_key(digest, n), chunk);
    }
    Ok(())
}

/// The bytes of `digest`, one piece at a time (a chunk, or the whole value
/// of a small attachment) into `each`, which may stop the read with an
/// error of its own.
pub fn read_each<E: From<DocError>>(kv: &dyn KvRead, digest: &str, each: &mut dyn FnMut(&[u8]) -> std::result::Result<(), E>) -> std::result::Result<(), E> {
    if let Some(whole) = kv.get(ATTACHMENTS, digest.as_bytes()).map_err(|e| E::from(DocError::from(e)))? {
        return each(&whole);
    }
    let prefix = chunk_prefix(digest);
    let mut end = prefix.clone();
    *end.last_mut().expect("a prefix ends with its zero byte") = 1;
    let mut cursor = kv.cursor(ATTACHMENT_CHUNKS, &prefix, Some(&end));
    cursor.seek_first();
    let mut found = false;
    while cursor.valid() {
        found = true;
        each(cursor.value())?;
        cursor.next();
    }
    cursor.status().map_err(|e| E::from(DocError::from(e)))?;
    if !found {
        return Err(E::from(DocError::Corrupt(format!("attachment data {digest}"))));
    }
    Ok(())
}

/// The bytes of `digest`, whole (inline attachments: base64 in JSON).
pub fn read_all(kv: &dyn KvRead, digest: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    read_each::<DocError>(kv, digest, &mut |piece| {
        out.extend_from_slice(piece);
        Ok(())
    })?;
    Ok(out)
}

/// Every stored digest (compaction), each once.
pub fn digests(kv: &dyn KvRead, each: &mut dyn FnMut(&str)) -> Result<()> {
    let mut cursor = kv.cursor(ATTACHMENTS, &[], None);
    cursor.seek_first();
    while cursor.valid() {
        if let Ok(d) = std::str::from_utf8(cursor.key()) {
            each(d);
        }
        cursor.next();
    }
    cursor.status()?;
    let mut cursor = kv.cursor(ATTACHMENT_CHUNKS, &[], None);
    cursor.seek_first();
    while cursor.valid() {
        let key = cursor.key().to_vec();
        let Some(end) = key.iter().position(|b| *b == 0) else {
            return Err(DocError::Corrupt(format!("an attachment chunk key {key:?}")));
        };
        if let Ok(d) = std::str::from_utf8(&key[..end]) {
            each(d);
        }
        // On to the next digest.
        let mut next = key[..=end].to_vec();
        *next.last_mut().expect("the zero byte") = 1;
        cursor.seek(&next);
    }
    cursor.status()?;
    Ok(())
}

/// Deletes the bytes of `digest`.
pub fn delete(txn: &mut Transaction<'_>, digest: &str) -> Result<()> {
    txn.delete(ATTACHMENTS, digest.as_bytes());
    let prefix = chunk_prefix(digest);
    let mut end = prefix.clone();
    *end.last_mut().expect("a prefix ends with its zero byte") = 1;
    keys::delete_range(txn, ATTACHMENT_CHUNKS, &prefix, &end)
}
