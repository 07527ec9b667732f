//! The literals of a database's graphs, indexed for SPARQL's text search
//! (`rhizome_sparql::text_search`): one index entry per literal of a
//! document's graph (its subject, predicate, language and text), kept up
//! to the database's sequence as Nouveau indexes are ([`crate::index`]):
//! every door's write is a revision of a document, so the changes feed
//! brings each changed graph, whatever wrote it.
//!
//! Which literals are indexed is set per database by the design document
//! `_design/rdf_text`, member `rdf_text`: `predicates` (IRIs; absent: all)
//! and `languages` (tags, `""` for literals without one; absent: all).
//! Literals of other datatypes than strings are never indexed. The index
//! lives in `search/rdf_text-<signature>/`; a new setting is a new
//! signature, built anew.

use crate::analyzers;
use crate::build::{self, BATCH};
use crate::index::search_dir;
use crate::{Result, SearchError};
use md5::{Digest, Md5};
use rhizome_docs::keys::{self, DocInfo, DB_META};
use rhizome_docs::{Database, DocError, ReadOptions};
use rhizome_rdf::{QuadPattern, StoreSnapshot};
use rhizome_views::tasks::IndexerTask;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, PhrasePrefixQuery, Query, QueryParser, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value as _, STORED, STRING};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

/// The design document that sets what is indexed.
pub const SETTINGS_DOC: &str = "_design/rdf_text";
const FORMAT_VERSION: u32 = 1;
/// The analyzer of literals' text.
const ANALYZER: &str = "standard";

/// What literals are indexed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RdfTextSettings {
    pub predicates: Option<Vec<String>>,
    pub languages: Option<Vec<String>>,
}

impl RdfTextSettings {
    /// The database's settings (all literals when it has none).
    pub fn of(db: &Database) -> Result<RdfTextSettings> {
        let body = match db.get_doc(SETTINGS_DOC, &ReadOptions::default()) {
            Ok(b) => b,
            Err(DocError::NotFound(_)) => return Ok(RdfTextSettings::default()),
            Err(e) => return Err(e.into()),
        };
        let Some(v) = body.get("rdf_text") else { return Ok(RdfTextSettings::default()) };
        let list = |k: &str| -> Result<Option<Vec<String>>> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Array(a)) => a.iter().map(|x| x.as_str().map(str::to_owned).ok_or_else(|| SearchError::BadRequest(format!("{SETTINGS_DOC}: rdf_text.{k} must be a list of strings")))).collect::<Result<Vec<_>>>().map(Some),
                Some(_) => Err(SearchError::BadRequest(format!("{SETTINGS_DOC}: rdf_text.{k} must be a list of strings"))),
            }
        };
        Ok(RdfTextSettings { predicates: list("predicates")?, languages: list("languages")? })
    }

    /// The index's folder under `search/`: named by the settings.
    pub fn folder_name(&self) -> String {
        let canonical = json!([FORMAT_VERSION, self.predicates, self.languages]);
        let sig: String = Md5::digest(canonical.to_string().as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        format!("rdf_text-{sig}")
    }

    fn keeps(&self, predicate: &str, language: &str) -> bool {
        self.predicates.as_ref().is_none_or(|ps| ps.iter().any(|p| p == predicate)) && self.languages.as_ref().is_none_or(|ls| ls.iter().any(|l| l.eq_ignore_ascii_case(language)))
    }
}

struct Fields {
    id: Field,
    subject: Field,
    predicate: Field,
    language: Field,
    datatype: Field,
    text: Field,
}

/// One open literal index.
pub struct RdfTextIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    seq: Mutex<u64>,
    writing: Mutex<()>,
    settings: RdfTextSettings,
}

static OPEN: Mutex<Option<HashMap<PathBuf, Arc<RdfTextIndex>>>> = Mutex::new(None);

fn schema() -> Schema {
    let mut b = Schema::builder();
    b.add_text_field("_id", STRING);
    b.add_text_field("s", STRING | STORED);
    b.add_text_field("p", STRING | STORED);
    b.add_text_field("lang", STRING | STORED);
    b.add_text_field("dt", STORED);
    let indexing = TextFieldIndexing::default().set_tokenizer(&analyzers::tokenizer_name(ANALYZER)).set_index_option(IndexRecordOption::WithFreqsAndPositions);
    b.add_text_field("o", TextOptions::default().set_indexing_options(indexing).set_stored());
    b.build()
}

fn open(db: &Database, settings: &RdfTextSettings) -> Result<Arc<RdfTextIndex>> {
    let dir = search_dir(db)?.join(settings.folder_name());
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    let open = open.get_or_insert_with(HashMap::new);
    // A database deleted and created again has a new folder: reopen.
    if let Some(files) = open.get(&dir) {
        if dir.join("meta.json").exists() {
            return Ok(files.clone());
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| SearchError::Index(format!("creating {}: {e}", dir.display())))?;
    let index = if dir.join("meta.json").exists() { Index::open_in_dir(&dir)? } else { Index::create_in_dir(&dir, schema())? };
    analyzers::register(index.tokenizers(), &[ANALYZER]);
    let s = index.schema();
    let get = |n: &str| s.get_field(n).map_err(|_| SearchError::Index(format!("index files lack the field {n}")));
    let fields = Fields { id: get("_id")?, subject: get("s")?, predicate: get("p")?, language: get("lang")?, datatype: get("dt")?, text: get("o")? };
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    let seq = index.load_metas()?.payload.and_then(|p| serde_json::from_str::<Value>(&p).ok()).and_then(|v| v["seq"].as_u64()).unwrap_or(0);
    let files = Arc::new(RdfTextIndex { index, reader, fields, seq: Mutex::new(seq), writing: Mutex::new(()), settings: settings.clone() });
    open.insert(dir, files.clone());
    Ok(files)
}

/// The database's literal index, brought up to its sequence.
pub fn refresh(db: &Database, db_name: &str) -> Result<Arc<RdfTextIndex>> {
    let settings = RdfTextSettings::of(db)?;
    let files = open(db, &settings)?;
    let target = |db: &Database| -> Result<u64> {
        let s = db.store().snapshot()?;
        Ok(keys::u64_value(s.kv().get(DB_META, keys::meta::UPDATE_SEQ)?, "update_seq")?)
    };
    if *files.seq.lock().unwrap_or_else(|e| e.into_inner()) >= target(db)? {
        return Ok(files);
    }
    let writer_of = files.clone();
    let _writing = writer_of.writing.lock().unwrap_or_else(|e| e.into_inner());
    let from = *files.seq.lock().unwrap_or_else(|e| e.into_inner());
    let first_target = target(db)?;
    if from >= first_target {
        return Ok(files);
    }
    let task = IndexerTask::start(db_name, SETTINGS_DOC, from, first_target);
    let mut writer: IndexWriter<TantivyDocument> = files.index.writer_with_num_threads(build::WRITER_THREADS, build::WRITER_BYTES)?;
    let (fields, settings) = (&files.fields, &files.settings);
    let produce = move |send: SyncSender<build::Batch<u64>>| -> Result<()> {
        let mut from = from;
        loop {
            let snapshot = db.store().snapshot()?;
            let target = keys::u64_value(snapshot.kv().get(DB_META, keys::meta::UPDATE_SEQ)?, "update_seq")?;
            if from >= target {
                return Ok(());
            }
            let (changed, reached) = rhizome_docs::secondary::changed_since(snapshot.kv(), from, target, BATCH)?;
            let mut docs = Vec::with_capacity(changed.len());
            for (_, doc_id) in changed {
                let literals = literal_documents(db, &snapshot, fields, settings, &doc_id)?;
                docs.push((doc_id, literals));
            }
            from = reached;
            if send.send(build::Batch { docs, state: reached }).is_err() {
                // The writer stopped (its error is the build's).
                return Ok(());
            }
        }
    };
    build::run(&mut writer, files.fields.id, produce, |seq| json!({ "seq": seq }).to_string(), |reached| {
        files.reader.reload()?;
        *files.seq.lock().unwrap_or_else(|e| e.into_inner()) = reached;
        task.progress(reached);
        Ok(())
    })?;
    Ok(files)
}

/// The index documents of one changed database document's literals, read
/// from `snapshot`: none when it is a design document, deleted, or has
/// no graph.
fn literal_documents(db: &Database, snapshot: &StoreSnapshot, fields: &Fields, settings: &RdfTextSettings, doc_id: &str) -> Result<Vec<TantivyDocument>> {
    let mut out = Vec::new();
    if doc_id.starts_with("_design/") {
        return Ok(out);
    }
    let Some(info) = snapshot.kv().get(keys::DOCS, doc_id.as_bytes())? else { return Ok(out) };
    if DocInfo::from_bytes(doc_id, &info)?.deleted {
        return Ok(out);
    }
    let Some(graph) = db.doc_graph_iri(doc_id) else { return Ok(out) };
    let Some(g) = snapshot.lookup(oxrdf::NamedNodeRef::new_unchecked(&graph).into())? else { return Ok(out) };
    for quad in snapshot.scan(QuadPattern { s: None, p: None, o: None, g: Some(g) }) {
        let [s, p, o, _] = quad?;
        let Some(oxrdf::Term::Literal(lit)) = snapshot.decode(o)? else { continue };
        let datatype = lit.datatype();
        let language = lit.language().unwrap_or("");
        if datatype != oxrdf::vocab::xsd::STRING && datatype != oxrdf::vocab::rdf::LANG_STRING {
            continue;
        }
        let (Some(oxrdf::Term::NamedNode(pred)), Some(subject)) = (snapshot.decode(p)?, snapshot.decode(s)?) else { continue };
        if !settings.keeps(pred.as_str(), language) {
            continue;
        }
        let subject = match subject {
            oxrdf::Term::NamedNode(n) => n.into_string(),
            oxrdf::Term::BlankNode(b) => format!("_:{}", b.as_str()),
            _ => continue,
        };
        let mut d = TantivyDocument::default();
        d.add_text(fields.id, doc_id);
        d.add_text(fields.subject, &subject);
        d.add_text(fields.predicate, pred.as_str());
        d.add_text(fields.language, language);
        d.add_text(fields.datatype, datatype.as_str());
        d.add_text(fields.text, lit.value());
        out.push(d);
    }
    Ok(out)
}

/// One hit: the literal's subject (an IRI, or `_:` and a blank node's
/// label), its text, language and datatype, and the score.
#[derive(Clone, Debug)]
pub struct LiteralHit {
    pub subject: String,
    pub text: String,
    pub language: String,
    pub datatype: String,
    pub score: f64,
}

/// Literals matching `query` (Lucene's syntax), of `predicate` if given,
/// best first, at most `limit`.
pub fn search(files: &RdfTextIndex, query: &str, predicate: Option<&str>, limit: usize) -> Result<Vec<LiteralHit>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let parser = QueryParser::for_index(&files.index, vec![files.fields.text]);
    // Lucene's `word*` is a prefix, which tantivy's parser takes only in
    // phrases: bare prefixes become prefix queries beside the rest (as
    // optional clauses, Lucene's default operator).
    let (prefixes, words): (Vec<&str>, Vec<&str>) = query.split(' ').partition(|w| w.strip_suffix('*').is_some_and(|s| !s.is_empty() && s.chars().all(char::is_alphanumeric)));
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    let rest = words.join(" ");
    if !rest.trim().is_empty() {
        let ast = tantivy::query_grammar::parse_query(&rest).map_err(|_| SearchError::QueryParse(format!("cannot parse text query `{query}`")))?;
        let parsed = parser
            .build_query_from_user_input_ast(crate::query::lucene_negation(ast))
            .map_err(|e| SearchError::QueryParse(format!("cannot parse text query `{query}`: {e}")))?;
        clauses.push((Occur::Should, parsed));
    }
    for p in prefixes {
        let stem = p.trim_end_matches('*').to_lowercase();
        clauses.push((Occur::Should, Box::new(PhrasePrefixQuery::new(vec![Term::from_field_text(files.fields.text, &stem)]))));
    }
    let parsed: Box<dyn Query> = match clauses.len() {
        1 => clauses.pop().map(|(_, q)| q).expect("one clause"),
        _ => Box::new(BooleanQuery::new(clauses)),
    };
    let full: Box<dyn Query> = match predicate {
        Some(p) => Box::new(BooleanQuery::new(vec![(Occur::Must, parsed), (Occur::Must, Box::new(TermQuery::new(Term::from_field_text(files.fields.predicate, p), IndexRecordOption::Basic)))])),
        None => parsed,
    };
    let searcher = files.reader.searcher();
    let top = searcher.search(&full, &TopDocs::with_limit(limit))?;
    let mut out = Vec::with_capacity(top.len());
    for (score, addr) in top {
        let d: TantivyDocument = searcher.doc(addr)?;
        let get = |f: Field| d.get_first(f).and_then(|v| v.as_str()).unwrap_or("").to_owned();
        out.push(LiteralHit { subject: get(files.fields.subject), text: get(files.fields.text), language: get(files.fields.language), datatype: get(files.fields.datatype), score: score as f64 });
    }
    Ok(out)
}
