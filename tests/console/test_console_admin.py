"""The console's document and server screens past the basics of
test_console.py, in Debian's chromium: conflicts, attachments, document
delete and clone, design documents and the view editor, Mango indexes,
replication and the scheduler, active tasks, users, config and setup.
Each test acts as a user would, checks the result through the HTTP API,
and fails on any page or console error (conftest.py)."""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse

import pytest
import requests
from playwright.sync_api import expect

from conftest import ADMIN, ROOT, free_port


def make_conflict(server, db, doc_id):
    """Two leaves of one document, as a replication of concurrent edits
    leaves them: the local edit and one written with new_edits=false."""
    assert server.put(f"/{db}").status_code in (201, 412)
    first = server.put(f"/{db}/{doc_id}", json={"colour": "red"}).json()["rev"]
    r = server.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [{"_id": doc_id, "_rev": "1-" + "f" * 32, "colour": "blue"}]})
    assert r.status_code == 201, r.text
    doc = server.get(f"/{db}/{doc_id}", params={"conflicts": "true"}).json()
    assert len(doc["_conflicts"]) == 1, doc
    return first, "1-" + "f" * 32


def test_conflicts_are_shown_and_resolved(tab, server):
    ours, theirs = make_conflict(server, "conflicted", "paint")
    winner = server.get("/conflicted/paint").json()["_rev"]
    loser = theirs if winner == ours else ours
    page = tab.page
    tab.goto("/_utils/#/database/conflicted/_all_docs")
    # The table layout asks _all_docs for conflicts and flags the document.
    page.click("button:has-text('Table')")
    page.locator("[data-conflicts-indicator]").first.wait_for()
    tab.shot("indicator")
    tab.goto("/_utils/#/database/conflicted/paint/conflicts")
    page.locator("text=Conflicting Revisions:").wait_for()
    expect(page.locator("body")).to_contain_text(loser)
    tab.shot("revisions")
    page.click("[data-id='button-select-theirs']")
    tab.shot("confirm")
    page.click(".modal button:has-text('Delete Revisions')")
    # Fauxton keeps the chosen revision's body as the winner and deletes the
    # other leaf: no conflict is left.
    for _ in range(100):
        doc = server.get("/conflicted/paint", params={"conflicts": "true"}).json()
        if "_conflicts" not in doc:
            break
        page.wait_for_timeout(100)
    assert "_conflicts" not in doc, doc
    chosen = "red" if loser == ours else "blue"
    assert doc["colour"] == chosen, doc
    tab.shot("resolved")


def eventually(check, what, tries=300):
    """Polls the server until `check()` holds (Fauxton's writes land after
    its page updates), with a bound rather than a sleep."""
    for _ in range(tries):
        got = check()
        if got:
            return got
        time.sleep(0.05)  # polling with the bound above
    raise AssertionError(f"never: {what}")


def test_attachments_upload_view_and_delete(tab, server):
    server.put("/files")
    rev = server.put("/files/report", json={"title": "Report"}).json()["rev"]
    page = tab.page
    tab.goto("/_utils/#/database/files/report")
    page.locator(".ace_content", has_text="Report").wait_for()
    page.click("button:has-text('Upload Attachment')")
    page.set_input_files(".modal input[type=file]", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"attached words\n"}])
    tab.shot("upload")
    page.click(".modal button:has-text('Upload')")
    r = eventually(lambda: (lambda r: r.status_code == 200 and r)(server.get("/files/report/notes.txt")), "the attachment is stored")
    assert r.content == b"attached words\n" and r.headers["content-type"].startswith("text/plain")
    tab.shot("uploaded")
    # The attachment's link in "View Attachments" serves its bytes.
    page.click("text=View Attachments")
    link = page.locator("a", has_text="notes.txt").first
    link.wait_for()
    href = link.get_attribute("href")
    got = page.context.request.get(urllib.parse.urljoin(page.url, href))
    assert got.status == 200 and got.body() == b"attached words\n", (href, got.status)
    tab.shot("view")
    page.keyboard.press("Escape")
    # Deleting it: the document saved without its _attachments entry, as
    # CouchDB drops an attachment a new revision does not name.
    doc = server.get("/files/report").json()
    page.click(".ace_content")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text('{"_id": "report", "_rev": "%s", "title": "Report"}' % doc["_rev"])
    page.click("#doc-editor-actions-panel button:has-text('Save Changes')")
    eventually(lambda: server.get("/files/report/notes.txt").status_code == 404, "the attachment is gone")
    doc = server.get("/files/report").json()
    assert "_attachments" not in doc and doc["_rev"].startswith("3-"), doc


def test_document_clone_and_delete(tab, server):
    server.put("/cloning")
    server.put("/cloning/original", json={"kind": "template", "n": 7})
    page = tab.page
    tab.goto("/_utils/#/database/cloning/original")
    page.locator(".ace_content", has_text="template").wait_for()
    page.click("button[title='Clone Document']")
    page.fill(".modal input", "the-copy")
    tab.shot("clone")
    page.click(".modal button:has-text('Clone')")
    copy = eventually(lambda: (lambda r: r.status_code == 200 and r.json())(server.get("/cloning/the-copy")), "the clone is saved")
    assert copy["kind"] == "template" and copy["n"] == 7 and copy["_rev"].startswith("1-"), copy
    # Fauxton opens the copy; delete it from its editor.
    page.wait_for_url(re.compile(r".*#/?database/cloning/the-copy$"))
    page.locator(".ace_content", has_text="the-copy").wait_for()
    page.click("button[title='Delete']")
    tab.shot("delete")
    page.click(".modal button:has-text('Delete')")
    eventually(lambda: server.get("/cloning/the-copy").status_code == 404, "the clone is deleted")
    assert server.get("/cloning/the-copy").json()["reason"] == "deleted"
    assert server.get("/cloning/original").status_code == 200


def test_view_editor_creates_and_runs_a_view(tab, server):
    server.put("/shelves")
    r = server.post("/shelves/_bulk_docs", json={"docs": [{"_id": f"b{i}", "pages": i * 10} for i in range(1, 6)]})
    assert r.status_code == 201
    page = tab.page
    tab.goto("/_utils/#/database/shelves/new_view")
    page.locator("text=Design Document").first.wait_for()
    tab.shot("form")
    page.fill("input[placeholder='newDesignDoc']", "books")
    page.fill("input[value='new-view']", "pages")
    page.click(".ace_content")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text("function (doc) { if (doc.pages) { emit(doc._id, doc.pages); } }")
    page.locator("select").last.select_option("_sum")
    # Leaving the map editor lays the form out again (a "Format Code"
    # button appears): click the button once it is still.
    page.click("text=Map function")
    page.locator("button:has-text('Format Code')").wait_for()
    tab.shot("filled")
    page.click("button:has-text('Create Document and then Build Index')")
    expect(page).to_have_url(re.compile(r".*#/?database/shelves/_design/books/_view/pages"))
    ddoc = eventually(lambda: (lambda r: r.status_code == 200 and r.json())(server.get("/shelves/_design/books")), "the design document is saved")
    assert "doc.pages" in ddoc["views"]["pages"]["map"] and ddoc["views"]["pages"]["reduce"] == "_sum", ddoc
    assert server.get("/shelves/_design/books/_view/pages").json()["rows"][0]["value"] == 150
    # Fauxton runs the view (reduce=false, its default) and shows its rows.
    rows = server.get("/shelves/_design/books/_view/pages", params={"reduce": "false"}).json()["rows"]
    assert len(rows) == 5
    for row in rows:
        page.locator("td", has_text=row["id"]).first.wait_for()
    tab.shot("rows")
    # The design document is listed with its view.
    tab.goto("/_utils/#/database/shelves/_design_docs")
    page.locator("text=_design/books").first.wait_for()


def test_mango_indexes_are_created_listed_and_deleted(tab, server):
    server.put("/indexed")
    server.post("/indexed/_bulk_docs", json={"docs": [{"_id": f"b{i}", "pages": i * 10} for i in range(1, 6)]})
    page = tab.page
    tab.goto("/_utils/#/database/indexed/_index")
    page.locator("text=special: _id").wait_for()
    page.locator(".ace_content").first.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text('{"index": {"fields": ["pages"]}, "name": "by-pages", "ddoc": "shelf-indexes", "type": "json"}')
    page.click("button:has-text('Create Index')")
    # Listed by Fauxton, from the server's _index.
    page.locator("text=json: pages").wait_for()
    tab.shot("created")
    indexes = server.get("/indexed/_index").json()["indexes"]
    assert {"ddoc": "_design/shelf-indexes", "name": "by-pages", "type": "json", "partitioned": False,
            "def": {"fields": [{"pages": "asc"}]}} in indexes, indexes
    # The index serves a query.
    explain = server.post("/indexed/_explain", json={"selector": {"pages": {"$gt": 20}}}).json()
    assert explain["index"]["name"] == "by-pages", explain
    # Select it, delete the selection.
    # Fauxton asks with the browser's confirm(); the user says yes.
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("label[for='checkbox-_design/shelf-indexes']")
    page.click("button[title='Delete all selected']")
    page.locator("text=json: pages").wait_for(state="detached")
    names = [i["name"] for i in server.get("/indexed/_index").json()["indexes"]]
    assert names == ["_all_docs"], names
    assert server.get("/indexed/_design/shelf-indexes").status_code == 404


def test_setup_screen_sees_a_configured_single_node(tab, server):
    page = tab.page
    tab.goto("/_utils/#/setup")
    page.locator("text=configured for production usage as a single node").wait_for()
    tab.shot("setup")
    # What the setup screen's actions get, as a single-node CouchDB 3.5
    # answers once set up.
    assert server.get("/_cluster_setup").json() == {"state": "single_node_enabled"}
    assert server.get("/_cluster_setup", params={"ensure_dbs_exist": '["_users","_replicator"]'}).json() == {"state": "single_node_enabled"}
    single = {"action": "enable_single_node", "username": "admin", "password": "x", "bind_address": "127.0.0.1", "port": 5984, "singlenode": True}
    r = server.post("/_cluster_setup", json=single)
    assert (r.status_code, r.json()) == (200, {"ok": True})
    r = server.post("/_cluster_setup", json={"action": "finish_cluster"})
    assert (r.status_code, r.json()) == (400, {"error": "bad_request", "reason": "Cluster is already finished"})
    r = server.post("/_cluster_setup", json={"action": "enable_cluster", "node_count": 3})
    assert r.status_code == 400 and "one node" in r.json()["reason"]
    assert server.post("/_cluster_setup", json={"action": "bogus"}).json()["reason"] == "Invalid Action"
    assert server.post("/_cluster_setup", data="{}", headers={"Content-Type": "text/plain"}).status_code == 415
    assert server.http.put(server.url + "/_cluster_setup").status_code == 405
    assert requests.get(server.url + "/_cluster_setup").status_code == 401


def test_footer_shows_rhizomes_version(tab, server):
    welcome = server.get("/").json()
    # Clients read `version` as the CouchDB API level; it stays CouchDB's.
    assert welcome["version"].startswith("3.") and welcome["vendor"]["name"] == "Rhizome"
    page = tab.page
    tab.goto("/_utils/#/_all_dbs")
    footer = page.locator(".faux-navbar__version-footer")
    expect(footer).to_contain_text(f"v. {welcome['vendor']['version']}")
    expect(footer).to_contain_text("Fauxton on Rhizome")
    assert footer.get_attribute("title") == f"CouchDB API {welcome['version']}"
    # Fauxton redraws the navigation bar when it is narrowed: the footer stays.
    page.click(".faux-navbar__burger")
    page.click(".faux-navbar__burger")
    expect(footer).to_contain_text(f"v. {welcome['vendor']['version']}")
    tab.shot("footer")


def start_replication(tab, source, target, doc_id, continuous, new_target, remote=None):
    """Fills Fauxton's replication form as a user does: a local source and
    a local target (or, given `remote` as (url, name, password), a database
    of another server), each with its admin's name and password."""
    page = tab.page
    tab.goto("/_utils/#/replication/_create")
    page.select_option("#replication-source", "REPLICATION_SOURCE_LOCAL")
    page.locator("text=Database name").first.click()
    page.keyboard.type(source)
    page.keyboard.press("Enter")
    page.select_option("#select-replication-source-auth", "BASIC_AUTH")
    page.fill("#replication-source-auth-username", ADMIN[0])
    page.fill("#replication-source-auth-password", ADMIN[1])
    target_user = ADMIN
    if remote:
        page.locator("select").nth(2).select_option("REPLICATION_TARGET_EXISTING_REMOTE_DATABASE")
        page.fill("input.replication__remote-connection-url", remote[0])
        target_user = remote[1:]
    elif new_target:
        page.locator("select").nth(2).select_option("REPLICATION_TARGET_NEW_LOCAL_DATABASE")
        page.fill("input.replication__new-input", target)
    else:
        page.locator("select").nth(2).select_option("REPLICATION_TARGET_EXISTING_LOCAL_DATABASE")
        # The source's box shows its name now: the one left is the target's.
        page.locator("text=Database name").first.click()
        page.keyboard.type(target)
        page.keyboard.press("Enter")
    page.select_option("#select-replication-target-auth", "BASIC_AUTH")
    page.fill("#replication-target-auth-username", target_user[0])
    page.fill("#replication-target-auth-password", target_user[1])
    if continuous:
        page.locator("select").nth(4).select_option("REPLICATION_TYPE_CONTINUOUS")
    page.fill("input.replication__doc-name-input", doc_id)
    tab.shot(f"form-{doc_id}")
    page.click("button:has-text('Start Replication')")
    expect(page).to_have_url(re.compile(r".*#/?replication$"))
    # Fauxton first checks that the document id is free: the 404 it gets
    # is logged by the browser as a failed load, as it is with CouchDB.
    drop_expected_load_errors(tab, 404, f"/_replicator/{doc_id}")


def test_replication_one_shot_and_continuous_with_scheduler(tab, server):
    server.put("/rep-source")
    server.post("/rep-source/_bulk_docs", json={"docs": [{"_id": f"d{i}", "n": i} for i in range(10)]})
    # Made before the form loads: Fauxton reads the database list once.
    server.put("/rep-mirror")
    page = tab.page
    # A one-shot replication to a new local database.
    start_replication(tab, "rep-source", "rep-copy", "console-once", continuous=False, new_target=True)
    doc = server.get("/_replicator/console-once").json()
    assert doc["continuous"] is False and doc["create_target"] is True, doc
    eventually(lambda: server.get("/_scheduler/docs/_replicator/console-once").json().get("state") == "completed", "the one-shot completes")
    assert server.get("/rep-copy").json()["doc_count"] == 10
    # A continuous one to an existing database: later writes follow.
    start_replication(tab, "rep-source", "rep-mirror", "console-live", continuous=True, new_target=False)
    assert server.get("/_replicator/console-live").json()["continuous"] is True
    server.put("/rep-source/late", json={"written": "after the start"})
    eventually(lambda: server.get("/rep-mirror/late").status_code == 200, "the continuous replication copies a later write")
    # The scheduler lists both; Fauxton's table shows them with their states.
    docs = {d["doc_id"]: d for d in server.get("/_scheduler/docs").json()["docs"]}
    assert docs["console-once"]["state"] == "completed" and docs["console-live"]["state"] == "running", docs
    jobs = server.get("/_scheduler/jobs").json()["jobs"]
    assert [j["doc_id"] for j in jobs] == ["console-live"], jobs
    # Fauxton polls every few minutes; its Refresh button reads again.
    page.click("text=Refresh")
    once = page.locator("tr", has_text="rep-copy")
    live = page.locator("tr", has_text="rep-mirror")
    expect(once).to_contain_text("One time")
    expect(once).to_contain_text(re.compile("completed", re.I))
    expect(live).to_contain_text("Continuous")
    expect(live).to_contain_text(re.compile("running", re.I))
    # Each row's start time, from the scheduler's start_time (an ISO 8601
    # time, as CouchDB's): "Nov 29th, 1:15 am".
    for row in (once, live):
        expect(row.locator("td").nth(3)).to_have_text(re.compile(r"^[A-Z][a-z]{2} \d+(st|nd|rd|th), \d+:\d\d [ap]m$"))
    tab.shot("replicator-db")
    # A replication started through /_replicate is on the "_replicate
    # Activity" tab, read from /_scheduler/jobs.
    r = server.post("/_replicate", json={"source": "rep-source", "target": "rep-api-copy", "create_target": True, "continuous": True})
    assert r.status_code in (200, 202), r.text
    page.click("text=_replicate Activity")
    page.click("text=Refresh")
    api_job = page.locator("tr", has_text="rep-api-copy")
    expect(api_job).to_contain_text("rep-source")
    expect(api_job).to_contain_text("Continuous")
    expect(api_job.locator("td").nth(3)).to_have_text(re.compile(r"^[A-Z][a-z]{2} \d+(st|nd|rd|th), \d+:\d\d [ap]m$"))
    tab.shot("replicate-activity")
    # Its delete action cancels it (Fauxton posts _replicate with cancel).
    api_job.locator(".icon-trash").click()
    tab.shot("cancel")
    page.locator(".modal button:has-text('Delete')").last.click()
    eventually(lambda: not [j for j in server.get("/_scheduler/jobs").json()["jobs"] if j["database"] is None], "the _replicate job is cancelled")
    # Active tasks shows the running replication.
    tab.goto("/_utils/#/activetasks")
    expect(page.locator("table")).to_contain_text("rep-mirror")
    tab.shot("active-tasks")
    # Deleting the continuous one's document from the table stops it.
    tab.goto("/_utils/#/replication")
    page.locator("tr", has_text="rep-mirror").locator(".icon-trash").click()
    tab.shot("delete")
    page.locator(".modal button:has-text('Delete')").last.click()
    eventually(lambda: server.get("/_replicator/console-live").status_code == 404, "the document is deleted")
    eventually(lambda: server.get("/_scheduler/jobs").json()["jobs"] == [], "the job stops")


def drop_expected_load_errors(tab, status, path):
    """Drops the browser's "Failed to load resource" lines for an answer
    Fauxton expects and shows itself (as it does with CouchDB): `status`
    from a request to `path`, and nothing else."""
    tab.errors[:] = [e for e in tab.errors if not (f"status of {status}" in e and "Failed to load resource" in e and f"{path}'" in e)]


def test_users_are_made_in_the_users_database(tab, server):
    page = tab.page
    tab.goto("/_utils/#/database/_users/_new")
    page.locator(".ace_content").wait_for()
    page.click(".ace_content")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text('{"_id": "org.couchdb.user:ada", "name": "ada", "type": "user", "roles": ["analyst"], "password": "lovelace-1843"}')
    page.click("#doc-editor-actions-panel button:has-text('Create Document')")
    expect(page).to_have_url(re.compile(r".*#/?database/_users/_all_docs"))
    page.locator("text=org.couchdb.user:ada").first.wait_for()
    tab.shot("listed")
    # Stored hashed, as CouchDB stores it; the new user signs in.
    doc = server.get("/_users/org.couchdb.user:ada").json()
    assert "password" not in doc and doc["password_scheme"] == "pbkdf2" and doc["roles"] == ["analyst"], doc
    r = requests.post(server.url + "/_session", json={"name": "ada", "password": "lovelace-1843"})
    assert r.status_code == 200 and r.json()["roles"] == ["analyst"], r.text
    # Fauxton's editor shows the stored document: no password in it.
    tab.goto("/_utils/#/database/_users/org.couchdb.user:ada")
    page.locator(".ace_content", has_text="password_scheme").wait_for()
    assert "lovelace-1843" not in page.locator(".ace_content").inner_text()
    tab.shot("stored")


def test_config_is_shown_and_an_edit_is_refused_cleanly(tab, server):
    config = server.get("/_node/_local/_config").json()
    page = tab.page
    tab.goto("/_utils/#/_config")
    # Fauxton asks _membership for the node and shows its _config.
    expect(page).to_have_url(re.compile(r".*#/?_config/rhizome@localhost"))
    timeout = page.locator("tr", has_text="timeout").first
    expect(timeout.locator("td.config-show-value")).to_have_text(config["chttpd_auth"]["timeout"])
    expect(page.locator("tr", has_text="port").first.locator("td.config-show-value")).to_have_text(config["chttpd"]["port"])
    tab.shot("config")
    # The settings are `rhizome serve`'s options: an edit is a 405 whose
    # reason Fauxton shows, and nothing changes.
    timeout.locator("td.config-show-value").click()
    timeout.locator("input").fill("1200")
    timeout.locator(".btn-config-save").click()
    page.locator("text=Option save failed").first.wait_for()
    expect(page.locator("body")).to_contain_text("rhizome serve")
    tab.shot("refused")
    drop_expected_load_errors(tab, 405, "/_config/chttpd_auth/timeout")
    assert server.get("/_node/_local/_config/chttpd_auth/timeout").json() == config["chttpd_auth"]["timeout"]
    # The CORS screen reads the same settings.
    page.get_by_role("link", name="CORS", exact=True).click()
    expect(page).to_have_url(re.compile(r".*#/?_config/rhizome@localhost/cors"))
    page.locator("text=Enable CORS").first.wait_for()
    tab.shot("cors")


@pytest.fixture(scope="module")
def couchdb_peer():
    """Apache CouchDB 3.5.0 (../shared/peers/couchdb), started for these
    tests on a free port and stopped after them: (url, name, password)."""
    shared = pathlib.Path(os.environ.get("RHIZOME_SHARED", ROOT.parent / "shared"))
    scripts = shared / "peers" / "couchdb"
    assert (scripts / "start").exists(), f"the CouchDB peer is missing at {scripts}"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="rhizome-console-couchdb-")) / "peer"
    port = free_port()
    # `start` waits until CouchDB answers, with its own deadline.
    started = subprocess.run([str(scripts / "start"), str(folder), str(port), "admin:secret"], capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    yield (f"http://127.0.0.1:{port}", "admin", "secret")
    subprocess.run([str(scripts / "stop"), str(folder)], capture_output=True)
    shutil.rmtree(folder.parent, ignore_errors=True)


def test_replication_to_a_couchdb_peer(tab, server, couchdb_peer):
    url, name, password = couchdb_peer
    peer = requests.Session()
    peer.auth = (name, password)
    assert peer.put(url + "/from-rhizome").status_code == 201
    server.put("/to-couchdb")
    server.post("/to-couchdb/_bulk_docs", json={"docs": [{"_id": f"p{i}", "n": i} for i in range(5)]})
    server.put("/to-couchdb/with-file", data=b'{"kind": "attached"}', headers={"Content-Type": "application/json"})
    rev = server.get("/to-couchdb/with-file").json()["_rev"]
    server.put(f"/to-couchdb/with-file/notes.txt?rev={rev}", data=b"words for CouchDB", headers={"Content-Type": "text/plain"})
    start_replication(tab, "to-couchdb", None, "console-to-couchdb", continuous=False, new_target=False,
                      remote=(url + "/from-rhizome", name, password))
    eventually(lambda: server.get("/_scheduler/docs/_replicator/console-to-couchdb").json().get("state") == "completed", "the replication to CouchDB completes")
    ours = {r["id"]: r["value"]["rev"] for r in server.get("/to-couchdb/_all_docs").json()["rows"]}
    theirs = {r["id"]: r["value"]["rev"] for r in peer.get(url + "/from-rhizome/_all_docs").json()["rows"]}
    assert theirs == ours, (theirs, ours)
    assert peer.get(url + "/from-rhizome/with-file/notes.txt").content == b"words for CouchDB"
    tab.page.click("text=Refresh")
    expect(tab.page.locator("tr", has_text="from-rhizome")).to_contain_text(re.compile("completed", re.I))
    tab.shot("to-couchdb")
