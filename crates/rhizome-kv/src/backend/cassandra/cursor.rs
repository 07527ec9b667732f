//! Ordered scans over buckets: a page of rows at a time from one bucket,
//! the next bucket found in the directory when one runs out.

use super::buckets::{bucket_len, bucket_of, successor};
use super::{engine, CassandraSnapshot};
use crate::backend::Cursor;
use crate::{Error, Keyspace, Result};

/// Rows read by a cursor's first page (a seek often needs a handful of
/// keys); a cursor that reads past it is scanning, and its later pages
/// are `SCAN_PAGE` rows (pages doubling from 256 to 8,192 took 6 waits
/// for a bucket of 15,000 rows, `rdf:type` of a class; now 3).
const FIRST_PAGE: i32 = 256;
const SCAN_PAGE: i32 = 8192;
/// Buckets a forward scan reads ahead: the next buckets' names come in
/// one read of the directory, and their first pages are read together
/// (a predicate's quads span a bucket per 256 objects; one round trip
/// each, one after another, was most of a scan's time). The first
/// read-ahead names `READ_AHEAD` buckets, each later one 4 times as many
/// up to `MAX_READ_AHEAD` (a class's subjects span hundreds of buckets)
/// while a read-ahead brings under `READ_AHEAD_BYTES` (rows with large
/// values, documents', go back to `READ_AHEAD`), so what a cursor holds
/// stays bounded.
const READ_AHEAD: usize = 32;
const MAX_READ_AHEAD: usize = 256;
const READ_AHEAD_BYTES: usize = 4 << 20;
/// Rows of a bucket read ahead: the scan has left a bucket and goes on
/// to the next, so it wants whole buckets (a predicate's bucket of 256
/// objects has 256 rows or more: a first page of 256 took a second wait).
const READ_AHEAD_PAGE: i32 = 1024;

/// Where the next page of a scan starts.
enum Resume {
    /// Keys `>= from`, starting in `bucket`.
    Forward { bucket: Vec<u8>, from: Vec<u8> },
    /// Keys `< until` (`None`: the keyspace's end), starting in `bucket`
    /// (`None`: the last bucket).
    Reverse { bucket: Option<Vec<u8>>, until: Option<Vec<u8>> },
}

pub(crate) struct CassandraCursor<'a> {
    snapshot: &'a CassandraSnapshot,
    ks: Keyspace,
    lower: Vec<u8>,
    upper: Option<Vec<u8>>,
    /// Visible entries of the current page, in the scan's direction.
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    forward: bool,
    resume: Option<Resume>,
    page: i32,
    error: Option<Error>,
    /// Forward scans: the next buckets within bounds, from the directory,
    /// after the current one, and whether the directory has more after them.
    ahead: std::collections::VecDeque<Vec<u8>>,
    ahead_more: bool,
    /// Buckets the next read of the directory asks for.
    ahead_size: usize,
    /// Whether the first pages of the buckets in `ahead` are still unread.
    ahead_unread: bool,
    /// First pages (read with `READ_AHEAD_PAGE` rows, from the bucket's
    /// start) of buckets in `ahead`, read together.
    prefetched: std::collections::HashMap<Vec<u8>, Vec<RawRow>>,
}

type RawRow = (Vec<u8>, i64, Vec<u8>);

/// What a forward page's read brings: its rows, the page's row limit, and
/// the bucket directory after it when read in the same wait.
type PageRead = (Vec<RawRow>, i32, Option<Vec<Vec<u8>>>);

/// Seeks `cursors` (of one snapshot) each to its key, their first pages
/// read in one wait: the reads a pattern's index families need first go
/// out together, where seeking one cursor after another waits once each.
/// A cursor whose first page is empty goes on by itself as `seek` would.
pub(crate) fn seek_together(cursors: &mut [CassandraCursor<'_>], keys: &[&[u8]]) {
    let mut started = Vec::new();
    let mut reads = Vec::new();
    for (i, (cursor, key)) in cursors.iter_mut().zip(keys).enumerate() {
        match cursor.forward_start(key) {
            Some((bucket, from)) => {
                cursor.reset(true, None);
                reads.push(cursor.page_read(&bucket, &from));
                started.push((i, bucket, from));
            }
            None => cursor.start(true, None),
        }
    }
    let Some(first) = started.first() else { return };
    let cluster = &cursors[first.0].snapshot.shared.cluster;
    match cluster.run(futures_util::future::try_join_all(reads)) {
        Ok(pages) => {
            for ((i, bucket, from), page) in started.into_iter().zip(pages) {
                let cursor = &mut cursors[i];
                if let Err(e) = cursor.page_forward(bucket, from, Some(page)) {
                    cursor.entries.clear();
                    cursor.error = Some(e);
                } else if cursor.entries.is_empty() {
                    cursor.fill();
                }
            }
        }
        Err(e) => {
            for (i, _, _) in started {
                cursors[i].error = Some(Error::Engine(e.to_string()));
            }
        }
    }
}

impl<'a> CassandraCursor<'a> {
    pub(crate) fn new(snapshot: &'a CassandraSnapshot, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Self {
        CassandraCursor {
            snapshot,
            ks,
            lower: lower.to_vec(),
            upper: upper.map(<[u8]>::to_vec),
            entries: Vec::new(),
            pos: 0,
            forward: true,
            resume: None,
            page: FIRST_PAGE,
            error: None,
            ahead: Default::default(),
            ahead_more: true,
            ahead_size: READ_AHEAD,
            ahead_unread: false,
            prefetched: Default::default(),
        }
    }

    fn start(&mut self, forward: bool, resume: Option<Resume>) {
        self.reset(forward, resume);
        self.fill();
    }

    /// The state of a new scan in `forward` direction from `resume`,
    /// nothing read yet.
    fn reset(&mut self, forward: bool, resume: Option<Resume>) {
        self.forward = forward;
        self.entries.clear();
        self.pos = 0;
        self.page = FIRST_PAGE;
        self.error = None;
        self.resume = resume;
        self.ahead.clear();
        self.ahead_more = true;
        self.ahead_size = READ_AHEAD;
        self.ahead_unread = false;
        self.prefetched.clear();
    }

    /// Where a forward scan sought to `key` starts, bucket and first key
    /// (`None`: past the upper bound, nothing to read).
    fn forward_start(&self, key: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let from = if key < self.lower.as_slice() { self.lower.clone() } else { key.to_vec() };
        if self.upper.as_ref().is_some_and(|u| from >= *u) {
            return None;
        }
        Some((bucket_of(self.ks.0, &from).to_vec(), from))
    }

    /// Reads pages until one has a visible entry or the scan is over.
    fn fill(&mut self) {
        self.entries.clear();
        self.pos = 0;
        while self.entries.is_empty() {
            let Some(resume) = self.resume.take() else { return };
            let result = match resume {
                Resume::Forward { bucket, from } => self.page_forward(bucket, from, None),
                Resume::Reverse { bucket, until } => self.page_reverse(bucket, until),
            };
            if let Err(e) = result {
                self.entries.clear();
                self.error = Some(e);
                return;
            }
        }
    }

    fn rows(&self, forward: bool, bucket: &[u8], from: &[u8], until: Option<&[u8]>, limit: i32) -> Result<Vec<RawRow>> {
        self.snapshot.shared.cluster.run(self.read_rows(forward, bucket, from, until, limit))
    }

    /// A page's read, for the cluster's runtime.
    fn read_rows(&self, forward: bool, bucket: &[u8], from: &[u8], until: Option<&[u8]>, limit: i32) -> impl std::future::Future<Output = Result<Vec<RawRow>>> + Send + 'static {
        let shared = &self.snapshot.shared;
        let inner = shared.inner();
        let (id, ks, bucket, from, until) = (shared.id.clone(), self.ks.0 as i32, bucket.to_vec(), from.to_vec(), until.map(<[u8]>::to_vec));
        async move {
            let result = match (forward, until) {
                (true, Some(until)) => inner.send().execute_unpaged(&inner.st.scan_forward, (id, ks, bucket, from, until, limit)).await,
                (true, None) => inner.send().execute_unpaged(&inner.st.scan_forward_open, (id, ks, bucket, from, limit)).await,
                (false, Some(until)) => inner.send().execute_unpaged(&inner.st.scan_reverse, (id, ks, bucket, from, until, limit)).await,
                (false, None) => {
                    // Reverse scans always have an end: the bucket's.
                    unreachable!("reverse scans are bounded by their bucket's end")
                }
            }
            .map_err(engine("scanning"))?;
            let rows = result.into_rows_result().map_err(engine("scanning"))?;
            let out: std::result::Result<Vec<RawRow>, _> = rows.rows::<RawRow>().map_err(engine("scanning"))?.collect();
            out.map_err(engine("scanning"))
        }
    }

    /// The directory's next `ahead_size` buckets after `after` within the
    /// cursor's upper bound, for the cluster's runtime.
    fn read_directory(&self, after: &[u8]) -> impl std::future::Future<Output = Result<Vec<Vec<u8>>>> + Send + 'static {
        let shared = &self.snapshot.shared;
        let inner = shared.inner();
        let (id, ks, after) = (shared.id.clone(), self.ks.0 as i32, after.to_vec());
        let last = self.upper.as_ref().map(|u| bucket_of(self.ks.0, u).to_vec());
        let limit = self.ahead_size as i32;
        async move {
            let result = match last {
                Some(last) => inner.send().execute_unpaged(&inner.st.buckets_between, (id, ks, after, last, limit)).await,
                None => inner.send().execute_unpaged(&inner.st.buckets_after, (id, ks, after, limit)).await,
            }
            .map_err(engine("reading the bucket directory"))?;
            let rows = result.into_rows_result().map_err(engine("reading the bucket directory"))?;
            let out: std::result::Result<Vec<(Vec<u8>,)>, _> = rows.rows::<(Vec<u8>,)>().map_err(engine("reading the bucket directory"))?.collect();
            Ok(out.map_err(engine("reading the bucket directory"))?.into_iter().map(|(b,)| b).collect())
        }
    }

    /// Takes the buckets a read of the directory found as those ahead;
    /// their first pages are read when the scan reaches them.
    fn take_directory(&mut self, found: Vec<Vec<u8>>) {
        self.ahead_more = found.len() >= self.ahead_size;
        self.ahead = found.into();
        self.ahead_unread = true;
    }

    /// The first pages (`READ_AHEAD_PAGE` rows from the bucket's start,
    /// within the cursor's upper bound) of `buckets`, read together.
    fn first_pages(&self, buckets: Vec<Vec<u8>>) -> Result<Vec<(Vec<u8>, Vec<RawRow>)>> {
        use futures_util::stream::{self, StreamExt, TryStreamExt};
        let shared = &self.snapshot.shared;
        let inner = shared.inner();
        let (id, ks, upper) = (shared.id.clone(), self.ks.0 as i32, self.upper.clone());
        shared.cluster.run(async move {
            stream::iter(buckets.into_iter().map(|bucket| {
                let (inner, id, upper) = (inner.clone(), id.clone(), upper.clone());
                async move {
                    let result = match upper {
                        Some(upper) => inner.send().execute_unpaged(&inner.st.scan_forward, (id, ks, bucket.clone(), bucket.clone(), upper, READ_AHEAD_PAGE)).await,
                        None => inner.send().execute_unpaged(&inner.st.scan_forward_open, (id, ks, bucket.clone(), bucket.clone(), READ_AHEAD_PAGE)).await,
                    }
                    .map_err(engine("scanning"))?;
                    let rows = result.into_rows_result().map_err(engine("scanning"))?;
                    let out: std::result::Result<Vec<RawRow>, _> = rows.rows::<RawRow>().map_err(engine("scanning"))?.collect();
                    Ok::<_, Error>((bucket, out.map_err(engine("scanning"))?))
                }
            }))
            .buffered(super::PARALLEL_READS)
            .try_collect()
            .await
        })
    }

    /// The bucket after `bucket` within the cursor's bounds, for a forward
    /// scan: from the buckets read ahead, else from the directory (the next
    /// `ahead_size` in one read, their first pages read together).
    fn next_bucket_forward(&mut self, bucket: &[u8]) -> Result<Option<Vec<u8>>> {
        while self.ahead.front().is_some_and(|b| b.as_slice() <= bucket) {
            let gone = self.ahead.pop_front().expect("checked");
            self.prefetched.remove(&gone);
        }
        if self.ahead.is_empty() && self.ahead_more {
            let found = self.snapshot.shared.cluster.run(self.read_directory(bucket))?;
            self.take_directory(found);
        }
        if std::mem::take(&mut self.ahead_unread) && self.ahead.len() > 1 {
            // One bucket left: a seek's scan, often done there; read it alone.
            self.prefetched = self.first_pages(self.ahead.iter().cloned().collect())?.into_iter().collect();
            let bytes: usize = self.prefetched.values().flatten().map(|(k, _, v)| k.len() + v.len() + 8).sum();
            self.ahead_size = if bytes < READ_AHEAD_BYTES { (self.ahead_size * 4).min(MAX_READ_AHEAD) } else { READ_AHEAD };
        }
        Ok(self.ahead.front().cloned())
    }

    /// The next (`after`) or previous bucket in the directory, within the
    /// cursor's bounds.
    fn neighbour_bucket(&self, bucket: Option<&[u8]>, after: bool) -> Result<Option<Vec<u8>>> {
        let shared = &self.snapshot.shared;
        let inner = shared.inner();
        let (id, ks, bucket) = (shared.id.clone(), self.ks.0 as i32, bucket.map(<[u8]>::to_vec));
        let found: Option<Vec<u8>> = shared.cluster.run(async move {
            let result = match (after, bucket) {
                (true, Some(b)) => inner.send().execute_unpaged(&inner.st.bucket_after, (id, ks, b)).await,
                (false, Some(b)) => inner.send().execute_unpaged(&inner.st.bucket_before, (id, ks, b)).await,
                (_, None) => inner.send().execute_unpaged(&inner.st.bucket_last, (id, ks)).await,
            }
            .map_err(engine("reading the bucket directory"))?;
            let rows = result.into_rows_result().map_err(engine("reading the bucket directory"))?;
            let row: Option<(Vec<u8>,)> = rows.maybe_first_row().map_err(engine("reading the bucket directory"))?;
            Ok(row.map(|(b,)| b))
        })?;
        Ok(found.filter(|b| {
            if after {
                self.upper.as_ref().is_none_or(|u| b.as_slice() <= bucket_of(self.ks.0, u))
            } else {
                b.as_slice() >= bucket_of(self.ks.0, &self.lower)
            }
        }))
    }

    /// The end of a bucket's keys, exclusive (`None`: unbounded).
    fn bucket_end(&self, bucket: &[u8]) -> Option<Vec<u8>> {
        if bucket.len() < bucket_len(self.ks.0) {
            // Only the key equal to the bucket lives there.
            Some(successor(bucket))
        } else {
            crate::prefix_upper_bound(bucket)
        }
    }

    /// The read of a forward page of `bucket` from `from`, for the
    /// cluster's runtime.
    fn page_read(&self, bucket: &[u8], from: &[u8]) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<PageRead>> + Send + 'static>> {
        let batch_reads = self.snapshot.shared.cluster.inner.settings.batch_reads;
        let last_bucket = self.upper.as_ref().is_some_and(|u| bucket >= bucket_of(self.ks.0, u));
        let limit = self.page;
        let page = self.read_rows(true, bucket, from, self.upper.as_deref(), limit);
        // A seek to a key shorter than the keyspace's buckets (a pattern's
        // prefix: one id of a 15-byte bucket): the bucket named by it
        // rarely has keys, and the scan goes on to the buckets after it,
        // so the directory is read in the same wait.
        if batch_reads && from.len() < bucket_len(self.ks.0) && self.ahead.is_empty() && self.ahead_more && !last_bucket {
            let directory = self.read_directory(bucket);
            Box::pin(async move {
                let (rows, found) = futures_util::future::try_join(page, directory).await?;
                Ok((rows, limit, Some(found)))
            })
        } else {
            Box::pin(async move { Ok((page.await?, limit, None)) })
        }
    }

    /// Reads a page forward (`read`: its read already done, by
    /// `seek_together`) and sets where the next one starts.
    fn page_forward(&mut self, bucket: Vec<u8>, from: Vec<u8>, read: Option<PageRead>) -> Result<()> {
        let batch_reads = self.snapshot.shared.cluster.inner.settings.batch_reads;
        let last_bucket = self.upper.as_ref().is_some_and(|u| bucket.as_slice() >= bucket_of(self.ks.0, u));
        let prefetched = if read.is_none() { self.prefetched.remove(&bucket).filter(|_| from == bucket) } else { None };
        let (rows, limit) = match prefetched {
            Some(rows) => (rows, READ_AHEAD_PAGE),
            None => {
                let (rows, limit, directory) = match read {
                    Some(read) => read,
                    None => self.snapshot.shared.cluster.run(self.page_read(&bucket, &from))?,
                };
                if let Some(found) = directory {
                    self.take_directory(found);
                }
                (rows, limit)
            }
        };
        let full = rows.len() as i32 >= limit;
        let (entries, incomplete) = self.resolve(rows, full, true);
        if full {
            match &incomplete {
                // One key had more versions than the page: a larger page.
                Some(key) if entries.is_empty() && *key == from => self.page = (self.page * 4).min(i32::MAX / 4),
                _ => self.page = self.page.max(SCAN_PAGE),
            }
            let from = incomplete.expect("a full page has a last key");
            self.resume = Some(Resume::Forward { bucket, from });
        } else {
            self.resume = if last_bucket {
                None
            } else {
                let next = if batch_reads { self.next_bucket_forward(&bucket)? } else { self.neighbour_bucket(Some(&bucket), true)? };
                next.map(|next| Resume::Forward { from: next.clone(), bucket: next })
            };
        }
        self.entries = entries;
        Ok(())
    }

    fn page_reverse(&mut self, bucket: Option<Vec<u8>>, until: Option<Vec<u8>>) -> Result<()> {
        let bucket = match bucket {
            Some(b) => b,
            None => match self.neighbour_bucket(None, false)? {
                Some(b) => b,
                None => return Ok(()),
            },
        };
        let limit = self.page;
        // Within the bucket: below `until` and below the bucket's end.
        let end = match (until.clone(), self.bucket_end(&bucket)) {
            (Some(u), Some(e)) => Some(u.min(e)),
            (u, e) => u.or(e),
        };
        let rows = match &end {
            Some(end) => self.rows(false, &bucket, &self.lower.clone(), Some(end), limit)?,
            // A bucket of 0xFF bytes to the keyspace's end: read forward
            // whole, then reverse (such keys are not made by the layers).
            None => {
                let mut rows = self.rows(true, &bucket, &self.lower.clone(), None, i32::MAX)?;
                rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                rows
            }
        };
        let full = end.is_some() && rows.len() as i32 >= limit;
        let (entries, incomplete) = self.resolve(rows, full, false);
        if full {
            self.page = if entries.is_empty() { (self.page * 4).min(i32::MAX / 4) } else { self.page.max(SCAN_PAGE) };
            let key = incomplete.expect("a full page has a last key");
            self.resume = Some(Resume::Reverse { bucket: Some(bucket), until: Some(successor(&key)) });
        } else {
            let done = bucket.as_slice() <= bucket_of(self.ks.0, &self.lower);
            self.resume = if done {
                None
            } else {
                self.neighbour_bucket(Some(&bucket), false)?.map(|previous| Resume::Reverse { bucket: Some(previous), until: until.clone() })
            };
        }
        self.entries = entries;
        Ok(())
    }

    /// Each key's visible version, in the rows' order. With `full`, the
    /// last key may have more versions on the next page: it is left out
    /// and returned, to be read again.
    fn resolve(&self, rows: Vec<RawRow>, full: bool, forward: bool) -> (Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>) {
        let incomplete = if full { rows.last().map(|r| r.0.clone()) } else { None };
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut i = 0;
        while i < rows.len() {
            let key = &rows[i].0;
            if incomplete.as_ref() == Some(key) {
                break;
            }
            let mut j = i;
            let mut chosen: Option<&Vec<u8>> = None;
            while j < rows.len() && rows[j].0 == *key {
                if self.snapshot.visible(rows[j].1) {
                    // Newest first going forward; oldest first in reverse.
                    if forward {
                        if chosen.is_none() {
                            chosen = Some(&rows[j].2);
                        }
                    } else {
                        chosen = Some(&rows[j].2);
                    }
                }
                j += 1;
            }
            if let Some(value) = chosen {
                if value.first() == Some(&1) {
                    entries.push((key.clone(), value[1..].to_vec()));
                }
            }
            i = j;
        }
        (entries, incomplete)
    }

    fn current_key(&self) -> Option<Vec<u8>> {
        self.valid().then(|| self.key().to_vec())
    }

    fn advance(&mut self) {
        self.pos += 1;
        if self.pos >= self.entries.len() {
            self.fill();
        }
    }
}

impl Cursor for CassandraCursor<'_> {
    fn seek(&mut self, key: &[u8]) {
        let resume = self.forward_start(key).map(|(bucket, from)| Resume::Forward { bucket, from });
        self.start(true, resume);
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        let mut until = successor(key);
        if let Some(u) = &self.upper {
            if until > *u {
                until = u.clone();
            }
        }
        if until <= self.lower {
            self.start(false, None);
            return;
        }
        let bucket = bucket_of(self.ks.0, &until).to_vec();
        // `until`'s own bucket may hold nothing below it; the page then
        // moves to the previous bucket.
        self.start(false, Some(Resume::Reverse { bucket: Some(bucket), until: Some(until) }));
    }

    fn seek_first(&mut self) {
        let lower = self.lower.clone();
        self.seek(&lower);
    }

    fn seek_last(&mut self) {
        match self.upper.clone() {
            Some(upper) => {
                if upper <= self.lower {
                    self.start(false, None);
                    return;
                }
                let bucket = bucket_of(self.ks.0, &upper).to_vec();
                self.start(false, Some(Resume::Reverse { bucket: Some(bucket), until: Some(upper) }));
            }
            None => self.start(false, Some(Resume::Reverse { bucket: None, until: None })),
        }
    }

    fn valid(&self) -> bool {
        self.error.is_none() && self.pos < self.entries.len()
    }

    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }

    fn next(&mut self) {
        if !self.forward {
            if let Some(k) = self.current_key() {
                self.seek(&successor(&k));
            }
            return;
        }
        self.advance();
    }

    fn prev(&mut self) {
        if self.forward {
            if let Some(k) = self.current_key() {
                if k.as_slice() <= self.lower.as_slice() {
                    self.start(false, None);
                    return;
                }
                // Keys below `k`: `until` = k, exclusive.
                let bucket = bucket_of(self.ks.0, &k).to_vec();
                self.start(false, Some(Resume::Reverse { bucket: Some(bucket), until: Some(k) }));
            }
            return;
        }
        self.advance();
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(Error::Engine(m)) => Err(Error::Engine(m.clone())),
            Some(e) => Err(Error::Engine(e.to_string())),
            None => Ok(()),
        }
    }
}
