//! Nouveau queries: Lucene's query syntax (parsed by tantivy's grammar,
//! turned into queries here so that each field is read as the kind the
//! index function gave it), sort, paging by bookmark, counts and ranges,
//! answered in the shape of CouchDB's `_nouveau` endpoint
//! (https://docs.couchdb.org/en/stable/api/ddoc/nouveau.html).

use crate::analyzers;
use crate::index::{FieldKind, IndexFiles, IndexState};
use crate::{Result, SearchError};
use base64::Engine;
use rhizome_docs::{Database, ReadOptions};
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::query::{AllQuery, BooleanQuery, BoostQuery, EmptyQuery, ExistsQuery, InvertedIndexRangeQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, TermQuery};
use tantivy::query_grammar::{Delimiter, UserInputAst, UserInputBound, UserInputLeaf, UserInputLiteral};
use tantivy::schema::{Field, IndexRecordOption, OwnedValue};
use tantivy::{DocAddress, DocId, Score, SegmentReader, TantivyDocument, Term};

/// A search, as `GET|POST .../_nouveau/{index}` gives it.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub q: String,
    pub limit: usize,
    /// Sort fields, `[-]name[<double|string>]` or `relevance`.
    pub sort: Vec<String>,
    pub bookmark: Option<String>,
    pub include_docs: bool,
    pub counts: Option<Vec<String>>,
    pub ranges: Option<Map<String, Value>>,
    pub update: bool,
}

impl Default for SearchRequest {
    fn default() -> Self {
        SearchRequest { q: String::new(), limit: 25, sort: Vec::new(), bookmark: None, include_docs: false, counts: None, ranges: None, update: true }
    }
}

fn parse_err(m: impl Into<String>) -> SearchError {
    SearchError::QueryParse(m.into())
}

/// Lucene's `a AND NOT b` is `+a -b`; tantivy's grammar reads it as
/// `+a +(-b)`, a required group of only negative clauses, which matches
/// nothing, so the whole query found nothing. Such a group under a required
/// clause is spliced into its parent as the negative clauses it holds.
pub(crate) fn lucene_negation(ast: UserInputAst) -> UserInputAst {
    match ast {
        UserInputAst::Clause(clauses) => {
            let mut out = Vec::with_capacity(clauses.len());
            for (occur, sub) in clauses {
                match lucene_negation(sub) {
                    UserInputAst::Clause(inner) if occur == Some(Occur::Must) && !inner.is_empty() && inner.iter().all(|(o, _)| *o == Some(Occur::MustNot)) => out.extend(inner),
                    sub => out.push((occur, sub)),
                }
            }
            UserInputAst::Clause(out)
        }
        UserInputAst::Boost(sub, boost) => UserInputAst::Boost(Box::new(lucene_negation(*sub)), boost),
        leaf => leaf,
    }
}

/// Reads Lucene's syntax into a tantivy query over `files`' fields.
struct Planner<'a> {
    files: &'a IndexFiles,
    state: &'a IndexState,
}

impl Planner<'_> {
    fn ast(&self, ast: UserInputAst) -> Result<Box<dyn Query>> {
        Ok(match ast {
            UserInputAst::Clause(clauses) => {
                // Lucene's default operator is OR: an unmarked clause is SHOULD.
                let mut out: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(clauses.len());
                for (occur, sub) in clauses {
                    out.push((occur.unwrap_or(Occur::Should), self.ast(sub)?));
                }
                Box::new(BooleanQuery::new(out))
            }
            UserInputAst::Boost(sub, boost) => Box::new(BoostQuery::new(self.ast(*sub)?, boost as Score)),
            UserInputAst::Leaf(leaf) => self.leaf(*leaf)?,
        })
    }

    fn kind(&self, name: &str) -> Option<FieldKind> {
        self.state.kinds.get(name).copied()
    }

    fn json_term(&self, field: Field, name: &str) -> Term {
        Term::from_field_json_path(field, &json_path(name), false)
    }

    fn leaf(&self, leaf: UserInputLeaf) -> Result<Box<dyn Query>> {
        match leaf {
            UserInputLeaf::All => Ok(Box::new(AllQuery)),
            UserInputLeaf::Literal(lit) => self.literal(lit),
            UserInputLeaf::Range { field, lower, upper } => self.range(field.as_deref().unwrap_or("default"), lower, upper),
            UserInputLeaf::Set { field, elements } => {
                let name = field.unwrap_or_else(|| "default".to_owned());
                let mut out: Vec<(Occur, Box<dyn Query>)> = Vec::new();
                for e in elements {
                    let lit = UserInputLiteral { field_name: Some(name.clone()), phrase: e, delimiter: Delimiter::None, slop: 0, prefix: false };
                    out.push((Occur::Should, self.literal(lit)?));
                }
                Ok(Box::new(BooleanQuery::new(out)))
            }
            UserInputLeaf::Exists { field } => Ok(match self.kind(&field) {
                Some(FieldKind::String) => Box::new(ExistsQuery::new(format!("string.{}", json_path(&field)), false)),
                Some(FieldKind::Double) => Box::new(ExistsQuery::new(format!("double.{}", json_path(&field)), false)),
                Some(FieldKind::Text) => return Err(parse_err(format!("{field}:* is for string and double fields; {field} is a text field"))),
                _ => Box::new(EmptyQuery),
            }),
        }
    }

    fn literal(&self, mut lit: UserInputLiteral) -> Result<Box<dyn Query>> {
        // tantivy's grammar keeps a bare word's trailing `*` in the word
        // (its prefix form is `"phrase"*`); Lucene's `word*` is a prefix.
        if lit.delimiter == Delimiter::None && !lit.prefix && lit.phrase.len() > 1 && lit.phrase.ends_with('*') && !lit.phrase.ends_with("\\*") {
            lit.phrase.pop();
            lit.prefix = true;
        }
        let name = lit.field_name.clone().unwrap_or_else(|| "default".to_owned());
        let fields = &self.files.fields;
        if name == "_id" {
            let term = Term::from_field_text(fields.id, &lit.phrase);
            return Ok(if lit.prefix { Box::new(PhrasePrefixQuery::new(vec![term])) } else { Box::new(TermQuery::new(term, IndexRecordOption::Basic)) });
        }
        match self.kind(&name) {
            None | Some(FieldKind::Stored) => Ok(Box::new(EmptyQuery)),
            Some(FieldKind::String) => {
                let mut term = self.json_term(fields.string, &name);
                term.append_type_and_str(&lit.phrase);
                Ok(if lit.prefix { Box::new(PhrasePrefixQuery::new(vec![term])) } else { Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)) })
            }
            Some(FieldKind::Double) => {
                let v = number(&lit.phrase).ok_or_else(|| parse_err(format!("{name} is a double field; `{}` is not a number", lit.phrase)))?;
                let mut term = self.json_term(fields.double, &name);
                term.append_type_and_fast_value(v);
                Ok(Box::new(TermQuery::new(term, IndexRecordOption::Basic)))
            }
            Some(FieldKind::Text) => {
                let analyzer = self.files.def.analyzer_of(&name);
                let field = fields.text_for(analyzer);
                if lit.prefix && lit.delimiter == Delimiter::None {
                    // A prefix is not analyzed (it is no word yet), only
                    // normalized, as Lucene's `Analyzer.normalize`.
                    let prefix = if matches!(analyzer, "keyword" | "whitespace") { lit.phrase.clone() } else { lit.phrase.to_lowercase() };
                    let mut term = self.json_term(field, &name);
                    term.append_type_and_str(&prefix);
                    return Ok(Box::new(PhrasePrefixQuery::new(vec![term])));
                }
                let tokens = analyzers::tokens(analyzer, &lit.phrase)?;
                let mut terms: Vec<(usize, Term)> = Vec::with_capacity(tokens.len());
                for (i, t) in tokens.iter().enumerate() {
                    let mut term = self.json_term(field, &name);
                    term.append_type_and_str(t);
                    terms.push((i, term));
                }
                Ok(match terms.len() {
                    0 => Box::new(EmptyQuery),
                    1 if !lit.prefix => Box::new(TermQuery::new(terms.pop().map(|(_, t)| t).expect("one term"), IndexRecordOption::WithFreqs)),
                    _ if lit.prefix => Box::new(PhrasePrefixQuery::new_with_offset(terms)),
                    _ => Box::new(PhraseQuery::new_with_offset_and_slop(terms, lit.slop)),
                })
            }
        }
    }

    fn range(&self, name: &str, lower: UserInputBound, upper: UserInputBound) -> Result<Box<dyn Query>> {
        let fields = &self.files.fields;
        let bound = |b: UserInputBound, make: &dyn Fn(&str) -> Result<Term>| -> Result<Bound<Term>> {
            Ok(match b {
                UserInputBound::Inclusive(s) if s == "*" => Bound::Unbounded,
                UserInputBound::Exclusive(s) if s == "*" => Bound::Unbounded,
                UserInputBound::Inclusive(s) => Bound::Included(make(&s)?),
                UserInputBound::Exclusive(s) => Bound::Excluded(make(&s)?),
                UserInputBound::Unbounded => Bound::Unbounded,
            })
        };
        let (field, kind) = match self.kind(name) {
            Some(k @ FieldKind::Double) => (fields.double, k),
            Some(k @ FieldKind::String) => (fields.string, k),
            Some(k @ FieldKind::Text) => (fields.text_for(self.files.def.analyzer_of(name)), k),
            _ => return Ok(Box::new(EmptyQuery)),
        };
        let make = |s: &str| -> Result<Term> {
            let mut t = self.json_term(field, name);
            if kind == FieldKind::Double {
                t.append_type_and_fast_value(number(s).ok_or_else(|| parse_err(format!("{name} is a double field; `{s}` is not a number")))?);
            } else {
                t.append_type_and_str(s);
            }
            Ok(t)
        };
        let (lo, hi) = (bound(lower, &make)?, bound(upper, &make)?);
        // The term dictionary is in value order (doubles are stored so that
        // their bytes sort as their values), so a range is a walk of it.
        let (lo, hi) = match (lo, hi) {
            (Bound::Unbounded, hi) => (Bound::Included(self.json_term_min(field, name, kind)), hi),
            (lo, Bound::Unbounded) => (lo, self.json_term_max(field, name, kind)),
            other => other,
        };
        Ok(Box::new(InvertedIndexRangeQuery::new(lo, hi)))
    }

    /// The least term of a JSON path of one kind.
    fn json_term_min(&self, field: Field, name: &str, kind: FieldKind) -> Term {
        let mut t = self.json_term(field, name);
        if kind == FieldKind::Double {
            t.append_type_and_fast_value(f64::NEG_INFINITY);
        } else {
            t.append_type_and_str("");
        }
        t
    }

    fn json_term_max(&self, field: Field, name: &str, kind: FieldKind) -> Bound<Term> {
        let mut t = self.json_term(field, name);
        if kind == FieldKind::Double {
            t.append_type_and_fast_value(f64::INFINITY);
            Bound::Included(t)
        } else {
            // Past every string: the bytes after the path's string type.
            t.append_type_and_str("\u{10FFFF}\u{10FFFF}\u{10FFFF}\u{10FFFF}");
            Bound::Included(t)
        }
    }
}

/// A field name as a JSON path of one segment: an index function's
/// names are keys of one object (`a.b` is the key `a.b`, not `a` then
/// `b`), so the path's dots and backslashes are escaped.
fn json_path(name: &str) -> String {
    name.replace('\\', "\\\\").replace('.', "\\.")
}

fn number(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// One sort field.
#[derive(Clone, Debug)]
enum SortBy {
    Relevance { descending: bool },
    Double { name: String, descending: bool },
    String { name: String, descending: bool },
}

fn sort_fields(spec: &[String], state: &IndexState) -> Result<Vec<SortBy>> {
    let mut out = Vec::new();
    for s in spec {
        let (descending, rest) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s.as_str()),
        };
        let (name, typ) = match rest.strip_suffix('>').and_then(|r| r.split_once('<')) {
            Some((n, t)) => (n, Some(t)),
            None => (rest, None),
        };
        if name == "relevance" && typ.is_none() {
            // Relevance is best first; `-relevance` is worst first.
            out.push(SortBy::Relevance { descending: !descending });
            continue;
        }
        let kind = match typ {
            Some("double") => FieldKind::Double,
            Some("string") => FieldKind::String,
            Some(t) => return Err(parse_err(format!("{s}: sort type must be double or string, not {t}"))),
            None => match state.kinds.get(name) {
                Some(k @ (FieldKind::Double | FieldKind::String)) => *k,
                _ => FieldKind::String,
            },
        };
        out.push(match kind {
            FieldKind::Double => SortBy::Double { name: name.to_owned(), descending },
            _ => SortBy::String { name: name.to_owned(), descending },
        });
    }
    if out.is_empty() {
        out.push(SortBy::Relevance { descending: true });
    }
    Ok(out)
}

/// A sort value of a hit.
#[derive(Clone, Debug, PartialEq)]
enum SortValue {
    Float(f64),
    Double(f64),
    Str(String),
    /// A hit without the sort field: after those with it.
    Missing,
}

impl SortValue {
    fn to_json(&self) -> Value {
        match self {
            SortValue::Float(v) => json!({ "@type": "float", "value": v }),
            SortValue::Double(v) => json!({ "@type": "double", "value": v }),
            SortValue::Str(s) => json!({ "@type": "string", "value": s }),
            SortValue::Missing => json!({ "@type": "null", "value": null }),
        }
    }

    fn from_json(v: &Value) -> Option<SortValue> {
        Some(match v["@type"].as_str()? {
            "float" => SortValue::Float(v["value"].as_f64()?),
            "double" => SortValue::Double(v["value"].as_f64()?),
            "string" => SortValue::Str(v["value"].as_str()?.to_owned()),
            "null" => SortValue::Missing,
            _ => return None,
        })
    }

    fn cmp_asc(&self, other: &SortValue) -> Ordering {
        use SortValue::*;
        match (self, other) {
            (Missing, Missing) => Ordering::Equal,
            (Missing, _) => Ordering::Greater,
            (_, Missing) => Ordering::Less,
            (Float(a) | Double(a), Float(b) | Double(b)) => a.total_cmp(b),
            (Str(a), Str(b)) => a.cmp(b),
            (Str(_), _) => Ordering::Greater,
            (_, Str(_)) => Ordering::Less,
        }
    }
}

/// A hit's place in the order: its sort values, then its id; greater is
/// earlier (tantivy keeps the greatest). Hits at or before the bookmark
/// are `excluded`, below every other.
#[derive(Clone, Debug)]
struct OrderKey {
    values: Vec<SortValue>,
    descending: std::sync::Arc<Vec<bool>>,
    excluded: bool,
}

/// Whether `a` comes before `b` in the results (`Less`: a is first).
fn result_order(a: &[SortValue], b: &[SortValue], descending: &[bool]) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let o = x.cmp_asc(y);
        let o = if descending.get(i).copied().unwrap_or(false) { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

impl PartialEq for OrderKey {
    fn eq(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

impl PartialOrd for OrderKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(match (self.excluded, other.excluded) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            // Earlier in the results is greater.
            (false, false) => result_order(&self.values, &other.values, &self.descending).reverse(),
        })
    }
}

/// Reads a hit's sort values in one segment.
struct SegmentSorter {
    sort: Vec<(SortBy, Option<tantivy::columnar::Column<f64>>, Option<tantivy::columnar::StrColumn>)>,
    ids: Option<tantivy::columnar::StrColumn>,
}

impl SegmentSorter {
    fn new(seg: &SegmentReader, sort: &[SortBy]) -> SegmentSorter {
        let ff = seg.fast_fields();
        let sort = sort
            .iter()
            .map(|s| match s {
                SortBy::Double { name, .. } => (s.clone(), ff.column_opt::<f64>(&format!("double.{}", json_path(name))).ok().flatten(), None),
                SortBy::String { name, .. } => (s.clone(), None, ff.str(&format!("string.{}", json_path(name))).ok().flatten()),
                SortBy::Relevance { .. } => (s.clone(), None, None),
            })
            .collect();
        SegmentSorter { sort, ids: ff.str("_id").ok().flatten() }
    }

    fn values(&self, doc: DocId, score: Score) -> Vec<SortValue> {
        let mut out = Vec::with_capacity(self.sort.len() + 1);
        for (by, num, text) in &self.sort {
            out.push(match by {
                SortBy::Relevance { .. } => SortValue::Float(score as f64),
                SortBy::Double { descending, .. } => {
                    let vals = num.as_ref().map(|c| c.values_for_doc(doc).collect::<Vec<f64>>()).unwrap_or_default();
                    // Of several values, the one that sorts first.
                    let v = if *descending { vals.into_iter().reduce(f64::max) } else { vals.into_iter().reduce(f64::min) };
                    v.map_or(SortValue::Missing, SortValue::Double)
                }
                SortBy::String { .. } => match text.as_ref().and_then(|c| c.term_ords(doc).next().map(|o| (c, o))) {
                    Some((c, ord)) => {
                        let mut s = String::new();
                        let _ = c.ord_to_str(ord, &mut s);
                        SortValue::Str(s)
                    }
                    None => SortValue::Missing,
                },
            });
        }
        out.push(match self.ids.as_ref().and_then(|c| c.term_ords(doc).next().map(|o| (c, o))) {
            Some((c, ord)) => {
                let mut s = String::new();
                let _ = c.ord_to_str(ord, &mut s);
                SortValue::Str(s)
            }
            None => SortValue::Missing,
        });
        out
    }
}

fn encode_bookmark(values: &[SortValue]) -> String {
    let v = Value::Array(values.iter().map(SortValue::to_json).collect());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

fn decode_bookmark(b: &str) -> Result<Vec<SortValue>> {
    let bad = || SearchError::BadRequest("Invalid bookmark".into());
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b.trim()).map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    v.as_array().ok_or_else(bad)?.iter().map(|x| SortValue::from_json(x).ok_or_else(bad)).collect()
}

/// Runs `req` on an index already brought up to date (or not, with
/// `update=false`): Nouveau's answer as JSON.
pub fn search(db: &Database, files: &IndexFiles, req: &SearchRequest) -> Result<Value> {
    let state = files.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // Lucene's match-all `*:*` is tantivy's `*`.
    let q = req.q.replace("*:*", "*");
    let ast = tantivy::query_grammar::parse_query(&q).map_err(|_| parse_err(format!("cannot parse query `{}`", req.q)))?;
    let query = Planner { files, state: &state }.ast(lucene_negation(ast))?;
    search_query(db, files, req, query)
}

/// The phrase `text` in the text field `name`, analyzed as that field is
/// (Lucene's `name:"text"`), whatever characters `text` holds.
pub(crate) fn phrase(files: &IndexFiles, name: &str, text: &str) -> Result<Box<dyn Query>> {
    let state = files.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let lit = UserInputLiteral { field_name: Some(name.to_owned()), phrase: text.to_owned(), delimiter: Delimiter::DoubleQuotes, slop: 0, prefix: false };
    Planner { files, state: &state }.literal(lit)
}

/// The ids of every document holding the phrase `text` in `name`.
pub(crate) fn phrase_ids(files: &IndexFiles, name: &str, text: &str) -> Result<Vec<String>> {
    let query = phrase(files, name, text)?;
    let searcher = files.reader.searcher();
    let matched = searcher.search(&query, &DocSetCollector)?;
    let mut ids = Vec::with_capacity(matched.len());
    for (seg, docs) in by_segment(&matched) {
        let Some(col) = searcher.segment_reader(seg).fast_fields().str("_id").ok().flatten() else { continue };
        for d in docs {
            if let Some(ord) = col.term_ords(d).next() {
                let mut s = String::new();
                if col.ord_to_str(ord, &mut s).unwrap_or(false) {
                    ids.push(s);
                }
            }
        }
    }
    Ok(ids)
}

/// The bookmark that resumes a search after the hit whose `order` is this.
pub(crate) fn bookmark_of(order: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(order.to_string())
}

/// [`search`] of a query already built.
pub(crate) fn search_query(db: &Database, files: &IndexFiles, req: &SearchRequest, query: Box<dyn Query>) -> Result<Value> {
    if req.limit == 0 {
        return Err(parse_err("limit parameter must be greater than zero"));
    }
    let state = files.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let sort = sort_fields(&req.sort, &state)?;
    let mut descending: Vec<bool> = sort
        .iter()
        .map(|s| match s {
            SortBy::Relevance { descending } | SortBy::Double { descending, .. } | SortBy::String { descending, .. } => *descending,
        })
        .collect();
    descending.push(false); // the id, ascending
    let descending = std::sync::Arc::new(descending);
    let after = match &req.bookmark {
        Some(b) if !b.is_empty() => Some(decode_bookmark(b)?),
        _ => None,
    };
    let searcher = files.reader.searcher();
    let top = {
        let (sort, descending, after) = (sort.clone(), descending.clone(), after.clone());
        TopDocs::with_limit(req.limit).tweak_score(move |seg: &SegmentReader| {
            let sorter = SegmentSorter::new(seg, &sort);
            let (descending, after) = (descending.clone(), after.clone());
            move |doc: DocId, score: Score| {
                let values = sorter.values(doc, score);
                let excluded = after.as_ref().is_some_and(|a| result_order(&values, a, &descending) != Ordering::Greater);
                OrderKey { values, descending: descending.clone(), excluded }
            }
        })
    };
    let (total, top) = searcher.search(&query, &(Count, top))?;
    let mut hits = Vec::new();
    let mut last: Option<Vec<SortValue>> = None;
    for (key, addr) in top {
        if key.excluded {
            continue;
        }
        let stored: TantivyDocument = searcher.doc(addr)?;
        let id = match key.values.last() {
            Some(SortValue::Str(s)) => s.clone(),
            _ => String::new(),
        };
        let fields = stored.get_first(files.fields.stored).map(|v| owned_to_json(&OwnedValue::from(v))).unwrap_or_else(|| json!({}));
        let mut hit = Map::new();
        hit.insert("order".into(), Value::Array(key.values.iter().map(SortValue::to_json).collect()));
        hit.insert("id".into(), Value::String(id.clone()));
        hit.insert("fields".into(), fields);
        if req.include_docs {
            let doc = db.get_doc(&id, &ReadOptions::default()).map(Value::Object).unwrap_or(Value::Null);
            hit.insert("doc".into(), doc);
        }
        hits.push(Value::Object(hit));
        last = Some(key.values);
    }
    let bookmark = match (last, &req.bookmark) {
        (Some(v), _) => encode_bookmark(&v),
        (None, Some(b)) => b.clone(),
        (None, None) => encode_bookmark(&[]),
    };
    let (counts, ranges) = if req.counts.is_some() || req.ranges.is_some() {
        let matched = searcher.search(&query, &DocSetCollector)?;
        (req.counts.as_ref().map(|c| counts(&searcher, &matched, c)), req.ranges.as_ref().map(|r| ranges(&searcher, &matched, r)).transpose()?)
    } else {
        (None, None)
    };
    Ok(json!({
        "total_hits_relation": "EQUAL_TO",
        "total_hits": total,
        "ranges": ranges,
        "counts": counts,
        "hits": hits,
        "bookmark": bookmark,
    }))
}

fn by_segment(matched: &std::collections::HashSet<DocAddress>) -> BTreeMap<u32, Vec<DocId>> {
    let mut out: BTreeMap<u32, Vec<DocId>> = BTreeMap::new();
    for a in matched {
        out.entry(a.segment_ord).or_default().push(a.doc_id);
    }
    out
}

/// For each string field, how many matching documents have each value.
fn counts(searcher: &tantivy::Searcher, matched: &std::collections::HashSet<DocAddress>, names: &[String]) -> Value {
    let segments = by_segment(matched);
    let mut out = Map::new();
    for name in names {
        let mut counted: BTreeMap<String, u64> = BTreeMap::new();
        for (seg, docs) in &segments {
            let Some(col) = searcher.segment_reader(*seg).fast_fields().str(&format!("string.{}", json_path(name))).ok().flatten() else { continue };
            let mut per_ord: HashMap<u64, u64> = HashMap::new();
            for d in docs {
                let mut ords: Vec<u64> = col.term_ords(*d).collect();
                ords.dedup();
                for o in ords {
                    *per_ord.entry(o).or_default() += 1;
                }
            }
            for (ord, n) in per_ord {
                let mut s = String::new();
                if col.ord_to_str(ord, &mut s).unwrap_or(false) {
                    *counted.entry(s).or_default() += n;
                }
            }
        }
        out.insert(name.clone(), Value::Object(counted.into_iter().map(|(k, n)| (k, Value::from(n))).collect()));
    }
    Value::Object(out)
}

/// For each double field, how many matching documents fall in each
/// labelled range (`{"label", "min", "max", "min_inclusive",
/// "max_inclusive"}`, inclusive and unbounded by default).
fn ranges(searcher: &tantivy::Searcher, matched: &std::collections::HashSet<DocAddress>, spec: &Map<String, Value>) -> Result<Value> {
    let segments = by_segment(matched);
    let mut out = Map::new();
    for (name, list) in spec {
        let list = list.as_array().ok_or_else(|| parse_err("range values must be lists of objects"))?;
        let mut parsed = Vec::with_capacity(list.len());
        for r in list {
            let o = r.as_object().ok_or_else(|| parse_err("all values in ranges parameter must be objects"))?;
            let label = o.get("label").and_then(Value::as_str).ok_or_else(|| parse_err("each range needs a label (a string)"))?.to_owned();
            let num = |k: &str, default: f64| -> Result<f64> {
                match o.get(k) {
                    None | Some(Value::Null) => Ok(default),
                    Some(v) => v.as_f64().ok_or_else(|| parse_err(format!("{k} of range {label} must be a number"))),
                }
            };
            let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(true);
            parsed.push((label.clone(), num("min", f64::NEG_INFINITY)?, flag("min_inclusive"), num("max", f64::INFINITY)?, flag("max_inclusive")));
        }
        let mut counted: Map<String, Value> = parsed.iter().map(|(l, ..)| (l.clone(), Value::from(0u64))).collect();
        let mut totals = vec![0u64; parsed.len()];
        for (seg, docs) in &segments {
            let Some(col) = searcher.segment_reader(*seg).fast_fields().column_opt::<f64>(&format!("double.{}", json_path(name))).ok().flatten() else { continue };
            for d in docs {
                let vals: Vec<f64> = col.values_for_doc(*d).collect();
                for (i, (_, min, min_inc, max, max_inc)) in parsed.iter().enumerate() {
                    let inside = |v: f64| (if *min_inc { v >= *min } else { v > *min }) && (if *max_inc { v <= *max } else { v < *max });
                    if vals.iter().any(|v| inside(*v)) {
                        totals[i] += 1;
                    }
                }
            }
        }
        for (i, (label, ..)) in parsed.iter().enumerate() {
            counted.insert(label.clone(), Value::from(totals[i]));
        }
        out.insert(name.clone(), Value::Object(counted));
    }
    Ok(Value::Object(out))
}

fn owned_to_json(v: &OwnedValue) -> Value {
    match v {
        OwnedValue::Null => Value::Null,
        OwnedValue::Str(s) => Value::String(s.clone()),
        OwnedValue::F64(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        OwnedValue::I64(i) => Value::from(*i),
        OwnedValue::U64(u) => Value::from(*u),
        OwnedValue::Bool(b) => Value::Bool(*b),
        OwnedValue::Array(a) => Value::Array(a.iter().map(owned_to_json).collect()),
        OwnedValue::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), owned_to_json(v))).collect()),
        _ => Value::Null,
    }
}
