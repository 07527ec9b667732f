//! The console at `/_utils/`: Apache CouchDB's Fauxton (vendored built
//! files, `console/fauxton/`, pinned in `console/VENDORED`) and Rhizome's
//! own screens for SPARQL, graph walks and LDP (`console/rhizome/`, with
//! YASGUI and cytoscape from `console/yasgui/` and `console/cytoscape/`).
//! Every file is embedded in the binary by `build.rs`; nothing is read
//! from disk or the network at run time.
//!
//! Paths: `/_utils/` is Fauxton's `index.html`, with one script added
//! (`rhizome/nav.js`) that puts Rhizome's screens in Fauxton's navigation;
//! `/_utils/rhizome/...` are Rhizome's screens, `/_utils/vendor/{package}/...`
//! the other vendored packages, and any other path a file of Fauxton's
//! build. The files are public, as CouchDB's: the screens sign in through
//! `/_session` and every request they make is checked as any other.

use crate::error::HttpError;
use crate::http::{self, Body, Request};
use bytes::Bytes;
use hyper::{Method, Response};

mod files {
    include!(concat!(env!("OUT_DIR"), "/console_files.rs"));
}

/// The script Fauxton's page loads after its own bundle.
const NAV_SCRIPT: &str = "<script type=\"text/javascript\" src=\"rhizome/nav.js\"></script>";

/// Where a screen of Rhizome's takes Fauxton's stylesheets.
const STYLES_MARK: &str = "<!--fauxton-styles-->";

/// The `<link>`s of Fauxton's stylesheets, read from its `index.html`
/// (their names carry a build hash), for a page in `rhizome/`.
fn fauxton_styles() -> String {
    let index = String::from_utf8_lossy(file("fauxton/index.html").unwrap_or_default());
    index
        .split('"')
        .filter(|s| s.starts_with("dashboard.assets/css/") && s.ends_with(".css"))
        .map(|s| format!("<link href=\"../{s}\" rel=\"stylesheet\">"))
        .collect()
}

fn file(path: &str) -> Option<&'static [u8]> {
    files::FILES.binary_search_by(|(p, _)| (*p).cmp(path)).ok().map(|i| files::FILES[i].1)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "png" => "image/png",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "eot" => "application/vnd.ms-fontobject",
        _ => "text/plain; charset=utf-8",
    }
}

/// Where a path under `/_utils/` is in `console/`.
fn locate(rest: &[String]) -> Option<String> {
    if rest.iter().any(|s| s.is_empty() || s == "." || s == ".." || s.contains('/')) {
        return None;
    }
    Some(match rest {
        [] => "fauxton/index.html".to_owned(),
        [first, tail @ ..] if first == "rhizome" && !tail.is_empty() => format!("rhizome/{}", tail.join("/")),
        [first, package, tail @ ..] if first == "vendor" && !tail.is_empty() && package != "fauxton" && package != "rhizome" => format!("{package}/{}", tail.join("/")),
        _ => format!("fauxton/{}", rest.join("/")),
    })
}

/// `GET /_utils/...` (`rest`: the segments after `_utils`).
pub fn handle(req: &Request, rest: &[String]) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD) {
        return Err(HttpError::method_not_allowed("GET,HEAD"));
    }
    let rest: &[String] = if rest == ["index.html"] { &[] } else { rest };
    let path = locate(rest).ok_or_else(|| HttpError::not_found("no such file in the console"))?;
    let bytes = file(&path).ok_or_else(|| HttpError::not_found(format!("no file /_utils/{} in the console", rest.join("/"))))?;
    let body = if path == "fauxton/index.html" {
        let page = String::from_utf8_lossy(bytes);
        Bytes::from(page.replacen("</body>", &format!("{NAV_SCRIPT}</body>"), 1))
    } else if path.starts_with("rhizome/") && path.ends_with(".html") {
        let page = String::from_utf8_lossy(bytes);
        Bytes::from(page.replacen(STYLES_MARK, &fauxton_styles(), 1))
    } else {
        Bytes::from_static(bytes)
    };
    let mut r = http::response(200, content_type(&path), body);
    http::set_header(&mut r, "x-content-type-options", "nosniff");
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(path: &str) -> Vec<String> {
        path.split('/').filter(|s| !s.is_empty()).map(str::to_owned).collect()
    }

    #[test]
    fn paths_map_to_the_vendored_folders() {
        assert_eq!(locate(&[]).as_deref(), Some("fauxton/index.html"));
        assert_eq!(locate(&segs("dashboard.assets/css/x.css")).as_deref(), Some("fauxton/dashboard.assets/css/x.css"));
        assert_eq!(locate(&segs("rhizome/sparql.html")).as_deref(), Some("rhizome/sparql.html"));
        assert_eq!(locate(&segs("vendor/yasgui/yasgui.min.js")).as_deref(), Some("yasgui/yasgui.min.js"));
        assert_eq!(locate(&["..".into(), "VENDORED".into()]), None);
        assert_eq!(locate(&["a/b".into()]), None);
    }

    #[test]
    fn screens_get_fauxtons_stylesheets() {
        let styles = fauxton_styles();
        assert!(styles.matches("<link href=\"../dashboard.assets/css/").count() >= 1, "{styles}");
    }

    #[test]
    fn every_vendored_package_and_screen_is_embedded() {
        for path in ["fauxton/index.html", "fauxton/LICENSE", "yasgui/yasgui.min.js", "cytoscape/cytoscape.min.js", "rhizome/nav.js", "rhizome/sparql.html", "rhizome/graph.html", "rhizome/ldp.html", "NOTICE"] {
            assert!(file(path).is_some_and(|b| !b.is_empty()), "{path} is not embedded");
        }
        // Fauxton's page loads its bundles from dashboard.assets/: each is there.
        let index = String::from_utf8_lossy(file("fauxton/index.html").unwrap());
        for src in index.split(['"']).filter(|s| s.starts_with("dashboard.assets/")) {
            assert!(file(&format!("fauxton/{src}")).is_some(), "{src} named by index.html is missing");
        }
    }
}
