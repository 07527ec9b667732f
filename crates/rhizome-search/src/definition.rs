//! Nouveau index definitions in design documents: the `nouveau` member,
//! one object per index with its `index` function, `default_analyzer` and
//! `field_analyzers` (CouchDB's `nouveau_util:design_doc_to_index`).

use crate::analyzers;
use crate::{Result, SearchError};
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

/// One index of a design document.
#[derive(Clone, Debug, PartialEq)]
pub struct NouveauDef {
    /// The design document's id (`_design/...`).
    pub ddoc: String,
    pub name: String,
    /// The index function's source (empty for a Mango index).
    pub index_fn: String,
    /// A Mango index of type `nouveau` (`POST /{db}/_index`): its `index`
    /// definition (fields, `default_field`, partial filter), indexed by
    /// Rust as CouchDB's `mango_native_proc` does, with no JavaScript.
    pub mango: Option<crate::mango::MangoDef>,
    pub default_analyzer: String,
    /// Analyzers of named text fields, over the default.
    pub field_analyzers: Vec<(String, String)>,
}

/// The `nouveau` indexes of one design document.
pub type NouveauDefs = Vec<NouveauDef>;

/// The format of the index files this code writes; a new number builds
/// indexes of the old one again (they are named by their signature).
const INDEX_FORMAT_VERSION: u32 = 1;

impl NouveauDef {
    /// The `nouveau` indexes of a design document body (none if it has no
    /// `nouveau` member), with CouchDB's checks.
    pub fn parse_all(ddoc_id: &str, body: &Map<String, Value>) -> Result<NouveauDefs> {
        let Some(nouveau) = body.get("nouveau") else { return Ok(Vec::new()) };
        let Some(indexes) = nouveau.as_object() else {
            return Err(SearchError::BadRequest("`nouveau` field must be an object".into()));
        };
        indexes.iter().map(|(name, def)| NouveauDef::parse(ddoc_id, name, def)).collect()
    }

    fn parse(ddoc_id: &str, name: &str, def: &Value) -> Result<NouveauDef> {
        let bad = |m: String| SearchError::BadRequest(m);
        let def = def.as_object().ok_or_else(|| SearchError::InvalidDesignDoc(format!("index `{name}` must have parameter `index`")))?;
        let (index_fn, mango) = match def.get("index") {
            Some(Value::String(f)) => (f.as_str(), None),
            // Mango writes its definition as an object (`mango_idx_nouveau:add`).
            Some(Value::Object(m)) => ("", Some(crate::mango::MangoDef::parse(m)?)),
            _ => return Err(SearchError::InvalidDesignDoc(format!("index `{name}` must have parameter `index`"))),
        };
        let default_analyzer = match def.get("default_analyzer") {
            None | Some(Value::Null) => "standard".to_owned(),
            Some(Value::String(a)) => a.clone(),
            Some(_) => return Err(bad(format!("default_analyzer of nouveau index `{name}` must be a string"))),
        };
        analyzers::check(&default_analyzer)?;
        let mut field_analyzers = Vec::new();
        match def.get("field_analyzers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(fields)) => {
                for (field, analyzer) in fields {
                    let a = analyzer.as_str().ok_or_else(|| bad(format!("field_analyzers of nouveau index `{name}`: `{field}` must name an analyzer")))?;
                    analyzers::check(a)?;
                    field_analyzers.push((field.clone(), a.to_owned()));
                }
            }
            Some(_) => return Err(bad(format!("field_analyzers of nouveau index `{name}` must be an object"))),
        }
        if let Some(m) = &mango {
            // The `$default` field's analyzer is the definition's
            // `default_field.analyzer` (standard when not given).
            if !field_analyzers.iter().any(|(f, _)| f == crate::mango::DEFAULT_FIELD) {
                analyzers::check(&m.default_field_analyzer)?;
                field_analyzers.push((crate::mango::DEFAULT_FIELD.to_owned(), m.default_field_analyzer.clone()));
            }
        }
        field_analyzers.sort();
        Ok(NouveauDef { ddoc: ddoc_id.to_owned(), name: name.to_owned(), index_fn: index_fn.to_owned(), mango, default_analyzer, field_analyzers })
    }

    /// What names the index files: the function and analyzers, not the
    /// design document (two design documents with one definition share
    /// an index, as CouchDB's signatures do).
    pub fn signature(&self) -> String {
        let canonical = match &self.mango {
            None => json!([INDEX_FORMAT_VERSION, self.index_fn, self.default_analyzer, self.field_analyzers]),
            Some(m) => json!([INDEX_FORMAT_VERSION, "mango", m.to_json(), self.default_analyzer, self.field_analyzers]),
        };
        Md5::digest(canonical.to_string().as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The analyzer of a text field.
    pub fn analyzer_of(&self, field: &str) -> &str {
        self.field_analyzers.iter().find(|(f, _)| f == field).map_or(&self.default_analyzer, |(_, a)| a)
    }

    /// Every analyzer the index uses, once each.
    pub fn analyzers(&self) -> Vec<&str> {
        let mut all: Vec<&str> = std::iter::once(self.default_analyzer.as_str()).chain(self.field_analyzers.iter().map(|(_, a)| a.as_str())).collect();
        all.sort();
        all.dedup();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn parses_indexes_with_their_analyzers() {
        let defs = NouveauDef::parse_all(
            "_design/d",
            &body(json!({"nouveau": {"a": {"index": "function(doc){}", "field_analyzers": {"t": "english"}}}})),
        )
        .unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].default_analyzer, "standard");
        assert_eq!(defs[0].analyzer_of("t"), "english");
        assert_eq!(defs[0].analyzer_of("u"), "standard");
    }

    #[test]
    fn refuses_unknown_analyzers_and_missing_functions() {
        assert!(NouveauDef::parse_all("_design/d", &body(json!({"nouveau": {"a": {"index": "f", "default_analyzer": "klingon"}}}))).is_err());
        assert!(NouveauDef::parse_all("_design/d", &body(json!({"nouveau": {"a": {}}}))).is_err());
        assert!(NouveauDef::parse_all("_design/d", &body(json!({"nouveau": 1}))).is_err());
    }

    #[test]
    fn signature_follows_the_definition_not_the_design_document() {
        let a = NouveauDef::parse_all("_design/a", &body(json!({"nouveau": {"i": {"index": "f"}}}))).unwrap();
        let b = NouveauDef::parse_all("_design/b", &body(json!({"nouveau": {"j": {"index": "f"}}}))).unwrap();
        let c = NouveauDef::parse_all("_design/b", &body(json!({"nouveau": {"j": {"index": "g"}}}))).unwrap();
        assert_eq!(a[0].signature(), b[0].signature());
        assert_ne!(a[0].signature(), c[0].signature());
    }
}
