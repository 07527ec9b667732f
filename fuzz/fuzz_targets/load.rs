//! Arbitrary bytes as N-Triples, N-Quads, Turtle, TriG and RDF/XML into a
//! memory store: never a panic; a failed load leaves the store empty; a
//! successful one is all there (counter equals a full scan).
#![no_main]
use libfuzzer_sys::fuzz_target;
use rhizome_rdf::{DatasetMode, LoadInput, LoadOptions, QuadPattern, RdfFormat, Store};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let format = match selector % 5 {
        0 => RdfFormat::NTriples,
        1 => RdfFormat::NQuads,
        2 => RdfFormat::Turtle,
        3 => RdfFormat::TriG,
        _ => RdfFormat::RdfXml,
    };
    let dir = std::env::temp_dir().join(format!("rhizome-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("input");
    std::fs::write(&path, body).unwrap();
    let mode = if selector & 0x80 != 0 { DatasetMode::Plain } else { DatasetMode::Union };
    let store = Store::memory(mode);
    let options = LoadOptions { format: Some(format), base_iri: Some("http://example.com/".into()), lenient: selector & 0x40 != 0, ..Default::default() };
    let loaded = store.load(&[LoadInput { path }], &options);
    let snapshot = store.snapshot().unwrap();
    let scanned = snapshot.scan(QuadPattern::default()).count() as u64;
    let counted = store.stats().unwrap().quads;
    assert_eq!(scanned, counted);
    if loaded.is_err() {
        assert_eq!(scanned, 0, "a failed load left data");
    }
});
