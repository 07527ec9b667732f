//! The query options of `GET /_all_dbs`, as CouchDB reads them
//! (https://docs.couchdb.org/en/stable/api/server/common.html#all-dbs):
//! `startkey`/`start_key` and `endkey`/`end_key` (JSON strings),
//! `inclusive_end` (default true), `descending`, `skip` and `limit`;
//! `key` (one name: both bounds, unless `startkey` or `endkey` replaces
//! one) and `keys` (a JSON array: the names listed that exist, in its
//! order; entries that are not strings name nothing).
//! Fauxton's database jump box asks `startkey="ab"&endkey="ab香"&limit=30`
//! and its list pages with `skip` and `limit`.

use crate::error::HttpError;
use crate::http::Request;
use serde_json::Value;

fn key(req: &Request, names: &[&str]) -> Result<Option<String>, HttpError> {
    for &name in names {
        match req.json_param(name)? {
            None => continue,
            Some(Value::String(s)) => return Ok(Some(s)),
            Some(_) => return Err(HttpError::bad_request(format!("{name} must be a JSON string (a database name)"))),
        }
    }
    Ok(None)
}

fn flag(req: &Request, name: &str, default: bool) -> Result<bool, HttpError> {
    match req.param(name) {
        None => Ok(default),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(HttpError::bad_request(format!("Invalid boolean parameter {name}: {v:?}"))),
    }
}

/// The names (sorted ascending) that the request's options select, in
/// the order it asks for.
pub fn select(mut names: Vec<String>, req: &Request) -> Result<Vec<String>, HttpError> {
    let exact = key(req, &["key"])?;
    let start = key(req, &["startkey", "start_key"])?;
    let end = key(req, &["endkey", "end_key"])?;
    if let Some(keys) = req.json_param("keys")? {
        let Value::Array(keys) = keys else {
            return Err(HttpError::bad_request("`keys` must be an array of strings."));
        };
        if start.is_some() || end.is_some() {
            return Err(HttpError::bad_request("`keys` is incompatible with `key`, `start_key` and `end_key`"));
        }
        // `names` is sorted: each listed name is found by a binary search.
        names = keys.iter().filter_map(Value::as_str).filter(|k| names.binary_search_by(|n| n.as_str().cmp(k)).is_ok()).map(str::to_owned).collect();
        let skip = req.number("skip")?.unwrap_or(0) as usize;
        let limit = req.number("limit")?.map(|n| n as usize);
        return Ok(names.into_iter().skip(skip).take(limit.unwrap_or(usize::MAX)).collect());
    }
    let (start, end) = (start.or_else(|| exact.clone()), end.or(exact));
    let inclusive_end = flag(req, "inclusive_end", true)?;
    let descending = flag(req, "descending", false)?;
    let skip = req.number("skip")?.unwrap_or(0) as usize;
    let limit = req.number("limit")?.map(|n| n as usize);
    if descending {
        names.reverse();
    }
    // Descending, the start key is the upper bound and the end key the lower.
    let before_start = |n: &str| match &start {
        Some(s) if descending => n > s.as_str(),
        Some(s) => n < s.as_str(),
        None => false,
    };
    let past_end = |n: &str| match &end {
        Some(e) if descending => n < e.as_str() || (!inclusive_end && n == e.as_str()),
        Some(e) => n > e.as_str() || (!inclusive_end && n == e.as_str()),
        None => false,
    };
    Ok(names
        .into_iter()
        .skip_while(|n| before_start(n))
        .take_while(|n| !past_end(n))
        .skip(skip)
        .take(limit.unwrap_or(usize::MAX))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(query: &str) -> Request {
        Request {
            method: hyper::Method::GET,
            segments: vec!["_all_dbs".into()],
            query: crate::http::parse_query(query).unwrap(),
            headers: Default::default(),
            body: Default::default(),
            peer: None,
            cancelled: Default::default(),
            responder: Default::default(),
            memory: rhizome_sparql::MemoryPool::new(usize::MAX).reservation(),
        }
    }

    fn names() -> Vec<String> {
        ["_users", "alpha", "beta", "betamax", "gamma"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_select_as_couchdb() {
        assert_eq!(select(names(), &req("")).unwrap(), names());
        assert_eq!(select(names(), &req("skip=1&limit=2")).unwrap(), ["alpha", "beta"]);
        // Fauxton's jump box: a prefix.
        assert_eq!(select(names(), &req("startkey=%22beta%22&endkey=%22beta%E9%A6%99%22&limit=30")).unwrap(), ["beta", "betamax"]);
        assert_eq!(select(names(), &req("start_key=%22b%22&end_key=%22beta%22&inclusive_end=false")).unwrap(), Vec::<String>::new());
        assert_eq!(select(names(), &req("startkey=%22b%22&endkey=%22beta%22")).unwrap(), ["beta"]);
        assert_eq!(select(names(), &req("descending=true&startkey=%22beta%22&limit=2")).unwrap(), ["beta", "alpha"]);
        assert_eq!(select(names(), &req("startkey=1")).unwrap_err().status, 400);
        assert_eq!(select(names(), &req("limit=x")).unwrap_err().status, 400);
        // One name, and a name with a bound replaced (CouchDB 3.5's answers).
        assert_eq!(select(names(), &req("key=%22beta%22")).unwrap(), ["beta"]);
        assert_eq!(select(names(), &req("key=%22beta%22&endkey=%22gamma%22")).unwrap(), ["beta", "betamax", "gamma"]);
        assert_eq!(select(names(), &req("key=%22nope%22")).unwrap(), Vec::<String>::new());
        // Listed names that exist, in the order asked.
        assert_eq!(select(names(), &req("keys=%5B%22gamma%22,%22nope%22,1,%22alpha%22%5D")).unwrap(), ["gamma", "alpha"]);
        assert_eq!(select(names(), &req("keys=%5B%22gamma%22,%22alpha%22%5D&limit=1")).unwrap(), ["gamma"]);
        assert_eq!(select(names(), &req("keys=%22alpha%22")).unwrap_err().status, 400);
        assert_eq!(select(names(), &req("keys=%5B%22alpha%22%5D&startkey=%22a%22")).unwrap_err().status, 400);
    }
}
