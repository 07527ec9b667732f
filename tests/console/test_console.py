"""Every screen of the console at /_utils/ in Debian's chromium: Fauxton's
(sign in and out, databases, documents, the editor, Mango, changes,
permissions) and Rhizome's (SPARQL, graph, LDP). Each test acts as a user
would, checks the result through the HTTP API, and fails on any page or
console error (conftest.py)."""
import re
import time
from concurrent.futures import ThreadPoolExecutor
import urllib.parse

from playwright.sync_api import expect

from conftest import ADMIN, Page


def q(s):
    return urllib.parse.quote(s, safe="")


def test_sign_in_and_out(chromium_context, server):
    page = Page(chromium_context, server, "sign_in_and_out")
    page.page.context.clear_cookies()
    page.goto("/_utils/#/login")
    page.page.fill("#username", ADMIN[0])
    page.page.fill("#password", ADMIN[1])
    page.shot("login")
    page.page.click("#submit")
    page.page.wait_for_selector("text=You have been logged in.")
    cookies = {c["name"]: c["value"] for c in page.page.context.cookies()}
    assert "AuthSession" in cookies
    r = server.http.get(server.url + "/_session", auth=None, cookies={"AuthSession": cookies["AuthSession"]})
    assert r.json()["userCtx"]["name"] == ADMIN[0]
    # The signed-in screen's requests first (on a loaded machine its
    # database list could still be on its way when the session ends).
    page.page.wait_for_load_state("networkidle")
    signed_in_errors = len(page.errors)
    page.page.click("text=Log Out")
    page.page.wait_for_selector("#username")
    page.shot("signed-out")
    assert "AuthSession" not in {c["name"]: c["value"] for c in page.page.context.cookies() if c["value"]}
    page.page.close()
    # Signed out, a request of the signed-in screens still answered is a
    # 401, which the browser logs; any other error still fails the test.
    page.errors[signed_in_errors:] = [e for e in page.errors[signed_in_errors:] if "status of 401 (Unauthorized)" not in e]
    page.check_clean()


def test_databases_list_create_and_delete(tab, server):
    page = tab.page
    tab.goto("/_utils/#/_all_dbs")
    row = page.locator("tr", has_text="faculty")
    expect(row).to_contain_text("8")  # the document count, once Fauxton has it
    tab.shot("list")
    page.click("text=Create Database")
    page.fill("#js-new-database-name", "made-in-fauxton")
    page.click("#js-create-database")
    expect(page).to_have_url(re.compile(r".*#/?database/made-in-fauxton/_all_docs"))
    assert server.get("/made-in-fauxton").status_code == 200
    tab.shot("created")
    tab.goto("/_utils/#/_all_dbs")
    page.click("[aria-label='Delete made-in-fauxton']")
    page.fill(".modal input", "made-in-fauxton")
    tab.shot("delete")
    page.click(".modal .btn-danger")
    page.locator("tr", has_text="made-in-fauxton").wait_for(state="detached")
    assert server.get("/made-in-fauxton").status_code == 404


def test_databases_paginate_past_thousands(tab, server):
    # 2,100 databases: the list pages through them, 20 to a page.
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(lambda i: server.put(f"/many-{i:05d}").status_code, range(2100))) <= {201, 412}
    print(f"created 2,100 databases in {time.monotonic() - started:.1f} s")
    page = tab.page
    tab.goto("/_utils/#/_all_dbs")
    total = len(server.get("/_all_dbs").json())
    assert total > 2100
    page.locator(f"text=Showing 1–20 of {total} databases").wait_for()
    page.click("text=»")
    page.locator(f"text=Showing 21–40 of {total} databases").wait_for()
    names = server.get("/_all_dbs", params={"skip": 20, "limit": 20}).json()
    for name in names:
        expect(page.locator("tr", has_text=name).first).to_be_visible()
    tab.shot("page-2")
    # The databases stay: the server is this session's, removed at its end.


def test_document_editor_saves_a_revision(tab, server):
    server.put("/editing")
    page = tab.page
    tab.goto("/_utils/#/database/editing/_new")
    editor = page.locator(".ace_text-input")
    editor.wait_for(state="attached")
    page.click(".ace_content")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text('{"_id": "made-in-editor", "title": "First"}')
    tab.shot("new-doc")
    page.click("#doc-editor-actions-panel button:has-text('Create Document')")
    # Fauxton goes back to the database's documents once it saved.
    expect(page).to_have_url(re.compile(r".*#/?database/editing/_all_docs"))
    doc = server.get("/editing/made-in-editor").json()
    assert doc["title"] == "First" and doc["_rev"].startswith("1-")
    page.locator("text=made-in-editor").first.wait_for()
    tab.shot("saved")
    # Open it, change it: a second revision.
    tab.goto("/_utils/#/database/editing/made-in-editor")
    page.locator(".ace_content", has_text="First").wait_for()
    page.click(".ace_content")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text('{"_id": "made-in-editor", "_rev": "%s", "title": "Second"}' % doc["_rev"])
    page.click("#doc-editor-actions-panel button:has-text('Save Changes')")
    expect(page).to_have_url(re.compile(r".*#/?database/editing/_all_docs"))
    doc = server.get("/editing/made-in-editor").json()
    assert doc["title"] == "Second" and doc["_rev"].startswith("2-")


def test_all_documents_lists_the_database(tab, server):
    page = tab.page
    tab.goto("/_utils/#/database/faculty/_all_docs")
    page.locator("text=http://www.unifr.ch/faculty.owl#Cudre").first.wait_for()
    ids = [r["id"] for r in server.get("/faculty/_all_docs").json()["rows"]]
    for doc_id in ids:
        assert page.locator(f"text={doc_id}").count() >= 1
    tab.shot("all-docs")


def test_mango_query_runs_and_explains(tab, server):
    page = tab.page
    tab.goto("/_utils/#/database/faculty/_find")
    page.locator("text=Run Query").wait_for()
    page.click("text=Run Query")
    page.locator("text=Showing document").first.wait_for()
    tab.shot("mango")
    page.click("text=Explain")
    page.locator("text=index").first.wait_for()
    tab.shot("explain")


def test_changes_and_permissions(tab, server):
    page = tab.page
    tab.goto("/_utils/#/database/faculty/_changes")
    page.locator("text=http://www.unifr.ch/faculty.owl#Cudre").first.wait_for()
    tab.shot("changes")
    tab.goto("/_utils/#/database/faculty/permissions")
    page.locator("text=Admins").first.wait_for()
    page.locator("input[placeholder='Username']").nth(1).fill("reader")
    page.locator("button:has-text('Add User')").nth(1).click()
    page.locator("text=reader").first.wait_for()
    sec = server.get("/faculty/_security").json()
    assert sec["members"]["names"] == ["reader"], sec
    tab.shot("permissions")
    server.put("/faculty/_security", json={})


def test_sparql_screen_queries_and_updates(tab, server):
    page = tab.page
    tab.goto("/_utils/rhizome/sparql.html?db=faculty")
    page.wait_for_function("window.rhizomeYasgui")
    # The database's prefixes are declared in the starting query.
    text = page.evaluate("window.rhizomeYasgui.getTab().getQuery()")
    assert "PREFIX faculty: <http://www.unifr.ch/faculty.owl#>" in text, text
    query = "SELECT ?s WHERE { GRAPH ?g { ?s a ?type } } ORDER BY ?s"
    page.evaluate("q => { window.rhizomeYasgui.getTab().setQuery(q); }", query)
    page.click(".yasqe_queryButton")
    page.locator(".yasr .dataTable tbody tr").first.wait_for()
    expected = {b["s"]["value"] for b in server.sparql("faculty", query)}
    shown = page.locator(".yasr .dataTable tbody").inner_text()
    for s in expected:
        assert s in shown, s
    # The query is in the URL: a reload gives it back.
    assert "query=" in page.url
    tab.shot("table")
    page.reload()
    page.wait_for_function("window.rhizomeYasgui")
    assert page.evaluate("window.rhizomeYasgui.getTab().getQuery()") == query
    # Raw response and chart.
    page.click(".yasr .select_response")
    tab.shot("raw")
    count = "SELECT ?type (COUNT(?s) AS ?n) WHERE { GRAPH ?g { ?s a ?type } } GROUP BY ?type"
    page.evaluate("q => { window.rhizomeYasgui.getTab().setQuery(q); }", count)
    page.click(".yasqe_queryButton")
    page.click(".yasr .select_chart")
    page.locator(".rz-chart rect").first.wait_for()
    tab.shot("chart")
    # An update, as the admin may.
    update = 'INSERT DATA { GRAPH <http://example.org/console> { <http://example.org/a> <http://example.org/p> "from the console" } }'
    page.evaluate("q => { window.rhizomeYasgui.getTab().setQuery(q); }", update)
    page.click(".yasqe_queryButton")
    page.locator("text=Update done.").wait_for()
    got = server.sparql("faculty", 'SELECT ?o WHERE { GRAPH <http://example.org/console> { ?s ?p ?o } }')
    assert [b["o"]["value"] for b in got] == ["from the console"]


def test_graph_screen_expands_finds_paths_and_opens_documents(tab, server):
    page = tab.page
    start = "http://www.unifr.ch/faculty.owl#Cudre"
    tab.goto(f"/_utils/rhizome/graph.html?db=faculty&start={q(start)}")
    page.locator("#rz-open-doc").wait_for()
    expected = {n["id"] for n in server.post("/faculty/_traverse", json={"start": start, "depth": 1, "direction": "out"}).json()["nodes"]}
    expected |= {n["id"] for n in server.post("/faculty/_traverse", json={"start": start, "depth": 1, "direction": "in"}).json()["nodes"]}
    drawn = set(page.evaluate("window.rhizomeGraph.nodes().map(n => n.id())"))
    assert drawn == expected | {start}, drawn
    tab.shot("expanded")
    # A shortest path between two of the nodes, as /_path finds it.
    nodes = sorted(expected)
    a, b = nodes[0], nodes[-1]
    page.fill("#rz-from", a)
    page.fill("#rz-to", b)
    page.click("#rz-path")
    page.locator("text=Shortest path:").wait_for()
    path = server.post("/faculty/_path", json={"from": a, "to": b, "direction": "any"}).json()["path"]
    on_path = page.evaluate("window.rhizomeGraph.nodes('.path').map(n => n.id())")
    assert sorted(on_path) == sorted(path)
    tab.shot("path")
    # A CONSTRUCT adds its links.
    page.fill("#rz-construct", "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o FILTER(isIRI(?o)) } }")
    page.click("#rz-run-construct")
    page.locator("text=CONSTRUCT:").wait_for()
    # The start node's document opens in Fauxton's editor.
    page.evaluate("s => { window.rhizomeGraph.getElementById(s).emit('tap'); }", start)
    page.click("#rz-open-doc")
    page.wait_for_url(re.compile(r".*/_utils/#/database/faculty/.+"))
    page.locator(".ace_content").wait_for()
    assert start in page.locator(".ace_content").inner_text()
    tab.shot("editor")


def test_ldp_screen_browses_creates_and_uploads(tab, server):
    server.put("/library")
    page = tab.page
    tab.goto("/_utils/rhizome/ldp.html?db=library")
    page.locator("text=Create in this container").wait_for()
    page.fill("#rz-slug", "shelf")
    page.select_option("#rz-kind", "container")
    page.fill("#rz-turtle", '<> <http://purl.org/dc/terms/title> "Shelf" .')
    page.click("#rz-create-button")
    page.wait_for_url(re.compile(r".*path=shelf"))
    page.locator("text=Contains (0)").wait_for()
    assert 'Shelf' in server.get("/library/_ldp/shelf", headers={"Accept": "application/n-triples"}).text
    # Upload a non-RDF source into it.
    page.select_option("#rz-kind", "file")
    page.set_input_files("#rz-file", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"plain words\n"}])
    page.click("#rz-create-button")
    page.wait_for_url(re.compile(r".*path=shelf%2Fnotes.txt"))
    page.locator("#rz-download").wait_for()
    r = server.get("/library/_ldp/shelf/notes.txt")
    assert r.status_code == 200 and r.content == b"plain words\n"
    tab.shot("uploaded")
    page.click("text=shelf/")
    page.locator("#rz-children a", has_text="notes.txt").wait_for()
    tab.shot("browse")


def test_fauxton_navigation_links_rhizome_screens(tab, server):
    page = tab.page
    tab.goto("/_utils/#/database/faculty/_all_docs")
    page.locator("a[data-rhizome='sparql.html']").wait_for()
    assert page.get_attribute("a[data-rhizome='sparql.html']", "href") == "/_utils/rhizome/sparql.html?db=faculty"
    page.click("a[data-rhizome='graph.html']")
    expect(page).to_have_url(re.compile(r".*/_utils/rhizome/graph.html\?db=faculty"))
    page.locator("#primary-navbar a[title='Databases']").wait_for()
    tab.shot("graph-from-nav")
