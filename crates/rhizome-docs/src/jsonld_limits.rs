//! Bounds on JSON-LD input, checked before `oxjsonld` reads it.
//!
//! oxjsonld processes a context recursively (JSON-LD 1.1 API, "Create Term
//! Definition", https://www.w3.org/TR/json-ld11-api/#create-term-definition):
//! a term whose IRI is a compact IRI on another term of the same context
//! (`"t2": "t1:a"`), or that names another term (`"@type": "t1"`), defines
//! that term first, one stack frame pair deeper; a scoped context (`@context`
//! inside a term definition) is processed inside its term's definition. A
//! chain of 2,000 such terms (35 KB) overflowed the server's stack and
//! aborted it. Every context of a document is therefore checked here:
//!
//! - the longest chain of term definitions that need each other, plus the
//!   chains of the scoped contexts processed inside them, is at most
//!   [`MAX_CONTEXT_DEPTH`];
//! - terms that need each other in a cycle are refused (JSON-LD's "cyclic
//!   IRI mapping"; oxjsonld would refuse them too);
//! - JSON nesting is at most [`MAX_JSON_DEPTH`] (documents parsed by
//!   serde_json are at most 128 deep already; this holds for any caller);
//! - a document has at most [`MAX_CONTEXT_TERMS`] term definitions in all,
//!   and the copies of the active context that scoped contexts make (each
//!   use copies every term) stay under [`MAX_CONTEXT_COPIES`].
//!
//! The walk is iterative, so the check itself needs no stack.

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The deepest context processing allowed: chained term definitions and
/// nested scoped contexts together.
pub const MAX_CONTEXT_DEPTH: usize = 256;
/// The deepest nesting of JSON arrays and objects in a JSON-LD document.
pub const MAX_JSON_DEPTH: usize = 256;
/// Term definitions in all the contexts of one document.
pub const MAX_CONTEXT_TERMS: usize = 10_000;
/// Term definitions copied by scoped contexts (each definition or use of a
/// term with a scoped context copies the whole active context).
pub const MAX_CONTEXT_COPIES: usize = 20_000_000;

/// Checks a JSON-LD document (or a context wrapped as `{"@context": ...}`)
/// against the bounds above; the error says which bound and where.
pub fn check_json_ld(doc: &Value) -> Result<(), String> {
    check_json_ld_with_terms(doc, 0)
}

/// [`check_json_ld`] for a document whose remote contexts hold `remote_terms`
/// term definitions (plain ones: see `crate::contexts::Resolved::check_limits`).
pub(crate) fn check_json_ld_with_terms(doc: &Value, remote_terms: usize) -> Result<(), String> {
    measure_json_ld(doc, remote_terms).map(|_| ())
}

/// How deep a checked document's processing goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Depths {
    /// The deepest nesting of JSON arrays and objects.
    pub json: usize,
    /// The longest chain of term definitions that need each other, with
    /// the enclosing contexts' levels.
    pub context: usize,
    /// Whether any term carries a scoped context (processed where the term
    /// is used, at any JSON depth).
    pub scoped: bool,
}

/// Depths up to which [`on_stack_for`] runs JSON-LD processing on the
/// caller's own stack: at about 1 KiB of oxjsonld's stack per level of
/// term definitions, a few dozen KiB, against the 2 MiB of the smallest
/// threads that write (tokio's blocking threads, the replicator's).
pub const INLINE_DEPTH: usize = 32;

impl Depths {
    /// Shallow enough to process on any writer's stack.
    pub fn shallow(&self) -> bool {
        self.json <= INLINE_DEPTH && self.context <= INLINE_DEPTH && !self.scoped
    }
}

/// [`check_json_ld_with_terms`], answering how deep the document goes.
pub(crate) fn measure_json_ld(doc: &Value, remote_terms: usize) -> Result<Depths, String> {
    if remote_terms > MAX_CONTEXT_TERMS {
        return Err(format!("the remote contexts of this document hold {remote_terms} JSON-LD term definitions; the limit is {MAX_CONTEXT_TERMS}"));
    }
    let mut walk = Walk { terms: remote_terms, ..Walk::default() };
    // (value, depth, JSON path); contexts found on the way are checked as
    // they are met.
    let mut stack: Vec<(&Value, usize, Path)> = vec![(doc, 1, Path::root())];
    while let Some((value, depth, path)) = stack.pop() {
        walk.deepest_json = walk.deepest_json.max(depth);
        if depth > MAX_JSON_DEPTH {
            return Err(format!("JSON nested deeper than {MAX_JSON_DEPTH} levels at {}", path.show(&walk.paths)));
        }
        match value {
            Value::Object(members) => {
                for (key, member) in members {
                    walk.count_use(key);
                    let child = walk.paths.child(&path, Key::Member(key));
                    if key == "@context" {
                        walk.check_context(member, 0, &child)?;
                    }
                    stack.push((member, depth + 1, child));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let child = walk.paths.child(&path, Key::Index(i));
                    stack.push((item, depth + 1, child));
                }
            }
            Value::String(s) => walk.count_use(s),
            _ => {}
        }
    }
    let copies = walk.scoped_uses.saturating_add(walk.scoped_definitions).saturating_mul(walk.terms);
    if copies > MAX_CONTEXT_COPIES {
        return Err(format!(
            "JSON-LD scoped contexts used {} times with {} term definitions would copy {copies} term definitions; the limit is {MAX_CONTEXT_COPIES}",
            walk.scoped_uses + walk.scoped_definitions,
            walk.terms
        ));
    }
    Ok(Depths { json: walk.deepest_json, context: walk.deepest_context, scoped: walk.scoped_definitions > 0 })
}

/// The stack JSON-LD processing runs on ([`on_known_stack`]): far more
/// than [`MAX_CONTEXT_DEPTH`] needs (a level of term definitions took about
/// 1 KiB of oxjsonld's stack), whatever thread the write came from (tokio's
/// blocking threads and the replicator's have 2 MiB, partly used already).
pub const JSONLD_STACK_BYTES: usize = 16 << 20;

/// Runs `f` on a thread of its own with [`JSONLD_STACK_BYTES`] of stack,
/// so that the bounds above hold against a stack of known size. A panic in
/// `f` is an error, not a crash.
pub fn on_known_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("json-ld".into())
            .stack_size(JSONLD_STACK_BYTES)
            .spawn_scoped(scope, f)
            .map_err(|e| format!("cannot start JSON-LD processing: {e}"))?;
        handle.join().map_err(|panic| {
            let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            format!("JSON-LD processing failed: {what}")
        })
    })
}

/// [`on_known_stack`] when `recursive` (JSON-LD, whose processing recurses
/// with the document's nesting); any other parser runs in a loop on the
/// caller's stack, where starting a thread would be most of a small
/// body's cost (a Turtle PUT of 200 triples spent more in the thread's
/// start than in its parse).
pub fn on_known_stack_if<T: Send>(recursive: bool, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    if recursive { on_known_stack(f) } else { Ok(f()) }
}

/// `f` for a document of these depths: on the caller's stack when they
/// are [`Depths::shallow`] (no hand-over to another thread, which cost a
/// small document's write about a tenth of its time), else as
/// [`on_known_stack_owned`]. A panic in `f` is an error either way.
pub fn on_stack_for<T: Send + 'static>(depths: Depths, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    if !depths.shallow() {
        return on_known_stack_owned(f);
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
        let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
        format!("JSON-LD processing failed: {what}")
    })
}

/// [`on_known_stack`] for work that owns what it uses: it runs on one of a
/// few long-lived threads with [`JSONLD_STACK_BYTES`] of stack instead of a
/// new thread, since starting a thread with a 16 MiB stack for every
/// document cost more than projecting a small document.
pub fn on_known_stack_owned<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    type Job = Box<dyn FnOnce() + Send>;
    static POOL: std::sync::OnceLock<Option<std::sync::Mutex<std::sync::mpsc::Sender<Job>>>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
        let mut started = 0;
        for _ in 0..workers {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new().name("json-ld".into()).stack_size(JSONLD_STACK_BYTES).spawn(move || loop {
                let job = match rx.lock() {
                    Ok(r) => r.recv(),
                    Err(_) => return,
                };
                match job {
                    Ok(job) => job(),
                    Err(_) => return,
                }
            });
            started += usize::from(spawned.is_ok());
        }
        (started > 0).then(|| std::sync::Mutex::new(tx))
    });
    let Some(sender) = pool else { return on_known_stack(f) };
    let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
            let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            format!("JSON-LD processing failed: {what}")
        });
        let _ = done_tx.send(out);
    });
    let sent = sender.lock().map_err(|_| "the JSON-LD threads are gone".to_owned())?.send(job);
    if sent.is_err() {
        return Err("the JSON-LD threads are gone".into());
    }
    done_rx.recv().map_err(|_| "JSON-LD processing stopped".to_owned())?
}

/// A JSON path, kept as an index into [`Paths`] so that walking a large
/// document builds no strings.
#[derive(Clone, Copy)]
struct Path(usize);

impl Path {
    fn root() -> Path {
        Path(0)
    }
    fn show(&self, paths: &Paths<'_>) -> String {
        paths.show(*self)
    }
}

#[derive(Clone, Copy)]
enum Key<'a> {
    Member(&'a str),
    Index(usize),
}

/// Parent links of the paths met so far: (parent, key).
struct Paths<'a>(Vec<(usize, Key<'a>)>);

impl Default for Paths<'_> {
    fn default() -> Self {
        Paths(vec![(0, Key::Index(0))])
    }
}

impl<'a> Paths<'a> {
    fn child(&mut self, parent: &Path, key: Key<'a>) -> Path {
        self.0.push((parent.0, key));
        Path(self.0.len() - 1)
    }

    fn show(&self, path: Path) -> String {
        let mut keys = Vec::new();
        let mut at = path.0;
        while at != 0 {
            keys.push(match self.0[at].1 {
                Key::Member(k) => k.to_owned(),
                Key::Index(i) => i.to_string(),
            });
            at = self.0[at].0;
        }
        if keys.is_empty() {
            return "the top level".into();
        }
        keys.reverse();
        keys.join(".")
    }
}

/// What the walk of one document has seen. Uses of scoped terms are
/// counted from where their context is met on (the document's own top-level
/// context is met before anything under it).
#[derive(Default)]
struct Walk<'a> {
    paths: Paths<'a>,
    terms: usize,
    /// Terms that carry a scoped context.
    scoped_terms: HashSet<&'a str>,
    scoped_definitions: usize,
    scoped_uses: usize,
    deepest_json: usize,
    deepest_context: usize,
}

impl<'a> Walk<'a> {
    fn count_use(&mut self, key: &str) {
        if !self.scoped_terms.is_empty() && self.scoped_terms.contains(key) {
            self.scoped_uses += 1;
        }
    }

    /// Checks one `@context` value met at `level` levels of context
    /// processing (0 for a context in the document's body).
    fn check_context(&mut self, context: &'a Value, level: usize, path: &Path) -> Result<(), String> {
        // (context, level, path): scoped contexts are queued, not recursed.
        let mut pending: Vec<(&'a Value, usize, Path)> = vec![(context, level, *path)];
        while let Some((context, level, path)) = pending.pop() {
            let locals: Vec<(&'a Map<String, Value>, Path)> = match context {
                Value::Object(o) => vec![(o, path)],
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| c.as_object().map(|o| (o, i)))
                    .map(|(o, i)| (o, self.paths.child(&path, Key::Index(i))))
                    .collect(),
                _ => Vec::new(), // null, a remote context (refused by oxjsonld) or invalid
            };
            for (local, path) in locals {
                self.terms += local.keys().filter(|k| !k.starts_with('@')).count();
                if self.terms > MAX_CONTEXT_TERMS {
                    return Err(format!("more than {MAX_CONTEXT_TERMS} JSON-LD term definitions (at {})", path.show(&self.paths)));
                }
                let chains = term_chains(local).map_err(|cycle| format!("JSON-LD terms defined by each other at {}: {}", path.show(&self.paths), cycle.join(" -> ")))?;
                if let Some((longest, chain)) = chains.longest() {
                    self.deepest_context = self.deepest_context.max(level + longest);
                    if level + longest > MAX_CONTEXT_DEPTH {
                        return Err(format!(
                            "JSON-LD context at {} too deep: {} term definitions that need each other ({}){}; the limit is {MAX_CONTEXT_DEPTH}",
                            path.show(&self.paths),
                            longest,
                            abbreviate(&chain),
                            if level > 0 { format!(", inside {level} levels of enclosing contexts") } else { String::new() },
                        ));
                    }
                }
                for (term, definition) in local {
                    let Some(scoped) = definition.as_object().and_then(|d| d.get("@context")) else { continue };
                    self.scoped_terms.insert(term.as_str());
                    self.scoped_definitions += 1;
                    let depth_here = level + chains.depth.get(term.as_str()).copied().unwrap_or(1);
                    let term_path = self.paths.child(&path, Key::Member(term));
                    pending.push((scoped, depth_here, self.paths.child(&term_path, Key::Member("@context"))));
                }
            }
        }
        Ok(())
    }
}

/// "t1999 -> t1998 -> ... -> t0".
fn abbreviate(chain: &[&str]) -> String {
    if chain.len() <= 6 {
        return chain.join(" -> ");
    }
    format!("{} -> ... -> {}", chain[..3].join(" -> "), chain[chain.len() - 3..].join(" -> "))
}

/// For each term of a local context, the length of the longest chain of
/// definitions its own definition runs (itself included).
struct Chains<'a> {
    depth: HashMap<&'a str, usize>,
    next: HashMap<&'a str, &'a str>,
}

impl<'a> Chains<'a> {
    fn longest(&self) -> Option<(usize, Vec<&'a str>)> {
        let (&start, &len) = self.depth.iter().max_by_key(|(t, d)| (**d, std::cmp::Reverse(**t)))?;
        let mut chain = vec![start];
        let mut at = start;
        while let Some(&n) = self.next.get(at) {
            chain.push(n);
            at = n;
        }
        Some((len, chain))
    }
}

/// The terms of `local` whose definition makes oxjsonld define another term
/// of `local` first: the whole string or the prefix of a compact IRI in the
/// term's IRI (`@id`, `@reverse`), its `@type`, its `@index`, and the
/// prefix of the term itself when it is a compact IRI.
fn needs<'a>(local: &'a Map<String, Value>, term: &'a str, definition: &'a Value) -> Vec<&'a str> {
    let mut out: Vec<&'a str> = Vec::new();
    let refer = |s: &'a str, out: &mut Vec<&'a str>| {
        if s.starts_with('@') {
            return;
        }
        if s != term && local.contains_key(s) {
            out.push(s);
        }
        if let Some((prefix, suffix)) = s.split_once(':') {
            if prefix != "_" && !suffix.starts_with("//") && prefix != term && local.contains_key(prefix) {
                out.push(prefix);
            }
        }
    };
    match definition {
        Value::String(s) => refer(s, &mut out),
        Value::Object(d) => {
            for key in ["@id", "@reverse", "@type", "@index"] {
                if let Some(Value::String(s)) = d.get(key) {
                    refer(s, &mut out);
                }
            }
        }
        _ => {}
    }
    if let Some((prefix, _)) = term.split_once(':') {
        if !prefix.is_empty() && prefix != term && local.contains_key(prefix) {
            out.push(prefix);
        }
    }
    out
}

/// Longest chains by an iterative depth-first search; a cycle is an error
/// (its terms, in order).
fn term_chains(local: &Map<String, Value>) -> Result<Chains<'_>, Vec<String>> {
    let mut chains = Chains { depth: HashMap::new(), next: HashMap::new() };
    let mut on_path: HashSet<&str> = HashSet::new();
    for start in local.keys().filter(|k| !k.starts_with('@')) {
        if chains.depth.contains_key(start.as_str()) {
            continue;
        }
        // (term, its needs, next need to visit)
        let mut stack: Vec<(&str, Vec<&str>, usize)> = vec![(start.as_str(), needs(local, start, &local[start.as_str()]), 0)];
        on_path.insert(start.as_str());
        while let Some((term, deps, i)) = stack.last_mut() {
            if let Some(&dep) = deps.get(*i) {
                *i += 1;
                if chains.depth.contains_key(dep) {
                    continue;
                }
                if on_path.contains(dep) {
                    let from = stack.iter().position(|(t, _, _)| *t == dep).unwrap_or(0);
                    let mut cycle: Vec<String> = stack[from..].iter().map(|(t, _, _)| (*t).to_owned()).collect();
                    cycle.push(dep.to_owned());
                    return Err(cycle);
                }
                on_path.insert(dep);
                let (key, definition) = local.get_key_value(dep).expect("needs() returns keys of the local context");
                stack.push((key.as_str(), needs(local, key, definition), 0));
                continue;
            }
            let term = *term;
            let best = deps.iter().max_by_key(|d| chains.depth.get(**d).copied().unwrap_or(0)).copied();
            let depth = 1 + best.and_then(|d| chains.depth.get(d).copied()).unwrap_or(0);
            if let Some(b) = best {
                chains.next.insert(term, b);
            }
            chains.depth.insert(term, depth);
            on_path.remove(term);
            stack.pop();
        }
    }
    Ok(chains)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Only a document shallow in JSON and in term definitions, with no
    /// scoped context, is processed on the caller's stack; every bound is
    /// measured, one past it is not shallow.
    #[test]
    fn depths_say_which_documents_are_processed_on_the_callers_stack() {
        let depths = |doc: &Value| measure_json_ld(doc, 0).unwrap();
        let profile = json!({"@context": {"@vocab": "http://example.org/v#"}, "@id": "http://example.org/p/1", "AGE": 29, "name": "x"});
        assert!(depths(&profile).shallow(), "{:?}", depths(&profile));
        let chained = |n| json!({"@context": chain(n), "t0": "x"});
        assert_eq!(depths(&chained(INLINE_DEPTH - 1)).context, INLINE_DEPTH);
        assert!(depths(&chained(INLINE_DEPTH - 1)).shallow());
        assert!(!depths(&chained(INLINE_DEPTH)).shallow(), "{:?}", depths(&chained(INLINE_DEPTH)));
        let nested = |n: usize| (1..n).fold(json!("leaf"), |inner, _| json!([inner]));
        assert_eq!(depths(&nested(INLINE_DEPTH)).json, INLINE_DEPTH);
        assert!(depths(&nested(INLINE_DEPTH)).shallow());
        assert!(!depths(&nested(INLINE_DEPTH + 1)).shallow());
        let scoped = json!({"@context": {"t": {"@id": "http://example.org/t", "@context": {"@vocab": "http://example.org/s#"}}}, "t": {"a": 1}});
        assert!(!depths(&scoped).shallow(), "{:?}", depths(&scoped));
        // A panic in processing run inline is an error, not a crash.
        let out = on_stack_for(depths(&profile), || -> u8 { panic!("boom") });
        assert!(out.unwrap_err().contains("boom"));
    }

    fn chain(n: usize) -> Value {
        let mut c = Map::new();
        c.insert("t0".into(), json!("http://example.org/"));
        for i in 1..=n {
            c.insert(format!("t{i}"), json!(format!("t{}:a", i - 1)));
        }
        Value::Object(c)
    }

    #[test]
    fn chains_up_to_the_limit_pass_and_longer_ones_are_refused_with_the_chain() {
        assert!(check_json_ld(&json!({ "@context": chain(MAX_CONTEXT_DEPTH - 1), "t1": 1 })).is_ok());
        let err = check_json_ld(&json!({ "@context": chain(MAX_CONTEXT_DEPTH), "t1": 1 })).unwrap_err();
        assert!(err.contains("257 term definitions") && err.contains("t256 -> t255") && err.contains("t0") && err.contains("@context"), "{err}");
        let err = check_json_ld(&json!({ "@graph": [{ "@context": [ {}, chain(2_000) ] }] })).unwrap_err();
        assert!(err.contains("@graph.0.@context.1"), "the place is named: {err}");
    }

    #[test]
    fn expanded_definitions_types_and_compact_iri_terms_count_as_links() {
        let c = json!({ "@context": { "a": { "@id": "http://e/a" }, "b": { "@id": "a:b", "@type": "c" }, "c": "a:c", "a:d": { "@type": "@id" } } });
        let Value::Object(local) = &c["@context"] else { unreachable!() };
        let chains = term_chains(local).unwrap();
        assert_eq!(chains.depth["b"], 3, "b needs c which needs a");
        assert_eq!(chains.depth["a:d"], 2);
        assert_eq!(chains.depth["a"], 1);
        // Absolute IRIs and blank nodes are not compact IRIs.
        let c = json!({ "http": "http://e/", "x": "http://e/x", "_": "http://e/", "y": "_:b" });
        assert_eq!(term_chains(c.as_object().unwrap()).unwrap().depth["x"], 1);
        assert_eq!(term_chains(c.as_object().unwrap()).unwrap().depth["y"], 1);
    }

    #[test]
    fn cycles_are_refused_with_their_terms() {
        let err = check_json_ld(&json!({ "@context": { "a": "b:x", "b": { "@id": "c:y" }, "c": "a:z" } })).unwrap_err();
        assert!(err.contains("defined by each other") && err.contains(" -> "), "{err}");
        // A term that names itself is not a cycle.
        assert!(check_json_ld(&json!({ "@context": { "name": { "@id": "name" }, "x": "x:y" } })).is_ok());
    }

    #[test]
    fn scoped_contexts_add_their_depth_to_the_enclosing_chain() {
        let mut context = chain(5);
        for _ in 0..40 {
            let mut outer = chain(5).as_object().unwrap().clone();
            outer.insert("scoped".into(), json!({ "@id": "t5:s", "@context": context }));
            context = Value::Object(outer);
        }
        let err = check_json_ld(&json!({ "@context": context })).unwrap_err();
        assert!(err.contains("enclosing contexts"), "{err}");
        let mut context = chain(5);
        for _ in 0..20 {
            let mut outer = chain(5).as_object().unwrap().clone();
            outer.insert("scoped".into(), json!({ "@id": "t5:s", "@context": context }));
            context = Value::Object(outer);
        }
        assert!(check_json_ld(&json!({ "@context": context })).is_ok());
    }

    #[test]
    fn json_nesting_term_counts_and_scoped_copies_are_bounded() {
        let mut deep = json!(1);
        for _ in 0..MAX_JSON_DEPTH {
            deep = json!([deep]);
        }
        assert!(check_json_ld(&deep).unwrap_err().contains("nested deeper"));
        let many: Map<String, Value> = (0..=MAX_CONTEXT_TERMS).map(|i| (format!("t{i}"), json!("http://e/"))).collect();
        assert!(check_json_ld(&json!({ "@context": many })).unwrap_err().contains("term definitions"));
        let mut context: Map<String, Value> = (0..5_000).map(|i| (format!("t{i}"), json!("http://e/"))).collect();
        context.insert("s".into(), json!({ "@id": "http://e/s", "@context": {} }));
        let uses: Vec<Value> = (0..5_000).map(|_| json!({ "s": 1 })).collect();
        assert!(check_json_ld(&json!({ "@context": context, "@graph": uses })).unwrap_err().contains("copy"));
    }
}
