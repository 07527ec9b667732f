"""Fixtures of the console's browser tests (tests/console): a fresh
`rhizome serve` on a free loopback port with the bundled sample loaded,
and Debian's chromium driven by Playwright (launched from
/usr/bin/chromium, never a downloaded browser), with a fresh profile.

Every page fails its test on a page error (an uncaught exception) or a
console error; each test keeps screenshots in $CONSOLE_SCREENSHOTS
(default target/console-screenshots).
"""
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import requests
from playwright.sync_api import sync_playwright

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("RHIZOME_BIN", ROOT / os.environ.get("CARGO_TARGET_DIR", "target") / "release" / "rhizome"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHOTS = pathlib.Path(os.environ.get("CONSOLE_SCREENSHOTS", ROOT / "target" / "console-screenshots"))
ADMIN = ("admin", "console-test-pw")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, url):
        self.url = url
        self.http = requests.Session()
        self.http.auth = ADMIN

    def get(self, path, **kw):
        return self.http.get(self.url + path, **kw)

    def put(self, path, **kw):
        return self.http.put(self.url + path, **kw)

    def post(self, path, **kw):
        return self.http.post(self.url + path, **kw)

    def sparql(self, db, query):
        r = self.post(f"/{db}/_sparql", data={"query": query}, headers={"Accept": "application/sparql-results+json"})
        r.raise_for_status()
        return r.json()["results"]["bindings"]


@pytest.fixture(scope="session")
def server():
    data = tempfile.mkdtemp(prefix="rhizome-console-")
    subprocess.run([str(BIN), "--data", data, "load", "--quiet", "--db", "faculty", str(ROOT / "samples" / "faculty.ttl")], check=True)
    port = free_port()
    env = dict(os.environ, RHIZOME_ADMIN=":".join(ADMIN))
    proc = subprocess.Popen([str(BIN), "--data", data, "serve", "--bind", f"127.0.0.1:{port}", "--quiet", "--pbkdf2-iterations", "1000"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if requests.get(url + "/_up", timeout=2).status_code == 200:
                break
        except requests.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"rhizome serve did not come up: {proc.stderr.read().decode()}")
        time.sleep(0.05)  # polling readiness, with the deadline above
    yield Server(url)
    proc.terminate()
    proc.wait(timeout=30)
    shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def chromium_context():
    profile = tempfile.mkdtemp(prefix="rhizome-chromium-")
    with sync_playwright() as p:
        # A persistent context is what takes a user-data-dir: a fresh one.
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
                                                       viewport={"width": 1400, "height": 900})
        yield context
        context.close()
    shutil.rmtree(profile, ignore_errors=True)


class Page:
    """A browser tab that records every page error and console error."""

    def __init__(self, context, server, name):
        self.page = context.new_page()
        self.server = server
        self.name = name
        self.errors = []
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e} on {self.page.url}: {e.stack}"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console error: {m.text} at {m.location} on {self.page.url}"))
        self.page.on("response", lambda r: r.status >= 500 and self.errors.append(f"{r.status} from {r.request.method} {r.url}"))
        self.shots = 0

    def goto(self, path):
        self.page.goto(self.server.url + path)

    def shot(self, label):
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.shots += 1
        path = SHOTS / f"{self.name}-{self.shots:02d}-{label}.png"
        self.page.screenshot(path=str(path))
        return path

    def check_clean(self):
        assert not self.errors, "\n".join(self.errors)


def sign_in(page):
    """Signs the browser in as Fauxton does (a cookie session); the sign-in
    screen itself is test_sign_in_and_out's."""
    r = page.page.context.request.post(page.server.url + "/_session", form={"name": ADMIN[0], "password": ADMIN[1]})
    assert r.status == 200, r.text()


@pytest.fixture
def tab(chromium_context, server, request):
    context_page = Page(chromium_context, server, request.node.name)
    sign_in(context_page)
    yield context_page
    context_page.shot("end")
    context_page.page.close()
    context_page.check_clean()
