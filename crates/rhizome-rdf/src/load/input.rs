//! Opening inputs: files or stdin, gzip or not, and their format.

use crate::{Error, Result};
use oxrdfio::RdfFormat;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One thing to load: a path, or `-` for stdin.
#[derive(Clone, Debug)]
pub struct LoadInput {
    pub path: PathBuf,
}

impl LoadInput {
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }
    pub fn display_name(&self) -> String {
        if self.is_stdin() {
            "<stdin>".into()
        } else {
            self.path.display().to_string()
        }
    }
    /// Bytes on disk, for the progress bar (stdin: unknown).
    pub fn size(&self) -> Option<u64> {
        if self.is_stdin() {
            None
        } else {
            std::fs::metadata(&self.path).ok().map(|m| m.len())
        }
    }
}

/// A format by name: the usual short names, extensions and media types.
pub fn format_from_name(name: &str) -> Option<RdfFormat> {
    let n = name.to_ascii_lowercase();
    Some(match n.as_str() {
        "nt" | "ntriples" | "n-triples" => RdfFormat::NTriples,
        "nq" | "nquads" | "n-quads" => RdfFormat::NQuads,
        "ttl" | "turtle" => RdfFormat::Turtle,
        "trig" => RdfFormat::TriG,
        "rdf" | "xml" | "rdfxml" | "rdf-xml" | "owl" => RdfFormat::RdfXml,
        "jsonld" | "json-ld" => RdfFormat::JsonLd { profile: Default::default() },
        "n3" => RdfFormat::N3,
        _ => return RdfFormat::from_extension(&n).or_else(|| RdfFormat::from_media_type(&n)),
    })
}

/// The format of a file from its extension, looking through `.gz`.
pub fn format_from_path(path: &Path) -> Option<RdfFormat> {
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let ext = Path::new(name).extension()?.to_str()?;
    format_from_name(ext)
}

/// Counts bytes read from the underlying (possibly compressed) source.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens an input, decompressing gzip (detected by its magic bytes).
pub fn open(input: &LoadInput, read: Arc<AtomicU64>) -> Result<Box<dyn Read + Send>> {
    let io_err = |source| Error::Io { path: input.path.clone(), source };
    let raw: Box<dyn Read + Send> = if input.is_stdin() {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(&input.path).map_err(io_err)?)
    };
    let mut buffered = BufReader::with_capacity(1 << 20, Counting { inner: raw, read });
    let head = buffered.fill_buf().map_err(io_err)?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(1 << 20, flate2::bufread::MultiGzDecoder::new(buffered))))
    } else {
        Ok(Box::new(buffered))
    }
}
