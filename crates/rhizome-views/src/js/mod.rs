//! A sandboxed JavaScript engine for design-document functions (QuickJS
//! through `rquickjs`, as CouchDB 3.4 offers).
//!
//! What a function can reach is what CouchDB's query server gives it
//! (`prelude.js`: `emit`, `log`, `sum`, `isArray`, `toJSON`, `require` of
//! modules in its design document) plus the language itself: no module
//! loader, file, network or other database. Each [`Sandbox`] is one QuickJS
//! runtime with a memory limit and a time limit per call (an interrupt
//! handler checks the deadline), so a runaway function costs one error, not
//! the server. Values cross as JSON text (`JSON.parse`/`JSON.stringify`).
//!
//! A runtime is not `Send`: make one per index update or request, on the
//! thread that uses it (creating one takes well under a millisecond).

use rquickjs::{Context, Ctx, Function, Runtime, Value as JsValue};
use serde_json::Value;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

pub(crate) mod native_map;

const PRELUDE: &str = include_str!("prelude.js");

/// What one request's JavaScript may take in all, on this thread: every
/// call's deadline is also the request's, and a call stops when the
/// request's client goes away. A server sets it around each request
/// ([`RequestBounds::enter`]), so that a looping `validate_doc_update`
/// over a `_bulk_docs` of thousands of documents costs the request's
/// budget once, not each call's limit per document, and stops when the
/// client leaves. (Sandboxes live on the thread that made them, so a
/// thread's bounds are its request's.)
#[derive(Clone, Default)]
pub struct RequestBounds {
    pub deadline: Option<Instant>,
    pub cancelled: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

thread_local! {
    static REQUEST_BOUNDS: std::cell::RefCell<RequestBounds> = std::cell::RefCell::new(RequestBounds::default());
}

impl RequestBounds {
    /// Sets this thread's bounds until the guard is dropped.
    pub fn enter(self) -> RequestBoundsGuard {
        let previous = REQUEST_BOUNDS.with(|b| std::mem::replace(&mut *b.borrow_mut(), self));
        RequestBoundsGuard { previous: Some(previous) }
    }

    /// This thread's bounds now.
    pub fn current() -> RequestBounds {
        REQUEST_BOUNDS.with(|b| b.borrow().clone())
    }

    fn cancelled(&self) -> bool {
        self.cancelled.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Puts the thread's previous bounds back when dropped.
pub struct RequestBoundsGuard {
    previous: Option<RequestBounds>,
}

impl Drop for RequestBoundsGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            REQUEST_BOUNDS.with(|b| *b.borrow_mut() = previous);
        }
    }
}

/// Bounds of one sandbox.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Heap of the runtime (QuickJS's allocator refuses past it).
    pub memory_bytes: usize,
    /// Wall time of one call (CouchDB's `os_process_timeout`, 5 s).
    pub call_timeout: Duration,
    /// JavaScript stack (deep recursion throws instead of overflowing).
    pub stack_bytes: usize,
    /// Wall time of all the JavaScript one request runs (validation of a
    /// `_bulk_docs`, filters of a `_changes` pass), index builds aside
    /// ([`RequestBounds`]; the server applies it).
    pub request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory_bytes: 64 << 20, call_timeout: Duration::from_secs(5), stack_bytes: 256 << 10, request_timeout: Duration::from_secs(30) }
    }
}

impl Limits {
    /// The defaults with the user's settings, read once per process: per
    /// call `RHIZOME_JS_TIMEOUT_MS` (default 5000, CouchDB's
    /// `os_process_timeout`), per request `RHIZOME_JS_REQUEST_TIMEOUT_MS`
    /// (default 30000) and per sandbox `RHIZOME_JS_MEMORY_MB` (default
    /// 64).
    pub fn from_env() -> Limits {
        static LIMITS: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();
        *LIMITS.get_or_init(|| {
            let mut l = Limits::default();
            let env = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<u64>().ok()).filter(|n| *n > 0);
            if let Some(ms) = env("RHIZOME_JS_TIMEOUT_MS") {
                l.call_timeout = Duration::from_millis(ms);
            }
            if let Some(ms) = env("RHIZOME_JS_REQUEST_TIMEOUT_MS") {
                l.request_timeout = Duration::from_millis(ms);
            }
            if let Some(mb) = env("RHIZOME_JS_MEMORY_MB") {
                l.memory_bytes = (mb as usize).saturating_mul(1 << 20);
            }
            l
        })
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum JsError {
    /// The source is not a function expression (CouchDB's
    /// `compilation_error`).
    #[error("{0}")]
    Compile(String),
    /// The function threw: the value thrown, as JSON (a string for errors).
    #[error("{0}")]
    Thrown(Value),
    /// Past the call's time limit (CouchDB's `os_process_error`).
    #[error("the function ran past its time limit of {0:?}")]
    Timeout(Duration),
    /// Past the time all of its request's JavaScript may take, or its
    /// request's client went away ([`RequestBounds`]).
    #[error("the request's JavaScript stopped: {0}")]
    RequestStopped(&'static str),
    /// Past the memory limit; the sandbox should not be used again.
    #[error("the function ran out of memory (limit {0} bytes)")]
    OutOfMemory(usize),
    /// A value that cannot cross (a result that is not JSON).
    #[error("{0}")]
    Value(String),
}

/// A compiled function of this sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FnId(u32);

pub struct Sandbox {
    // `context` holds a reference to `runtime`: dropped first.
    context: Context,
    runtime: Runtime,
    limits: Limits,
    deadline: Rc<Cell<Option<Instant>>>,
    /// The request's bounds during a call (`RequestBounds`).
    request: Rc<std::cell::RefCell<RequestBounds>>,
}

impl Sandbox {
    pub fn new(limits: Limits) -> Result<Sandbox, JsError> {
        let runtime = Runtime::new().map_err(|e| JsError::Value(format!("cannot start JavaScript: {e}")))?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(limits.stack_bytes);
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let request: Rc<std::cell::RefCell<RequestBounds>> = Rc::default();
        let (watched, watched_request) = (deadline.clone(), request.clone());
        runtime.set_interrupt_handler(Some(Box::new(move || watched.get().is_some_and(|d| Instant::now() > d) || watched_request.borrow().cancelled())));
        let context = Context::full(&runtime).map_err(|e| JsError::Value(format!("cannot start JavaScript: {e}")))?;
        let sandbox = Sandbox { context, runtime, limits, deadline, request };
        sandbox.run(|ctx| ctx.eval::<(), _>(PRELUDE))?;
        Ok(sandbox)
    }

    /// Runs `f` with the deadline set, mapping exceptions to [`JsError`].
    fn run<T>(&self, f: impl for<'js> FnOnce(&Ctx<'js>) -> rquickjs::Result<T>) -> Result<T, JsError> {
        let limits = self.limits;
        let started = Instant::now();
        let request = RequestBounds::current();
        if request.cancelled() {
            return Err(JsError::RequestStopped("its client went away"));
        }
        if request.deadline.is_some_and(|d| started >= d) {
            return Err(JsError::RequestStopped("past the time all of a request's JavaScript may take"));
        }
        let call_deadline = started + limits.call_timeout;
        self.deadline.set(Some(request.deadline.map_or(call_deadline, |d| d.min(call_deadline))));
        *self.request.borrow_mut() = request.clone();
        let out = self.context.with(|ctx| match f(&ctx) {
            Ok(v) => Ok(v),
            Err(rquickjs::Error::Exception) => Err(thrown(&ctx)),
            Err(e) => Err(JsError::Value(e.to_string())),
        });
        self.deadline.set(None);
        *self.request.borrow_mut() = RequestBounds::default();
        let interrupted_by_request = request.cancelled() || request.deadline.is_some_and(|d| Instant::now() >= d && d < call_deadline);
        out.map_err(|e| match e {
            JsError::Thrown(Value::String(m)) if m.contains("interrupted") && request.cancelled() => JsError::RequestStopped("its client went away"),
            JsError::Thrown(Value::String(m)) if m.contains("interrupted") && interrupted_by_request => {
                JsError::RequestStopped("past the time all of a request's JavaScript may take")
            }
            JsError::Thrown(Value::String(m)) if m.contains("out of memory") => JsError::OutOfMemory(limits.memory_bytes),
            JsError::Thrown(Value::String(m)) if m.contains("interrupted") && started.elapsed() >= limits.call_timeout => {
                JsError::Timeout(limits.call_timeout)
            }
            other => other,
        })
    }

    /// Compiles a function expression; `ddoc` is what its `require` sees.
    pub fn compile(&mut self, source: &str, ddoc: &Value) -> Result<FnId, JsError> {
        let ddoc = ddoc.to_string();
        self.run(|ctx| {
            let compile: Function = ctx.globals().get("__compile")?;
            let ddoc = ctx.json_parse(ddoc)?;
            compile.call::<_, u32>((source, ddoc))
        })
        .map(FnId)
        .map_err(|e| match e {
            JsError::Thrown(v) => JsError::Compile(describe(&v)),
            other => other,
        })
    }

    /// Runs map functions on one document: for each function, its emitted
    /// `[key, value]` pairs, or what it threw.
    pub fn map(&mut self, fns: &[FnId], doc: &str) -> Result<Vec<Result<Vec<(Value, Value)>, String>>, JsError> {
        let indexes: Vec<u32> = fns.iter().map(|f| f.0).collect();
        let text = self.run(|ctx| {
            let map: Function = ctx.globals().get("__map")?;
            let doc = ctx.json_parse(doc)?;
            let out: JsValue = map.call((indexes, doc))?;
            stringify(ctx, out)
        })?;
        let out: Vec<Value> = serde_json::from_str(&text).map_err(|e| JsError::Value(format!("emitted values: {e}")))?;
        Ok(out
            .into_iter()
            .map(|per_fn| match per_fn {
                Value::Array(pairs) => Ok(pairs
                    .into_iter()
                    .map(|p| match p {
                        Value::Array(mut kv) if kv.len() == 2 => {
                            let v = kv.pop().unwrap_or(Value::Null);
                            (kv.pop().unwrap_or(Value::Null), v)
                        }
                        other => (other, Value::Null),
                    })
                    .collect()),
                Value::Object(mut e) => Err(e.shift_remove("error").map(|m| describe(&m)).unwrap_or_default()),
                _ => Err("the map function gave no result".to_owned()),
            })
            .collect())
    }

    /// Calls a compiled function with JSON arguments; its result as JSON
    /// (`undefined` is `null`).
    pub fn call(&mut self, f: FnId, args: &[Value]) -> Result<Value, JsError> {
        let args = Value::Array(args.to_vec()).to_string();
        let text = self.run(|ctx| {
            let call: Function = ctx.globals().get("__call")?;
            let args = ctx.json_parse(args)?;
            let out: JsValue = call.call((f.0, args))?;
            stringify(ctx, out)
        })?;
        serde_json::from_str(&text).map_err(|e| JsError::Value(format!("result: {e}")))
    }

    /// What functions passed to `log()` since the last call of this.
    pub fn take_logs(&mut self) -> Vec<String> {
        self.run(|ctx| {
            // Asked after every document an index maps: nothing to copy
            // (nor a new array to make) when nothing was logged.
            let logs: rquickjs::Array = ctx.globals().get("__logs")?;
            if logs.is_empty() {
                return Ok(None);
            }
            let text = stringify(ctx, logs.into_value())?;
            ctx.globals().set("__logs", rquickjs::Array::new(ctx.clone())?)?;
            Ok(Some(text))
        })
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
    }

    /// Bytes the runtime's heap holds now.
    pub fn memory_used(&self) -> usize {
        self.runtime.memory_usage().memory_used_size as usize
    }
}

/// `JSON.stringify(v)`, `"null"` for `undefined` and functions.
fn stringify<'js>(ctx: &Ctx<'js>, v: JsValue<'js>) -> rquickjs::Result<String> {
    Ok(match ctx.json_stringify(v)? {
        Some(s) => s.to_string()?,
        None => "null".to_owned(),
    })
}

/// The pending exception as JSON: an `Error`'s message, else the value.
fn thrown(ctx: &Ctx<'_>) -> JsError {
    let caught = ctx.catch();
    if let Some(e) = caught.as_exception() {
        return JsError::Thrown(Value::String(e.message().unwrap_or_else(|| "error".to_owned())));
    }
    let text = stringify(ctx, caught).unwrap_or_else(|_| "null".to_owned());
    JsError::Thrown(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// A thrown value as a message: a string as it is, CouchDB's
/// `["error", name, reason]` and `{"forbidden": reason}` by their reason.
pub fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) if a.len() == 3 => a[2].as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
