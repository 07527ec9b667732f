//! The W3C LDP test suite 0.1.1 (`org.w3:ldp-testsuite:0.1.1`, shaded
//! jar, from Maven Central through `tests/ldp/pom.xml`, which
//! `scripts/setup` resolves) against a live `rhizome serve`: basic,
//! direct and indirect containers, the MemberResource tests of each (a
//! normal run never reaches them: they need the suites written here) and
//! the non-RDF source tests.
//!
//! On Java 11+ the suite needs `jaxb-api` and `javax.activation-api` on
//! its class path and `--add-opens` for Groovy's reflection, or it skips
//! everything. Each suite runs as its own TestNG suite in one JVM (two
//! `@BeforeSuite` methods named `setup` in one suite: TestNG runs one).
//!
//! Every MUST must pass; any other test that fails must be listed, with
//! its reason, in `tests/ldp_w3c/known-failures.txt`, and a listed test
//! that passes fails the run (so the list stays true). A MUST may be
//! skipped only for the reasons the suite itself gives when a check
//! cannot be automated ([`INHERENT_SKIPS`]).

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::request;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const LDP: &str = "http://www.w3.org/ns/ldp#";

/// (suite, test class, container kind).
const SUITES: &[(&str, &str, &str)] = &[
    ("basic", "BasicContainerTest", "basic"),
    ("direct", "DirectContainerTest", "direct"),
    ("indirect", "IndirectContainerTest", "indirect"),
    ("member-basic", "MemberResourceTest", "basic"),
    ("member-direct", "MemberResourceTest", "direct"),
    ("member-indirect", "MemberResourceTest", "indirect"),
    ("nonrdf", "NonRDFSourceTest", "basic"),
];

/// Why the suite skips tests by design: checks it cannot automate, checks
/// that run only when an earlier request was refused, and the container
/// PUT tests it leaves to MemberResourceTest.
const INHERENT_SKIPS: &[&str] = &[
    "This requirement or recommendation must be tested manually",
    "Skipping test because there are restrictions on PUT content for this resource",
    "Skipping test because PUT request was successful",
    "Server does not require If-Match header",
];

/// Opens Groovy (inside the shaded jar) needs on Java 17.
const OPENS: &[&str] = &[
    "java.base/java.lang",
    "java.base/java.lang.reflect",
    "java.base/java.lang.invoke",
    "java.base/java.lang.ref",
    "java.base/java.util",
    "java.base/java.util.regex",
    "java.base/java.util.concurrent",
    "java.base/java.util.function",
    "java.base/java.io",
    "java.base/java.net",
    "java.base/java.text",
    "java.base/java.math",
    "java.base/java.nio",
    "java.base/java.nio.charset",
    "java.base/java.security",
    "java.base/java.time",
    "java.base/sun.net.spi",
    "java.base/sun.net.www",
    "java.base/sun.net.www.protocol.http",
    "java.base/sun.nio.cs",
    "java.base/sun.security.ssl",
    "java.base/sun.util.calendar",
    "java.xml/jdk.xml.internal",
    "java.logging/java.util.logging",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The suite's class path, from Maven's local repository (offline).
fn class_path(work: &Path) -> String {
    let out_file = work.join("classpath.txt");
    let out = Command::new("mvn")
        .args(["-o", "-q", "-f"])
        .arg(repo().join("tests/ldp/pom.xml"))
        .arg("dependency:build-classpath")
        .arg(format!("-Dmdep.outputFile={}", out_file.display()))
        .output()
        .expect("mvn runs (scripts/setup installs Maven)");
    assert!(
        out.status.success(),
        "Maven's local repository lacks the LDP test suite: run ./scripts/setup\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::read_to_string(&out_file).expect("Maven wrote the class path").trim().to_owned()
}

fn admin(server: &ServerProcess, method: &str, target: &str, headers: &[(&str, &str)], body: &str) {
    let r = request(server.port, method, target, Some(ADMIN), headers, Some(body.as_bytes())).expect("the server answers");
    assert!(r.status == 201 || r.status == 204, "{method} {target}: {} {}", r.status, r.text());
}

/// The resources the suites run against: a container of each kind, each
/// with a child (the suite checks containment and membership triples on
/// the container itself), and an RDF source for the tests of a resource
/// that is not a container.
fn prepare(server: &ServerProcess) {
    let r = request(server.port, "PUT", "/db", Some(ADMIN), &[], None).expect("the server answers");
    assert_eq!(r.status, 201);
    let turtle = ("Content-Type", "text/turtle");
    let kinds = [
        ("basic", "BasicContainer", String::new()),
        ("direct", "DirectContainer", format!("<> <{LDP}membershipResource> <> ; <{LDP}hasMemberRelation> <{LDP}member> .")),
        (
            "indirect",
            "IndirectContainer",
            format!("<> <{LDP}membershipResource> <> ; <{LDP}hasMemberRelation> <{LDP}member> ; <{LDP}insertedContentRelation> <http://xmlns.com/foaf/0.1/primaryTopic> ."),
        ),
    ];
    for (path, model, body) in &kinds {
        let link = format!("<{LDP}{model}>; rel=\"type\"");
        admin(server, "PUT", &format!("/db/_ldp/{path}"), &[turtle, ("Link", &link)], body);
        let child = "<> <http://purl.org/dc/terms/title> \"a child\" ; <http://xmlns.com/foaf/0.1/primaryTopic> <#it> .";
        admin(server, "POST", &format!("/db/_ldp/{path}"), &[turtle, ("Slug", "seed")], child);
    }
    admin(server, "PUT", "/db/_ldp/resource", &[turtle], "<> <http://purl.org/dc/terms/title> \"an RDF source\" .");
}

fn suite_xml(name: &str, class: &str, kind: &str, root: &str, output: &Path) -> String {
    format!(
        r#"<!DOCTYPE suite SYSTEM "http://testng.org/testng-1.0.dtd">
<suite name="{name}">
  <parameter name="auth" value="{ADMIN}"/>
  <parameter name="output" value="{output}"/>
  <parameter name="httpLogging" value="false"/>
  <parameter name="skipLogging" value="true"/>
  <parameter name="readOnlyProp" value="{LDP}contains"/>
  <parameter name="containerAsResource" value="{root}resource"/>
  <parameter name="{kind}Container" value="{root}{kind}"/>
  <test name="{name}"><classes><class name="org.w3.ldp.testsuite.test.{class}"/></classes></test>
</suite>
"#,
        output = output.display()
    )
}

#[derive(Debug)]
struct Outcome {
    suite: String,
    method: String,
    status: String,
    message: String,
    groups: Vec<String>,
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[start..].find('"').map(|end| &tag[start..start + end])
}

/// The outcomes of `testng-results.xml`, with each test's groups (MUST,
/// SHOULD, MAY, MANUAL).
fn outcomes(xml: &str) -> Vec<Outcome> {
    let mut out = Vec::new();
    for suite in xml.split("<suite ").skip(1) {
        let name = attr(&format!(" {suite}"), "name").unwrap_or_default().to_owned();
        let mut groups: HashMap<String, Vec<String>> = HashMap::new();
        if let Some(g) = suite.split("<groups>").nth(1).and_then(|g| g.split("</groups>").next()) {
            for group in g.split("<group ").skip(1) {
                let gname = attr(&format!(" {group}"), "name").unwrap_or_default().to_owned();
                for m in group.split("<method ").skip(1) {
                    if let Some(method) = attr(&format!(" {m}"), "name") {
                        groups.entry(method.to_owned()).or_default().push(gname.clone());
                    }
                }
            }
        }
        for block in suite.split("<test-method ").skip(1) {
            let head = format!(" {}", block.split('>').next().unwrap_or_default());
            if attr(&head, "is-config") == Some("true") {
                continue;
            }
            let method = attr(&head, "name").unwrap_or_default().to_owned();
            let status = attr(&head, "status").unwrap_or_default().to_owned();
            let body = block.split("</test-method>").next().unwrap_or_default();
            let message = body
                .split("<message>")
                .nth(1)
                .and_then(|m| m.split("<![CDATA[").nth(1))
                .and_then(|m| m.split("]]>").next())
                .unwrap_or_default()
                .trim()
                .to_owned();
            out.push(Outcome { groups: groups.get(&method).cloned().unwrap_or_default(), suite: name.clone(), method, status, message });
        }
    }
    out
}

/// `suite method` -> reason, from the known-failures list.
fn known_failures() -> BTreeMap<(String, String), String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ldp_w3c/known-failures.txt");
    let text = std::fs::read_to_string(&path).expect("the known-failures list");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (key, reason) = l.split_once('#').expect("suite method # reason");
            let mut parts = key.split_whitespace();
            let suite = parts.next().expect("a suite").to_owned();
            let method = parts.next().expect("a method").to_owned();
            ((suite, method), reason.trim().to_owned())
        })
        .collect()
}

#[test]
fn w3c_ldp_testsuite_passes_every_must() {
    let work = tempfile::tempdir().unwrap();
    let cp = class_path(work.path());
    let data = tempfile::tempdir().unwrap();
    // On a port of its own and without RHIZOME_BASE_IRI: the data folder's
    // first start names resources under the address the server listens
    // on, so the suite follows every Location (issue 43, point 3).
    let server = ServerProcess::start_naming_itself(data.path());
    assert_ne!(server.port, 5984);
    prepare(&server);
    let root = format!("http://127.0.0.1:{}/db/_ldp/", server.port);
    let mut files = Vec::new();
    for (name, class, kind) in SUITES {
        let file = work.path().join(format!("{name}.xml"));
        std::fs::write(&file, suite_xml(name, class, kind, &root, &work.path().join("report"))).unwrap();
        files.push(file);
    }
    let out_dir = work.path().join("testng");
    let mut java = Command::new("java");
    for o in OPENS {
        java.arg("--add-opens").arg(format!("{o}=ALL-UNNAMED"));
    }
    let run = java.arg("-cp").arg(&cp).arg("org.testng.TestNG").arg("-d").arg(&out_dir).args(&files).current_dir(work.path()).output().expect("java runs (scripts/setup installs it)");
    let xml = std::fs::read_to_string(out_dir.join("testng-results.xml"))
        .unwrap_or_else(|e| panic!("TestNG wrote no results ({e}):\n{}\n{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr)));
    let results = outcomes(&xml);
    let known = known_failures();
    let is_known = |o: &Outcome| known.contains_key(&(o.suite.clone(), o.method.clone())) || known.contains_key(&(o.suite.clone(), "*".to_owned()));
    let mut problems = Vec::new();
    let mut counts: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for o in &results {
        let slot = match o.status.as_str() {
            "PASS" => 0,
            "FAIL" => 1,
            _ => 2,
        };
        counts.entry(SUITES.iter().find(|s| s.0 == o.suite).map_or("?", |s| s.0)).or_default()[slot] += 1;
        seen.insert((o.suite.clone(), o.method.clone()));
        let must = o.groups.iter().any(|g| g == "MUST");
        match o.status.as_str() {
            "PASS" if known.contains_key(&(o.suite.clone(), o.method.clone())) => problems.push(format!("{} {} passes now: remove it from known-failures.txt", o.suite, o.method)),
            "FAIL" if must => problems.push(format!("MUST {} {} failed: {}", o.suite, o.method, o.message)),
            "FAIL" if !is_known(o) => problems.push(format!("{} {} ({:?}) failed and is not a known failure: {}", o.suite, o.method, o.groups, o.message)),
            "SKIP" if must && !is_known(o) && !INHERENT_SKIPS.iter().any(|r| o.message.starts_with(r)) => {
                problems.push(format!("MUST {} {} was skipped: {:?}", o.suite, o.method, o.message))
            }
            _ => {}
        }
    }
    for ((suite, method), _) in &known {
        if method != "*" && !seen.contains(&(suite.clone(), method.clone())) {
            problems.push(format!("known failure {suite} {method} did not run"));
        }
    }
    for (suite, [pass, fail, skip]) in &counts {
        println!("ldp-testsuite {suite}: {pass} passed, {fail} failed, {skip} skipped");
    }
    let total: [usize; 3] = counts.values().fold([0; 3], |a, c| [a[0] + c[0], a[1] + c[1], a[2] + c[2]]);
    println!("ldp-testsuite: {} passed, {} failed (all known, none a MUST), {} skipped", total[0], total[1], total[2]);
    for (name, _, _) in SUITES.iter().filter(|s| s.0 != "nonrdf") {
        let passed = counts.get(name).map_or(0, |c| c[0]);
        assert!(passed >= 20, "suite {name} passed only {passed} tests: did it run? {}", String::from_utf8_lossy(&run.stdout));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
