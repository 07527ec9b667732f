//! JSON-LD compaction of a document's graph against the document's own
//! `@context` (https://www.w3.org/TR/json-ld11-api/#compaction-algorithms),
//! for the context shapes documents use: term definitions for IRIs,
//! `@type` coercion to `@id`, `@vocab` or a datatype, `@language` (on the
//! context and on terms), `@container` `@list`, `@set` and `@language`,
//! `@vocab`, `@base` and prefixes. `oxjsonld` reads JSON-LD and writes
//! expanded JSON-LD but does not compact, so a graph write (SPARQL Update,
//! the Graph Store Protocol) uses this to give the document back its own
//! shape.
//!
//! Where a term cannot express a value faithfully (another datatype, a
//! language the term does not fix, a definition this module does not know:
//! scoped contexts, `@reverse`, `@nest`, `@index` containers, ...) the
//! property falls back to the expanded form, its full IRI as key and the
//! value as a value object: still correct JSON-LD under the same context.
//! The caller checks the result by reading it back ([`crate::graph_write`]).
//!
//! From RDF (https://www.w3.org/TR/json-ld11-api/#serialize-rdf-as-json-ld-algorithm):
//! well-formed `rdf:first`/`rdf:rest` chains of blank nodes become `@list`s;
//! canonical `xsd:integer`, `xsd:double` and `xsd:boolean` literals become
//! JSON numbers and booleans when reading them back gives the same literal;
//! a node referenced exactly once (and not named at the top level of the
//! original document) is embedded where it is referenced, so nested objects
//! come back nested. RDF 1.2 triple terms become embedded nodes
//! ([`crate::triple_terms`]) in expanded form, which any context reads the
//! same; a blank node one names keeps its label.

use oxrdf::vocab::{rdf, xsd};
use oxrdf::{Literal, NamedOrBlankNode, Term, Triple};
use serde_json::{Map, Number, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// How a term coerces the values of its property.
#[derive(Clone, Debug, PartialEq, Eq)]
enum TypeMapping {
    Id,
    Vocab,
    Datatype(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Container {
    #[default]
    None,
    List,
    Set,
    Language { set: bool },
}

#[derive(Clone, Debug)]
struct TermDefinition {
    /// `None`: the term is mapped to `null` (its members are not RDF).
    iri: Option<String>,
    type_mapping: Option<TypeMapping>,
    /// `Some(None)`: `"@language": null` on the term.
    language: Option<Option<String>>,
    container: Container,
    /// Usable as the prefix of a compact IRI.
    prefix: bool,
    /// A definition this module does not compact with (scoped context,
    /// `@reverse`, `@nest`, other containers): never chosen as a key.
    opaque: bool,
}

/// A document's context, as far as compaction needs it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Context {
    terms: HashMap<String, TermDefinition>,
    vocab: Option<String>,
    language: Option<String>,
    /// Something in the context this module does not follow (a remote
    /// context it was not given, `@import`, `@direction`): only the
    /// expanded form is used.
    opaque: bool,
    /// Terms that alias `@id` or `@type` (`"id": "@id"`, as Activity
    /// Streams, Verifiable Credentials and Web Annotation define), by term.
    aliases: HashMap<String, &'static str>,
}

/// How deep nodes are embedded in one another, and lists in lists: a
/// graph written through SPARQL can chain any number of nodes, and the
/// rendering recurses (serde_json reads at most 128 levels back anyway).
const MAX_NESTING: usize = 32;

const GEN_DELIMS: &[char] = &[':', '/', '?', '#', '[', ']', '@'];

fn is_keyword(s: &str) -> bool {
    s.starts_with('@') && s.len() > 1 && s[1..].chars().all(|c| c.is_ascii_alphabetic())
}

impl Context {
    /// The active context of `value` (an object, an array of them, `null`).
    #[cfg(test)]
    pub(crate) fn parse(value: &Value) -> Context {
        Context::parse_with(value, &crate::contexts::Resolved::default())
    }

    /// The active context of `value`, remote contexts (URLs) read from
    /// `remote`; one `remote` lacks makes the context opaque.
    pub(crate) fn parse_with(value: &Value, remote: &crate::contexts::Resolved) -> Context {
        let mut ctx = Context::default();
        ctx.process(value, remote, 0);
        ctx
    }

    fn process(&mut self, value: &Value, remote: &crate::contexts::Resolved, depth: usize) {
        match value {
            Value::Null => *self = Context::default(),
            Value::Array(items) => {
                for item in items {
                    self.process(item, remote, depth);
                }
            }
            Value::Object(map) => self.process_object(map),
            // A remote context is processed where it stands, as JSON-LD's
            // context processing does (its `@base` aside, which this
            // module does not use).
            Value::String(url) => match remote.context(url) {
                Some(context) if depth < crate::contexts::MAX_REMOTE_DEPTH => self.process(context, remote, depth + 1),
                _ => self.opaque = true,
            },
            _ => self.opaque = true,
        }
    }

    fn process_object(&mut self, map: &Map<String, Value>) {
        for key in ["@import", "@direction", "@propagate"] {
            if map.contains_key(key) {
                self.opaque = true;
            }
        }
        match map.get("@language") {
            Some(Value::String(l)) => self.language = Some(l.to_ascii_lowercase()),
            Some(Value::Null) => self.language = None,
            Some(_) => self.opaque = true,
            None => {}
        }
        let raw: BTreeMap<&str, &Value> = map.iter().filter(|(k, _)| !is_keyword(k)).map(|(k, v)| (k.as_str(), v)).collect();
        // @vocab may itself be a term or compact IRI of this context.
        match map.get("@vocab") {
            Some(Value::String(v)) => match self.expand_raw(v, &raw, true, 0) {
                Some(iri) if iri.contains(':') => self.vocab = Some(iri),
                _ => self.opaque = true,
            },
            Some(Value::Null) => self.vocab = None,
            Some(_) => self.opaque = true,
            None => {}
        }
        let mut defined = HashMap::new();
        for (term, def) in &raw {
            defined.insert(term.to_string(), self.define(term, def, &raw));
            let target = match def {
                Value::String(t) => Some(t.as_str()),
                Value::Object(o) => o.get("@id").and_then(Value::as_str),
                _ => None,
            };
            match target {
                Some("@id") => self.aliases.insert(term.to_string(), "@id"),
                Some("@type") => self.aliases.insert(term.to_string(), "@type"),
                _ => self.aliases.remove(*term),
            };
        }
        self.terms.extend(defined);
    }

    /// Expands `value` as an IRI with the terms of `raw` (a context being
    /// processed) and the active context.
    fn expand_raw(&self, value: &str, raw: &BTreeMap<&str, &Value>, vocab: bool, depth: usize) -> Option<String> {
        if depth > 16 || is_keyword(value) {
            return None;
        }
        if vocab {
            if let Some(def) = raw.get(value) {
                return match def {
                    Value::String(s) if s != value => self.expand_raw(s, raw, true, depth + 1),
                    Value::Object(o) => match o.get("@id") {
                        Some(Value::String(s)) if s != value => self.expand_raw(s, raw, true, depth + 1),
                        _ => None,
                    },
                    _ => None,
                };
            }
            if let Some(def) = self.terms.get(value) {
                return def.iri.clone();
            }
        }
        if let Some((prefix, suffix)) = value.split_once(':') {
            if prefix == "_" || suffix.starts_with("//") {
                return Some(value.to_owned());
            }
            if raw.contains_key(prefix) {
                return self.expand_raw(prefix, raw, true, depth + 1).map(|p| p + suffix);
            }
            if let Some(def) = self.terms.get(prefix).filter(|d| d.prefix) {
                return def.iri.clone().map(|p| p + suffix);
            }
            return Some(value.to_owned());
        }
        if vocab {
            return self.vocab.as_ref().map(|v| format!("{v}{value}"));
        }
        None
    }

    fn define(&self, term: &str, def: &Value, raw: &BTreeMap<&str, &Value>) -> TermDefinition {
        let mut out = TermDefinition { iri: None, type_mapping: None, language: None, container: Container::None, prefix: false, opaque: false };
        let from_term = |out: &mut TermDefinition| {
            out.iri = if term.contains(':') { self.expand_raw(term, raw, false, 1) } else { self.vocab.as_ref().map(|v| format!("{v}{term}")) };
        };
        match def {
            Value::Null => {}
            Value::String(id) => {
                out.iri = if id == term && !term.contains(':') { self.vocab.as_ref().map(|v| format!("{v}{term}")) } else { self.expand_raw(id, raw, true, 1) };
                out.prefix = out.iri.as_deref().is_some_and(|i| i.ends_with(GEN_DELIMS)) && !term.contains(':');
            }
            Value::Object(o) => {
                match o.get("@id") {
                    Some(Value::String(id)) if id == term => from_term(&mut out),
                    Some(Value::String(id)) => out.iri = self.expand_raw(id, raw, true, 1),
                    Some(Value::Null) => {}
                    Some(_) => out.opaque = true,
                    None => from_term(&mut out),
                }
                for key in o.keys() {
                    if !matches!(key.as_str(), "@id" | "@type" | "@language" | "@container" | "@prefix" | "@protected") {
                        out.opaque = true; // @reverse, @context, @nest, @index, @direction
                    }
                }
                match o.get("@type") {
                    None => {}
                    Some(Value::String(t)) if t == "@id" => out.type_mapping = Some(TypeMapping::Id),
                    Some(Value::String(t)) if t == "@vocab" => out.type_mapping = Some(TypeMapping::Vocab),
                    Some(Value::String(t)) if !t.starts_with('@') => match self.expand_raw(t, raw, true, 1) {
                        Some(iri) => out.type_mapping = Some(TypeMapping::Datatype(iri)),
                        None => out.opaque = true,
                    },
                    Some(_) => out.opaque = true,
                }
                match o.get("@language") {
                    None => {}
                    Some(Value::String(l)) => out.language = Some(Some(l.to_ascii_lowercase())),
                    Some(Value::Null) => out.language = Some(None),
                    Some(_) => out.opaque = true,
                }
                let containers: Vec<&str> = match o.get("@container") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::String(c)) => vec![c.as_str()],
                    Some(Value::Array(a)) => a.iter().map(|c| c.as_str().unwrap_or("?")).collect(),
                    Some(_) => vec!["?"],
                };
                out.container = match containers.as_slice() {
                    [] => Container::None,
                    ["@list"] => Container::List,
                    ["@set"] => Container::Set,
                    ["@language"] => Container::Language { set: false },
                    ["@language", "@set"] | ["@set", "@language"] => Container::Language { set: true },
                    _ => {
                        out.opaque = true;
                        Container::None
                    }
                };
                out.prefix = match o.get("@prefix") {
                    Some(Value::Bool(b)) => *b,
                    _ => false,
                };
            }
            _ => out.opaque = true,
        }
        out
    }

    /// Whether a member of a document's top level is RDF under this
    /// context (expansion keeps it); `_` members are CouchDB's, never RDF.
    pub(crate) fn is_rdf_member(&self, key: &str) -> bool {
        if key.starts_with('_') || key == "@context" {
            return false;
        }
        if key.starts_with('@') || self.aliases.contains_key(key) {
            return true;
        }
        if let Some(def) = self.terms.get(key) {
            return def.iri.is_some() || def.opaque;
        }
        key.contains(':') || self.vocab.is_some()
    }

    pub(crate) fn is_opaque(&self) -> bool {
        self.opaque
    }

    /// Whether `key` is `keyword` or a term aliasing it.
    fn is_keyword_key(&self, key: &str, keyword: &str) -> bool {
        key == keyword || self.aliases.get(key) == Some(&keyword)
    }

    /// The member of `node` holding `keyword` (`@id`, `@type`), under the
    /// keyword or an alias.
    fn keyword_member<'v>(&self, node: &'v Value, keyword: &str) -> Option<&'v Value> {
        node.as_object()?.iter().find(|(k, _)| self.is_keyword_key(k, keyword)).map(|(_, v)| v)
    }

    /// Expands an `@id` value written in the document (compact IRIs; no
    /// terms, no vocabulary), to match it against graph IRIs.
    fn expand_id(&self, value: &str, base: &oxiri::Iri<String>) -> Option<String> {
        if let Some((prefix, suffix)) = value.split_once(':') {
            if prefix == "_" {
                return None;
            }
            if !suffix.starts_with("//") {
                if let Some(def) = self.terms.get(prefix).filter(|d| d.prefix) {
                    return def.iri.clone().map(|p| p + suffix);
                }
            }
        }
        base.resolve(value).ok().map(|i| i.into_inner())
    }
}

/// An object of the graph after list folding.
#[derive(Clone, Debug)]
enum Object {
    Iri(String),
    Blank(String),
    Literal(Literal),
    List(Vec<Object>),
    /// RDF 1.2: written as an embedded node ([`crate::triple_terms`]).
    TripleTerm(Box<Triple>),
}

#[derive(Clone, Debug, Default)]
struct Node {
    types: Vec<Object>,
    props: BTreeMap<String, Vec<Object>>,
}

/// Node keys: IRIs as they are, blank nodes as `_:label`.
fn subject_key(s: &NamedOrBlankNode) -> String {
    match s {
        NamedOrBlankNode::NamedNode(n) => n.as_str().to_owned(),
        NamedOrBlankNode::BlankNode(b) => format!("_:{}", b.as_str()),
        #[allow(unreachable_patterns)]
        _ => String::new(),
    }
}

fn object_of(t: &Term) -> Object {
    match t {
        Term::NamedNode(n) => Object::Iri(n.as_str().to_owned()),
        Term::BlankNode(b) => Object::Blank(format!("_:{}", b.as_str())),
        Term::Literal(l) => Object::Literal(l.clone()),
        Term::Triple(t) => Object::TripleTerm(t.clone()),
    }
}

/// Calls `f` with each blank node inside triple term `t` (nested ones too).
fn blanks_in(t: &Triple, f: &mut dyn FnMut(String)) {
    if let NamedOrBlankNode::BlankNode(b) = &t.subject {
        f(format!("_:{}", b.as_str()));
    }
    match &t.object {
        Term::BlankNode(b) => f(format!("_:{}", b.as_str())),
        Term::Triple(inner) => blanks_in(inner, f),
        _ => {}
    }
}

/// What the original document says about its shape, to keep it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Shape {
    /// Node IRIs the original has at its top level (its own `@id`, the
    /// `@id`s of its `@graph`), in order.
    pub top: Vec<String>,
    /// The original has a `@graph`.
    pub graph_form: bool,
    /// Relative IRIs as the original wrote them, by their expansion.
    pub written: HashMap<String, String>,
    /// Each string and number of the original by first appearance: values
    /// of arrays (`@type`, sets, several values) come back in its order.
    pub rank: HashMap<String, usize>,
    /// The keys the original wrote `@id` and `@type` under, where it used an
    /// alias of its context (`id`, `type`).
    pub id_key: Option<String>,
    pub type_key: Option<String>,
}

impl Shape {
    pub(crate) fn of(body: &Map<String, Value>, ctx: &Context, base: &str) -> Shape {
        let mut shape = Shape { graph_form: body.contains_key("@graph"), ..Default::default() };
        let Ok(base) = oxiri::Iri::parse(base.to_owned()) else { return shape };
        let push_top = |v: &Value, shape: &mut Shape| {
            if let Some(iri) = ctx.keyword_member(v, "@id").and_then(Value::as_str).and_then(|s| ctx.expand_id(s, &base)) {
                shape.top.push(iri);
            }
        };
        push_top(&Value::Object(body.clone()), &mut shape);
        if let Some(Value::Array(nodes)) = body.get("@graph") {
            for n in nodes {
                push_top(n, &mut shape);
            }
        } else if let Some(n @ Value::Object(_)) = body.get("@graph") {
            push_top(n, &mut shape);
        }
        fn walk(v: &Value, ctx: &Context, base: &oxiri::Iri<String>, written: &mut HashMap<String, String>) {
            match v {
                Value::Object(o) => {
                    for (k, v) in o {
                        if k == "@context" {
                            continue;
                        }
                        if let (true, Value::String(s)) = (ctx.is_keyword_key(k, "@id"), v) {
                            if !s.contains(':') {
                                if let Some(iri) = ctx.expand_id(s, base) {
                                    written.entry(iri).or_insert_with(|| s.clone());
                                }
                            }
                        }
                        walk(v, ctx, base, written);
                    }
                }
                Value::Array(a) => a.iter().for_each(|v| walk(v, ctx, base, written)),
                _ => {}
            }
        }
        walk(&Value::Object(body.clone()), ctx, &base, &mut shape.written);
        shape.id_key = body.keys().find(|k| ctx.aliases.get(*k) == Some(&"@id")).cloned();
        shape.type_key = body.keys().find(|k| ctx.aliases.get(*k) == Some(&"@type")).cloned();
        fn rank(v: &Value, out: &mut HashMap<String, usize>) {
            let n = out.len();
            match v {
                Value::String(s) => {
                    out.entry(s.clone()).or_insert(n);
                }
                Value::Number(x) => {
                    out.entry(x.to_string()).or_insert(n);
                }
                Value::Array(a) => a.iter().for_each(|v| rank(v, out)),
                Value::Object(o) => o.iter().filter(|(k, _)| *k != "@context").for_each(|(_, v)| rank(v, out)),
                _ => {}
            }
        }
        rank(&Value::Object(body.clone()), &mut shape.rank);
        shape
    }
}

/// The graph's triples as JSON-LD members (`@id`, `@type` and properties
/// of one node merged into the top level, or `@graph`), compacted against
/// `ctx`; `expanded` gives full IRIs and value objects only.
pub(crate) fn compact_graph(triples: &[Triple], ctx: &Context, shape: &Shape, expanded: bool) -> Map<String, Value> {
    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    let mut refs: HashMap<String, usize> = HashMap::new();
    for t in triples {
        let node = nodes.entry(subject_key(&t.subject)).or_default();
        let object = object_of(&t.object);
        match &object {
            Object::Blank(b) => *refs.entry(b.clone()).or_default() += 1,
            // Named inside a triple term: never folded into a list.
            Object::TripleTerm(t) => blanks_in(t, &mut |b| *refs.entry(b).or_default() += 2),
            _ => {}
        }
        if t.predicate == rdf::TYPE && !matches!(object, Object::Literal(_) | Object::TripleTerm(_)) {
            node.types.push(object);
        } else {
            node.props.entry(t.predicate.as_str().to_owned()).or_default().push(object);
        }
    }
    fold_lists(&mut nodes, &refs);

    // References after folding (a list's items count where the list is).
    let mut refs: HashMap<String, usize> = HashMap::new();
    fn count(o: &Object, refs: &mut HashMap<String, usize>) {
        match o {
            Object::Iri(k) | Object::Blank(k) => *refs.entry(k.clone()).or_default() += 1,
            Object::List(items) => items.iter().for_each(|i| count(i, refs)),
            // A blank node a triple term names keeps its label (never
            // embedded): the embedded node refers to it by label.
            Object::TripleTerm(t) => blanks_in(t, &mut |b| *refs.entry(b).or_default() += 2),
            Object::Literal(_) => {}
        }
    }
    for node in nodes.values() {
        node.types.iter().chain(node.props.values().flatten()).for_each(|o| count(o, &mut refs));
    }
    let root: Option<&String> = shape.top.first();
    let embeddable = |k: &String| refs.get(k) == Some(&1) && Some(k) != root && !shape.top.contains(k);

    // Top-level nodes: the original's top-level ones first, then the rest
    // in key order; each claims the embeddable nodes it reaches.
    let mut order: Vec<String> = shape.top.iter().filter(|k| nodes.contains_key(*k)).cloned().collect();
    let mut seen: HashSet<String> = order.iter().cloned().collect();
    order.extend(nodes.keys().filter(|k| !embeddable(k) && !seen.contains(*k)).cloned().collect::<Vec<_>>());
    seen.extend(order.iter().cloned());
    let mut embedded: HashSet<String> = HashSet::new();
    /// Claims the embeddable nodes `key` references, `depth` levels down.
    fn claim(key: &str, depth: usize, nodes: &BTreeMap<String, Node>, embeddable: &dyn Fn(&String) -> bool, embedded: &mut HashSet<String>, tops: &HashSet<String>) {
        let Some(node) = nodes.get(key) else { return };
        if depth >= MAX_NESTING {
            return;
        }
        let mut stack: Vec<&Object> = node.props.values().flatten().collect();
        while let Some(o) = stack.pop() {
            match o {
                Object::Iri(k) | Object::Blank(k) => {
                    if nodes.contains_key(k) && embeddable(k) && !tops.contains(k) && embedded.insert(k.clone()) {
                        claim(k, depth + 1, nodes, embeddable, embedded, tops);
                    }
                }
                Object::List(items) => stack.extend(items.iter()),
                Object::Literal(_) | Object::TripleTerm(_) => {}
            }
        }
    }
    let keys: Vec<&String> = nodes.keys().collect();
    let (mut i, mut next) = (0, 0);
    loop {
        while i < order.len() {
            claim(&order[i].clone(), 0, &nodes, &embeddable, &mut embedded, &seen);
            i += 1;
        }
        // Nodes not claimed: only reachable from a cycle of single
        // references, or nested too deep.
        while next < keys.len() && (seen.contains(keys[next]) || embedded.contains(keys[next])) {
            next += 1;
        }
        let Some(k) = keys.get(next) else { break };
        seen.insert((*k).clone());
        order.push((*k).clone());
    }

    let mut out = Output { ctx, shape, nodes: &nodes, embedded: &embedded, blank_labels: HashMap::new(), expanded };
    let rendered: Vec<Map<String, Value>> = order.iter().map(|k| out.node(k)).collect();
    if rendered.len() == 1 && !shape.graph_form {
        return rendered.into_iter().next().unwrap_or_default();
    }
    Map::from_iter([("@graph".to_owned(), Value::Array(rendered.into_iter().map(Value::Object).collect()))])
}

/// Turns well-formed `rdf:first`/`rdf:rest` chains into [`Object::List`]s
/// and removes their nodes: each list node a blank node referenced once,
/// with exactly one `rdf:first`, one `rdf:rest` and nothing else.
fn fold_lists(nodes: &mut BTreeMap<String, Node>, refs: &HashMap<String, usize>) {
    let is_list_node = |k: &str, nodes: &BTreeMap<String, Node>| {
        k.starts_with("_:")
            && refs.get(k) == Some(&1)
            && nodes.get(k).is_some_and(|n| {
                n.types.is_empty()
                    && n.props.len() == 2
                    && n.props.get(rdf::FIRST.as_str()).is_some_and(|v| v.len() == 1)
                    && n.props.get(rdf::REST.as_str()).is_some_and(|v| v.len() == 1)
            })
    };
    // The chain from a head, if it is a well-formed list ending in rdf:nil.
    let chain = |head: &str, nodes: &BTreeMap<String, Node>| -> Option<Vec<String>> {
        let mut keys = Vec::new();
        let mut cur = head.to_owned();
        loop {
            if !is_list_node(&cur, nodes) || keys.contains(&cur) {
                return None;
            }
            keys.push(cur.clone());
            match &nodes[&cur].props[rdf::REST.as_str()][0] {
                Object::Iri(i) if i == rdf::NIL.as_str() => return Some(keys),
                Object::Blank(b) => cur = b.clone(),
                _ => return None,
            }
        }
    };
    // Heads: list nodes that are not the rdf:rest of another list node.
    let rests: HashSet<String> = nodes
        .iter()
        .filter(|(k, _)| is_list_node(k, nodes))
        .filter_map(|(_, n)| match &n.props[rdf::REST.as_str()][0] {
            Object::Blank(b) => Some(b.clone()),
            _ => None,
        })
        .collect();
    let mut lists: HashMap<String, Vec<String>> = HashMap::new();
    for key in nodes.keys().filter(|k| !rests.contains(*k)) {
        if let Some(keys) = chain(key, nodes) {
            lists.insert(key.clone(), keys);
        }
    }
    if lists.is_empty() && !nodes.values().any(|n| n.props.values().flatten().any(|o| matches!(o, Object::Iri(i) if i == rdf::NIL.as_str()))) {
        return;
    }
    // Heads are folded where they are referenced (lists in lists too, up to
    // MAX_NESTING); a chain's nodes are removed only once it is folded.
    fn fold(o: &mut Object, depth: usize, lists: &mut HashMap<String, Vec<String>>, nodes: &mut BTreeMap<String, Node>) {
        match o {
            Object::Blank(b) if depth < MAX_NESTING => {
                if let Some(keys) = lists.remove(b.as_str()) {
                    let mut items: Vec<Object> = keys.iter().filter_map(|k| nodes.remove(k)?.props.remove(rdf::FIRST.as_str())?.into_iter().next()).collect();
                    items.iter_mut().for_each(|i| fold(i, depth + 1, lists, nodes));
                    *o = Object::List(items);
                }
            }
            Object::Iri(i) if i == rdf::NIL.as_str() => *o = Object::List(Vec::new()),
            _ => {}
        }
    }
    let subjects: Vec<String> = nodes.keys().cloned().collect();
    for key in subjects {
        let Some(mut node) = nodes.remove(&key) else { continue }; // folded into a list meanwhile
        for values in node.props.values_mut() {
            values.iter_mut().for_each(|o| fold(o, 0, &mut lists, nodes));
        }
        nodes.insert(key, node);
    }
}

struct Output<'a> {
    ctx: &'a Context,
    shape: &'a Shape,
    nodes: &'a BTreeMap<String, Node>,
    embedded: &'a HashSet<String>,
    blank_labels: HashMap<String, String>,
    expanded: bool,
}

impl Output<'_> {
    fn blank(&mut self, key: &str) -> String {
        let n = self.blank_labels.len();
        self.blank_labels.entry(key.to_owned()).or_insert_with(|| format!("_:b{n}")).clone()
    }

    /// Orders an array's values as the original had them (values it did
    /// not have last, in graph order).
    fn order(&self, values: &mut [Value]) {
        let rank = |v: &Value| -> usize {
            let key = match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Object(o) => o.get("@id").or_else(|| o.get("@value")).and_then(Value::as_str).map(str::to_owned),
                _ => None,
            };
            key.and_then(|k| self.shape.rank.get(&k).copied()).unwrap_or(usize::MAX)
        };
        values.sort_by_key(rank);
    }

    /// A node's members; `key` is its IRI or `_:label`.
    fn node(&mut self, key: &str) -> Map<String, Value> {
        let mut out = Map::new();
        // The document's own spelling of `@id` and `@type` (an alias of its
        // context), except in the expanded form.
        let (id_key, type_key) = match self.expanded {
            true => ("@id".to_owned(), "@type".to_owned()),
            false => (
                self.shape.id_key.clone().unwrap_or_else(|| "@id".into()),
                self.shape.type_key.clone().unwrap_or_else(|| "@type".into()),
            ),
        };
        let is_blank = key.starts_with("_:");
        if !is_blank {
            out.insert(id_key, Value::String(self.iri(key, false)));
        } else if !self.embedded.contains(key) {
            let label = self.blank(key);
            out.insert(id_key, Value::String(label));
        }
        let Some(node) = self.nodes.get(key) else { return out };
        let mut types: Vec<Value> = node.types.iter().map(|t| Value::String(self.type_iri(t))).collect();
        self.order(&mut types);
        match types.len() {
            0 => {}
            1 if !self.expanded => {
                out.insert(type_key, types.into_iter().next().unwrap_or(Value::Null));
            }
            _ => {
                out.insert(type_key, Value::Array(types));
            }
        }
        for (predicate, values) in &node.props {
            let (k, v) = self.property(predicate, values);
            out.insert(k, v);
        }
        out
    }

    fn type_iri(&mut self, t: &Object) -> String {
        match t {
            Object::Iri(i) => self.iri(i, true),
            Object::Blank(b) => self.blank(b),
            _ => String::new(),
        }
    }

    /// The key and value of one property: the first term (shortest, then
    /// alphabetical) that can hold every value, else the plain form.
    fn property(&mut self, predicate: &str, values: &[Object]) -> (String, Value) {
        if !self.expanded {
            let mut candidates: Vec<(&String, &TermDefinition)> =
                self.ctx.terms.iter().filter(|(_, d)| !d.opaque && d.iri.as_deref() == Some(predicate)).collect();
            candidates.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(b.0)));
            for (term, def) in candidates {
                if let Some(v) = self.with_term(def, values) {
                    return (term.clone(), v);
                }
            }
        }
        let key = self.plain_key(predicate);
        let mut rendered: Vec<Value> = values.iter().map(|v| self.plain_value(v)).collect();
        self.order(&mut rendered);
        let value = if rendered.len() == 1 && !self.expanded { rendered.remove(0) } else { Value::Array(rendered) };
        (key, value)
    }

    fn with_term(&mut self, def: &TermDefinition, values: &[Object]) -> Option<Value> {
        match &def.container {
            Container::List => match values {
                [Object::List(items)] => items.iter().map(|i| if matches!(i, Object::List(_)) { None } else { self.term_value(def, i) }).collect::<Option<Vec<_>>>().map(Value::Array),
                _ => None,
            },
            Container::Language { set } => {
                let mut map: BTreeMap<String, Vec<Value>> = BTreeMap::new();
                for v in values {
                    let Object::Literal(l) = v else { return None };
                    map.entry(l.language()?.to_owned()).or_default().push(Value::String(l.value().to_owned()));
                }
                Some(Value::Object(
                    map.into_iter()
                        .map(|(k, mut v)| {
                            self.order(&mut v);
                            (k, if v.len() == 1 && !set { v.remove(0) } else { Value::Array(v) })
                        })
                        .collect(),
                ))
            }
            Container::Set => {
                let mut rendered = values.iter().map(|v| self.term_value(def, v)).collect::<Option<Vec<_>>>()?;
                self.order(&mut rendered);
                Some(Value::Array(rendered))
            }
            Container::None => {
                let mut rendered = values.iter().map(|v| self.term_value(def, v)).collect::<Option<Vec<_>>>()?;
                self.order(&mut rendered);
                Some(if rendered.len() == 1 { rendered.remove(0) } else { Value::Array(rendered) })
            }
        }
    }

    /// One value under a term's coercion, or `None` if it does not fit.
    fn term_value(&mut self, def: &TermDefinition, value: &Object) -> Option<Value> {
        match (&def.type_mapping, value) {
            (Some(TypeMapping::Id | TypeMapping::Vocab), Object::Iri(i)) if self.embedded.contains(i.as_str()) => Some(Value::Object(self.node(i))),
            (Some(TypeMapping::Id), Object::Iri(i)) => Some(Value::String(self.iri(i, false))),
            (Some(TypeMapping::Vocab), Object::Iri(i)) => Some(Value::String(self.iri(i, true))),
            (Some(TypeMapping::Id | TypeMapping::Vocab), Object::Blank(b)) => {
                if self.embedded.contains(b.as_str()) {
                    Some(Value::Object(self.node(b)))
                } else {
                    Some(Value::String(self.blank(b)))
                }
            }
            (Some(TypeMapping::Id | TypeMapping::Vocab), _) => None,
            (Some(TypeMapping::Datatype(dt)), Object::Literal(l)) if l.language().is_none() && l.datatype().as_str() == dt => {
                Some(Value::String(l.value().to_owned()))
            }
            (Some(TypeMapping::Datatype(_)), _) => None,
            (None, Object::Literal(l)) if l.datatype() == xsd::STRING || l.language().is_some() => match &def.language {
                Some(lang) if l.language() == lang.as_deref() => Some(Value::String(l.value().to_owned())),
                Some(_) => None,
                None => Some(self.plain_value(value)),
            },
            (None, _) => Some(self.plain_value(value)),
        }
    }

    /// A value as the context's defaults read it (no term coercion).
    fn plain_value(&mut self, value: &Object) -> Value {
        match value {
            Object::Iri(i) if self.embedded.contains(i.as_str()) => Value::Object(self.node(i)),
            Object::Iri(i) => {
                let iri = self.iri(i, false);
                Value::Object(Map::from_iter([("@id".to_owned(), Value::String(iri))]))
            }
            Object::Blank(b) => {
                if self.embedded.contains(b.as_str()) {
                    Value::Object(self.node(b))
                } else {
                    let label = self.blank(b);
                    Value::Object(Map::from_iter([("@id".to_owned(), Value::String(label))]))
                }
            }
            Object::List(items) => {
                let items = items.iter().map(|i| self.plain_value(i)).collect();
                Value::Object(Map::from_iter([("@list".to_owned(), Value::Array(items))]))
            }
            Object::Literal(l) => self.literal(l),
            Object::TripleTerm(t) => self.triple_term(t),
        }
    }

    /// A triple term as an embedded node, `{"@id": {"@id": S, P: [O]}}`,
    /// in expanded form under any context (absolute IRIs and value objects
    /// read the same whatever the context maps), as the body of a document
    /// without a context shows it ([`crate::triple_terms`]).
    fn triple_term(&mut self, t: &Triple) -> Value {
        let expanded = std::mem::replace(&mut self.expanded, true);
        let subject = match &t.subject {
            NamedOrBlankNode::NamedNode(n) => n.as_str().to_owned(),
            NamedOrBlankNode::BlankNode(b) => self.blank(&format!("_:{}", b.as_str())),
        };
        let object = match &t.object {
            Term::NamedNode(n) => Value::Object(Map::from_iter([("@id".to_owned(), Value::String(n.as_str().to_owned()))])),
            Term::BlankNode(b) => {
                let label = self.blank(&format!("_:{}", b.as_str()));
                Value::Object(Map::from_iter([("@id".to_owned(), Value::String(label))]))
            }
            Term::Literal(l) => self.literal(l),
            Term::Triple(inner) => self.triple_term(inner),
        };
        self.expanded = expanded;
        let node = Map::from_iter([("@id".to_owned(), Value::String(subject)), (t.predicate.as_str().to_owned(), Value::Array(vec![object]))]);
        Value::Object(Map::from_iter([("@id".to_owned(), Value::Object(node))]))
    }

    fn literal(&mut self, l: &Literal) -> Value {
        let value_object = |pairs: Vec<(&str, String)>| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), Value::String(v))).collect());
        if let (Some(lang), Some(direction)) = (l.language(), l.direction()) {
            // RDF 1.2's base direction: JSON-LD 1.1's `@direction`.
            let direction = match direction {
                oxrdf::BaseDirection::Ltr => "ltr",
                oxrdf::BaseDirection::Rtl => "rtl",
            };
            return value_object(vec![("@value", l.value().to_owned()), ("@language", lang.to_owned()), ("@direction", direction.to_owned())]);
        }
        if let Some(lang) = l.language() {
            if !self.expanded && self.ctx.language.as_deref() == Some(lang) {
                return Value::String(l.value().to_owned());
            }
            return value_object(vec![("@value", l.value().to_owned()), ("@language", lang.to_owned())]);
        }
        let dt = l.datatype();
        if dt == xsd::STRING {
            if self.expanded || self.ctx.language.is_some() {
                return value_object(vec![("@value", l.value().to_owned())]);
            }
            return Value::String(l.value().to_owned());
        }
        if !self.expanded {
            if let Some(native) = native(l) {
                return native;
            }
        }
        let ty = self.iri(dt.as_str(), true);
        value_object(vec![("@value", l.value().to_owned()), ("@type", ty)])
    }

    /// A property key without a term of its own: vocabulary-relative,
    /// a compact IRI, or the full IRI.
    fn plain_key(&self, iri: &str) -> String {
        if self.expanded {
            return iri.to_owned();
        }
        if let Some(suffix) = self.ctx.vocab.as_deref().and_then(|v| iri.strip_prefix(v)) {
            if !suffix.is_empty() && !suffix.contains(':') && !self.ctx.terms.contains_key(suffix) && !is_keyword(suffix) {
                return suffix.to_owned();
            }
        }
        self.prefixed(iri).unwrap_or_else(|| iri.to_owned())
    }

    /// `prefix:suffix` with the shortest result.
    fn prefixed(&self, iri: &str) -> Option<String> {
        self.ctx
            .terms
            .iter()
            .filter(|(t, d)| d.prefix && !d.opaque && !t.contains(':'))
            .filter_map(|(t, d)| {
                let suffix = iri.strip_prefix(d.iri.as_deref()?)?;
                let candidate = format!("{t}:{suffix}");
                (!suffix.is_empty() && !suffix.starts_with("//") && !self.ctx.terms.contains_key(&candidate)).then_some(candidate)
            })
            .min_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)))
    }

    /// An IRI compacted: `vocab` for `@type` values and `@vocab`-coerced
    /// values (terms and the vocabulary apply), else an `@id` value (the
    /// original's relative form, or a compact IRI).
    fn iri(&self, iri: &str, vocab: bool) -> String {
        if self.expanded {
            return iri.to_owned();
        }
        if vocab {
            let mut simple: Vec<&String> = self
                .ctx
                .terms
                .iter()
                .filter(|(_, d)| !d.opaque && d.iri.as_deref() == Some(iri) && d.type_mapping.is_none() && d.language.is_none() && d.container == Container::None)
                .map(|(t, _)| t)
                .collect();
            simple.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
            if let Some(t) = simple.first() {
                return (*t).clone();
            }
            return self.plain_key(iri);
        }
        if let Some(written) = self.shape.written.get(iri) {
            return written.clone();
        }
        self.prefixed(iri).unwrap_or_else(|| iri.to_owned())
    }
}

/// A literal as a JSON number or boolean, when reading that JSON back as
/// JSON-LD gives exactly this literal (its lexical form is canonical).
fn native(l: &Literal) -> Option<Value> {
    let dt = l.datatype();
    let lexical = l.value();
    if dt == xsd::BOOLEAN {
        return match lexical {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        };
    }
    let number: Number = if dt == xsd::INTEGER {
        Number::from(lexical.parse::<i64>().ok()?)
    } else if dt == xsd::DOUBLE {
        Number::from_f64(lexical.parse::<f64>().ok()?)?
    } else {
        return None;
    };
    // What oxjsonld makes of the number as serde_json writes it.
    let written = number.to_string();
    let (integer, double) = canonical_number(&written)?;
    let back = if dt == xsd::INTEGER { integer } else { double };
    (back.as_deref() == Some(lexical)).then_some(Value::Number(number))
}

/// The literal JSON-LD's toRdf makes of a JSON number: `(Some(integer), None)`
/// or `(None, Some(double))`, as oxjsonld's `canonicalize_xsd_number`.
fn canonical_number(value: &str) -> Option<(Option<String>, Option<String>)> {
    let (value, negative) = match value.strip_prefix('-') {
        Some(v) => (v, true),
        None => (value, false),
    };
    let (value, exp) = value.split_once(['e', 'E']).unwrap_or((value, "0"));
    let (mut integer, mut decimal) = value.split_once('.').unwrap_or((value, ""));
    let mut exp = exp.parse::<i64>().ok()?;
    integer = integer.trim_start_matches('0');
    decimal = decimal.trim_end_matches('0');
    if decimal.is_empty() {
        while let Some(c) = integer.strip_suffix('0') {
            integer = c;
            exp += 1;
        }
    }
    if integer.is_empty() {
        while let Some(c) = decimal.strip_prefix('0') {
            decimal = c;
            exp -= 1;
        }
    }
    exp += integer.len() as i64;
    if integer.is_empty() && decimal.is_empty() {
        integer = "0";
        exp = 1;
    }
    let mut out = String::new();
    if negative && !(decimal.is_empty() && integer == "0") {
        out.push('-');
    }
    let digits = (integer.len() + decimal.len()) as i64;
    if exp >= digits && exp < 21 {
        out.push_str(integer);
        out.push_str(decimal);
        out.extend((0..(exp - digits)).map(|_| '0'));
        Some((Some(out), None))
    } else {
        let mut all = integer.chars().chain(decimal.chars());
        out.push(all.next()?);
        out.push('.');
        if digits == 1 {
            out.push('0');
        } else {
            out.extend(all);
        }
        out.push_str(&format!("E{}", exp - 1));
        Some((None, Some(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_native_only_when_they_read_back_the_same() {
        let lit = |v: &str, dt| Literal::new_typed_literal(v, dt);
        assert_eq!(native(&lit("5", xsd::INTEGER)), Some(json!(5)));
        assert_eq!(native(&lit("-12", xsd::INTEGER)), Some(json!(-12)));
        assert_eq!(native(&lit("05", xsd::INTEGER)), None);
        assert_eq!(native(&lit("5.5E0", xsd::DOUBLE)), Some(json!(5.5)));
        assert_eq!(native(&lit("1.0E0", xsd::DOUBLE)), None, "1.0 reads back as an integer");
        assert_eq!(native(&lit("5.5", xsd::DECIMAL)), None);
        assert_eq!(native(&lit("true", xsd::BOOLEAN)), Some(json!(true)));
        assert_eq!(native(&lit("1", xsd::BOOLEAN)), None);
    }

    #[test]
    fn members_a_context_does_not_map_are_not_rdf() {
        let ctx = Context::parse(&json!({"name": "http://schema.org/name", "skip": null, "s": "http://schema.org/"}));
        assert!(ctx.is_rdf_member("name"));
        assert!(ctx.is_rdf_member("s:email"));
        assert!(ctx.is_rdf_member("@id"));
        assert!(!ctx.is_rdf_member("app_flag"));
        assert!(!ctx.is_rdf_member("skip"));
        assert!(!ctx.is_rdf_member("_attachments"));
        let vocab = Context::parse(&json!({"@vocab": "http://schema.org/"}));
        assert!(vocab.is_rdf_member("app_flag"));
    }
}
