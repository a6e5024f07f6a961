"""A local HTTP server for crawl tests, serving the hand-written pages in ``tests/site/``.

Paths (``<file>`` is a file in tests/site):

- ``/<file>``: the file; ``.html`` as ``text/html; charset=utf-8`` except ``*-gbk.html`` (no
  charset in the header), ``.png`` as ``image/png``, ``.bin`` as ``text/html`` (a binary body
  that claims to be HTML).
- ``/v/<tag>/<file>``: the same file under another URL (URL variants of one page).
- ``/gzip/<file>``: gzip-encoded (``Content-Encoding: gzip``).
- ``/redirect/<file>``: ``302`` to ``/<file>``.
- ``/etag/<file>``: with an ``ETag``; ``304 Not Modified`` when ``If-None-Match`` matches.
- ``/switch.html``: ``switch-v1.html`` or ``switch-v2.html``, chosen by ``SiteServer.version``.
- ``/huge.html``: about 2 MB of generated paragraphs.

Extra pages can be added at run time with ``SiteServer.pages[path] = (content_type, body)``
(the benchmarks serve real pages this way; a key with a query, ``/a.html?print=1``, is served
for exactly that query, so URL variants of one path can carry different bodies), and ``SiteServer.hooks[path]`` runs a
function before that path is answered (a test stops Redis exactly when a given page is
fetched, so a crawl meets an outage at a known point without sleeping).
"""

from __future__ import annotations

import gzip
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

SITE_DIR = Path(__file__).parent / "site"


def _huge_page() -> bytes:
    words = ["river", "market", "council", "harvest", "station", "winter", "bridge", "garden"]
    paragraphs = [
        f"<p>Paragraph {i}: the {words[i % 8]} report number {i} notes that the "
        f"{words[(i * 3) % 8]} and the {words[(i * 5) % 8]} were discussed at length.</p>"
        for i in range(20000)
    ]
    body = "\n".join(paragraphs)
    return f"<html><head><title>Huge</title></head><body>{body}</body></html>".encode()


def _content_type(name: str) -> str:
    if name.endswith(".png"):
        return "image/png"
    if name.endswith(("-gbk.html", ".bin")):
        return "text/html"
    return "text/html; charset=utf-8"


class _Server(ThreadingHTTPServer):
    #: socketserver listens with a backlog of 5: a crawl opening more connections at once
    #: than that has the rest of its SYNs dropped and retried a second later.
    request_queue_size = 128


class SiteServer:
    """The server plus knobs the tests turn: page version, extra pages, hit counts."""

    def __init__(self, site_dir: Path = SITE_DIR) -> None:
        self.site_dir = site_dir
        self.version = 1
        self.pages: dict[str, tuple[str, bytes]] = {}
        self.hits: Counter[str] = Counter()
        self.hooks: dict[str, Callable[[], object]] = {}
        #: Seconds each answer waits, to stand in for network latency (benchmarks only).
        self.latency = 0.0
        self._huge: bytes | None = None
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def start(self) -> SiteServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def reset(self) -> None:
        with self._lock:
            self.version = 1
            self.pages.clear()
            self.hits.clear()
            self.hooks.clear()

    def huge(self) -> bytes:
        with self._lock:
            if self._huge is None:
                self._huge = _huge_page()
            return self._huge

    def resolve(self, path: str) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for ``path`` (request headers are not needed here)."""
        if path in self.pages:
            content_type, body = self.pages[path]
            return 200, {"Content-Type": content_type}, body
        parts = path.strip("/").split("/")
        if parts[0] == "v" and len(parts) >= 3:
            return self.resolve("/" + "/".join(parts[2:]))
        if parts[0] == "redirect" and len(parts) == 2:
            return 302, {"Location": f"/{parts[1]}"}, b""
        if parts[0] in ("gzip", "etag") and len(parts) == 2:
            status, headers, body = self.resolve(f"/{parts[1]}")
            if status == 200 and parts[0] == "gzip":
                headers["Content-Encoding"] = "gzip"
                body = gzip.compress(body)
            elif status == 200:
                headers["ETag"] = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
            return status, headers, body
        if path == "/switch.html":
            return self.resolve(f"/switch-v{self.version}.html")
        if path == "/huge.html":
            return 200, {"Content-Type": "text/html; charset=utf-8"}, self.huge()
        name = parts[-1] if parts and parts[-1] else "index.html"
        file = self.site_dir / name
        if len(parts) > 1 or not file.is_file():
            return 404, {"Content-Type": "text/plain"}, b"not found"
        return 200, {"Content-Type": _content_type(name)}, file.read_bytes()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = self.path if self.path in site.pages else urlsplit(self.path).path
                with site._lock:
                    site.hits[path] += 1
                    hook = site.hooks.pop(path, None)
                if hook is not None:
                    hook()
                if site.latency:
                    time.sleep(site.latency)
                status, headers, body = site.resolve(path)
                etag = headers.get("ETag")
                if etag is not None and self.headers.get("If-None-Match") == etag:
                    status, body = 304, b""
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # keep test output clean

        return Handler


@pytest.fixture(scope="session")
def http_site_server() -> Iterator[SiteServer]:
    """One local site server for the whole session."""
    server = SiteServer().start()
    yield server
    server.stop()


@pytest.fixture
def http_site(http_site_server: SiteServer) -> SiteServer:
    """The local site, reset to version 1 with no extra pages and zeroed hit counts."""
    http_site_server.reset()
    return http_site_server
