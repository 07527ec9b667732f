"""IBM's Cloudant SDK for Python (PyPI `ibmcloudant`, which speaks to any
CouchDB) against a live Rhizome server, driven by
crates/rhizome-cli/tests/clients.rs.

Usage: cloudant_sdk.py CHECK. RHIZOME_URL is the server's base URL,
RHIZOME_CREDENTIALS the admin's `user:password`. Each CHECK is a function
below; it exits non-zero (an AssertionError or the SDK's ApiException) on
the first failed check.
"""
import os
import sys

from ibmcloudant import CouchDbSessionAuthenticator
from ibmcloudant.cloudant_v1 import AllDocsQuery, BulkDocs, CloudantV1, Document
from ibmcloudant.features.pagination import PagerType, Pagination

URL = os.environ["RHIZOME_URL"]
USER, PASSWORD = os.environ["RHIZOME_CREDENTIALS"].split(":", 1)


def client():
    """A client logged in as the SDK does it: `POST /_session` with
    `{"username", "password"}`, then the session cookie on every call."""
    service = CloudantV1(authenticator=CouchDbSessionAuthenticator(USER, PASSWORD))
    service.set_service_url(URL)
    return service


def fresh_db(service, name):
    try:
        service.delete_database(db=name)
    except Exception:
        pass
    service.put_database(db=name).get_result()


def pages_of(pagination, bound):
    """Every page, failing instead of looping when the server ignores the
    pager's options (the pager then asks for the same page forever)."""
    pages = []
    for page in pagination.pages():
        pages.append(page)
        assert len(pages) <= bound, f"more than {bound} pages: the server ignores the pager's limit or start_key"
    return pages


def all_docs_pager():
    service = client()
    fresh_db(service, "pager")
    docs = [Document(_id=f"doc{n:04d}", n=n) for n in range(450)]
    docs += [Document(_id=f"_design/d{n}", views={}) for n in range(3)]
    written = service.post_bulk_docs(db="pager", bulk_docs=BulkDocs(docs=docs)).get_result()
    assert all(r.get("ok") for r in written), [r for r in written if not r.get("ok")]

    pages = pages_of(Pagination.new_pagination(service, PagerType.POST_ALL_DOCS, db="pager", limit=100, include_docs=True), 10)
    ids = [row.id for page in pages for row in page]
    assert len(pages) == 5, [len(p) for p in pages]
    assert ids == sorted(ids) and len(ids) == 453 and len(set(ids)) == 453, ids[:5]
    assert all(row.doc is not None for page in pages for row in page), "include_docs was ignored"

    design = pages_of(Pagination.new_pagination(service, PagerType.POST_DESIGN_DOCS, db="pager", limit=2), 5)
    assert [row.id for page in design for row in page] == ["_design/d0", "_design/d1", "_design/d2"], design

    # Body options one by one, as post_all_docs sends them.
    got = service.post_all_docs(db="pager", start_key="doc0100", end_key="doc0104", inclusive_end=False, skip=1, limit=2).get_result()
    assert [r["id"] for r in got["rows"]] == ["doc0101", "doc0102"], got
    got = service.post_all_docs(db="pager", descending=True, limit=1).get_result()
    assert [r["id"] for r in got["rows"]] == ["doc0449"], got
    got = service.post_all_docs(db="pager", key="doc0007", include_docs=True).get_result()
    assert got["rows"][0]["doc"]["n"] == 7, got

    # Several queries in one request.
    queries = [AllDocsQuery(keys=["doc0001", "nope"]), AllDocsQuery(start_key="doc0448", limit=5)]
    got = service.post_all_docs_queries(db="pager", queries=queries).get_result()
    assert [r.get("id") for r in got["results"][0]["rows"]] == ["doc0001", None], got
    assert got["results"][0]["rows"][1]["error"] == "not_found", got
    assert [r["id"] for r in got["results"][1]["rows"]] == ["doc0448", "doc0449"], got
    got = service.post_design_docs_queries(db="pager", queries=[AllDocsQuery(limit=1)]).get_result()
    assert [r["id"] for r in got["results"][0]["rows"]] == ["_design/d0"], got


def session_login():
    service = client()
    info = service.get_session_information().get_result()
    assert info["userCtx"]["name"] == USER, info
    assert info["info"]["authenticated"] == "cookie", info
    assert service.get_all_dbs().get_result() is not None


def server_endpoints():
    """CouchDB 3's node and scheduler endpoints, as the SDK reads them."""
    service = client()
    membership = service.get_membership_information().get_result()
    assert membership["all_nodes"] == membership["cluster_nodes"] and len(membership["all_nodes"]) == 1, membership
    node = membership["all_nodes"][0]
    jobs = service.get_scheduler_jobs().get_result()
    assert jobs["total_rows"] == 0 and jobs["jobs"] == [], jobs
    docs = service.get_scheduler_docs().get_result()
    assert docs["docs"] == [], docs
    try:
        service.get_scheduler_document(doc_id="nope")
        raise AssertionError("a missing scheduler document was found")
    except Exception as e:
        assert getattr(e, "code", None) == 404, e
    assert service.get_active_tasks().get_result() == []
    assert service.get_up_information().get_result()["status"] == "ok"
    # _config and _stats through the SDK's own request builder.
    for path in [f"/_node/{node}/_config/chttpd_auth/timeout", "/_node/_local/_config/cors", "/_node/_local/_stats/couchdb/httpd/requests"]:
        request = service.prepare_request(method="GET", url=path, headers={"Accept": "application/json"})
        got = service.send(request).get_result()
        assert got is not None, path
    request = service.prepare_request(method="GET", url="/_node/_local/_config/chttpd_auth/timeout", headers={"Accept": "application/json"})
    assert service.send(request).get_result() == "600"
    # A database's shards: one, the whole range, on the one node.
    fresh_db(service, "sharded")
    shards = service.get_shards_information(db="sharded").get_result()
    assert shards == {"shards": {"00000000-ffffffff": [node]}}, shards
    shard = service.get_document_shards_info(db="sharded", doc_id="any").get_result()
    assert shard == {"range": "00000000-ffffffff", "nodes": [node]}, shard


def db_updates():
    """`_db_updates`: each database once, with its latest event."""
    service = client()
    start = service.get_db_updates(feed="normal").get_result()["last_seq"]
    service.put_database(db="news").get_result()
    service.put_database(db="gone").get_result()
    service.post_document(db="news", document=Document(_id="a", x=1)).get_result()
    service.delete_database(db="gone").get_result()
    got = service.get_db_updates(feed="normal", since=start).get_result()
    seen = {r["db_name"]: r["type"] for r in got["results"]}
    assert seen == {"news": "updated", "gone": "deleted"}, got
    assert got["last_seq"] == got["results"][-1]["seq"], got
    # A longpoll with nothing new waits its timeout and says so.
    later = service.get_db_updates(feed="longpoll", since=got["last_seq"], timeout=200).get_result()
    assert later["results"] == [] and later["last_seq"] == got["last_seq"], later


if __name__ == "__main__":
    globals()[sys.argv[1]]()
    print("ok", sys.argv[1])
