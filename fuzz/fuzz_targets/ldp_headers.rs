//! Arbitrary `Prefer` and `Link` headers, request paths and IRIs through
//! the LDP model's parsers (`rhizome-ldp`): never a panic, and a path
//! taken from segments names itself again through its IRI.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rhizome_ldp::{link_types, InteractionModel, LdpPath, Preferences};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut fields = text.splitn(3, '\n');
    let prefer = fields.next().unwrap_or_default();
    let link = fields.next().unwrap_or_default();
    let path = fields.next().unwrap_or_default();
    let _ = Preferences::parse([prefer]);
    let types = link_types(link);
    let _ = InteractionModel::most_specific(types.iter().map(String::as_str));
    let root = "http://h/db/_ldp/";
    let segments: Vec<&str> = path.split('/').collect();
    if let Ok(p) = LdpPath::from_segments(&segments) {
        if !p.is_root() {
            assert_eq!(LdpPath::from_iri(root, &p.iri(root)), Some(p.clone()), "a path names itself through its IRI");
            assert!(p.parent().is_some());
        }
    }
    let _ = LdpPath::from_iri(root, path);
});
