//! Stores of format 2 (quad indexes as keys in the engine) opened for
//! writing are moved to segments: each ordering's keys are read in order
//! into a segment file, and one commit records the segment set and
//! format 3. The old keys are then deleted (a range deletion per
//! ordering); a crash before the commit leaves a store of format 2 that
//! the next open migrates again, one after it a store of format 3 whose
//! old keys the next open deletes (a mark in META says so).

use super::manifest::{self, file_name, Manifest};
use super::{columns, ORDERINGS, SEGMENT_SET, SLOTS};
use crate::index::layout::{self, meta, META};
use crate::segment::SegmentWriter;
use crate::{Error, Result};
use rhizome_kv::{Backend, WriteBatch};
use std::path::Path;
use std::sync::Arc;

/// META key present while a migrated store still holds its old keys.
const OLD_INDEX_KEYS: &[u8] = b"old_index_keys";

/// Brings a store of format 2 to format 3 (a no-op for a new store or one
/// of format 3); `true` when it migrated.
pub(crate) fn migrate(inner: &Arc<dyn Backend>, dir: &Path) -> Result<bool> {
    let snapshot = inner.snapshot()?;
    if snapshot.get(META, meta::MODE)?.is_none() {
        return Ok(false);
    }
    let version = crate::store::read_u64(snapshot.as_ref(), meta::FORMAT_VERSION)?;
    if version == layout::FORMAT_VERSION {
        let left = snapshot.get(META, OLD_INDEX_KEYS)?.is_some();
        drop(snapshot);
        if left {
            clear_old_keys(inner)?;
        }
        return Ok(false);
    }
    if version != layout::KEYS_FORMAT_VERSION {
        return Err(Error::FormatVersion { found: version, expected: layout::FORMAT_VERSION });
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_owned(), source })?;
    let cut = inner.latest_sequence().unwrap_or(0);
    let mut files = [(0, 0); SLOTS];
    for slot in 0..SLOTS {
        let number = slot as u64 + 1;
        let path = dir.join(file_name(slot, number));
        let columns = columns(slot);
        let mut writer = SegmentWriter::create(&path, columns)?;
        let mut cursor = snapshot.cursor(ORDERINGS[slot].ks, &[], None);
        cursor.seek_first();
        let mut words = [0u64; 4];
        while cursor.valid() {
            let key = cursor.key();
            if key.len() != columns * 8 {
                return Err(Error::Corrupt(format!("a key of {} bytes in the {} index", key.len(), ORDERINGS[slot].name())));
            }
            for (i, chunk) in key.chunks_exact(8).enumerate() {
                words[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
            }
            writer.push(&words[..columns])?;
            cursor.next();
        }
        cursor.status()?;
        let rows = writer.rows();
        writer.finish()?;
        if rows == 0 {
            std::fs::remove_file(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
        } else {
            files[slot] = (number, rows);
        }
    }
    drop(snapshot);
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|source| Error::Io { path: dir.to_owned(), source })?;
    let manifest = Manifest { cut, next_file: SLOTS as u64 + 1, files };
    let mut batch = WriteBatch::default();
    batch.put(SEGMENT_SET, manifest::KEY, &manifest.encode());
    batch.put(META, meta::FORMAT_VERSION, &layout::FORMAT_VERSION.to_be_bytes());
    batch.put(META, OLD_INDEX_KEYS, &[]);
    inner.commit(batch)?;
    clear_old_keys(inner)?;
    Ok(true)
}

fn clear_old_keys(inner: &Arc<dyn Backend>) -> Result<()> {
    for ordering in ORDERINGS {
        inner.clear_keyspace(ordering.ks)?;
    }
    let mut batch = WriteBatch::default();
    batch.delete(META, OLD_INDEX_KEYS);
    inner.commit(batch)?;
    Ok(())
}
