"""Secrets in what the tool shows and sends: URL passwords and tokens masked (the controller's rule and
the host's, the same), reports private, and credentials never sent to another host by a redirect."""

from __future__ import annotations

import hashlib
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import remote
from config.secrets import mask, write_private

pytestmark = pytest.mark.unit

fetch = remote.load("fetch.py")

MASKED = [
    ("GET https://ops:s3cret@mirror.example/p.whl failed", "GET https://ops:***@mirror.example/p.whl failed"),
    ("https://hf_abcdef123456@hub.example/api/models", "https://***@hub.example/api/models"),  # a lone token
    ("http://ops:p@ss@w0rd@proxy.corp:3128", "http://ops:***@proxy.corp:3128"),  # @ in the password
    ("http://ops:s3cr%40t@127.0.0.1:8080/p.whl", "http://ops:***@127.0.0.1:8080/p.whl"),
    ("see https://mirror.example/a@b.whl and mailto", "see https://mirror.example/a@b.whl and mailto"),  # @ in a path
    ("http://mirror.example/p.whl", "http://mirror.example/p.whl"),
    ("'https://u:pw@h/x' and 'https://v:pw2@h2/y'", "'https://u:***@h/x' and 'https://v:***@h2/y'"),
]


@pytest.mark.parametrize(("text", "shown"), MASKED)
def test_passwords_and_tokens_in_urls_are_masked_on_the_controller_and_the_host(text: str, shown: str) -> None:
    assert mask(text) == shown
    assert fetch.masked(text) == shown  # the host's copy of the rule agrees


def test_a_report_is_private_from_its_first_byte_and_masked(tmp_path: Path) -> None:
    report = tmp_path / "audit-report.json"
    report.write_text("old")
    report.chmod(0o644)
    write_private(report, '{"torch_index": "https://ops:s3cret@mirror.example/whl/cpu"}\n')
    assert stat.S_IMODE(report.stat().st_mode) == 0o600
    assert "s3cret" not in report.read_text() and "https://ops:***@mirror.example" in report.read_text()


def test_the_audit_report_holds_no_password(tmp_path: Path) -> None:
    from planner.assessment import Assessment, Decisions
    from reports.assessment import record

    decisions = Decisions(torch_index="https://ops:s3cret@mirror.example/whl/cpu")
    path = record("h1", Assessment(items=[], decisions=decisions), str(tmp_path / "a.json"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and "s3cret" not in path.read_text()


class _Server:
    """A loopback HTTP server: /start redirects to `target`, /file serves `body`; it records each request's
    Authorization header."""

    def __init__(self, body: bytes = b"", target: str = "") -> None:
        seen: list[tuple[str, str | None]] = []
        self.seen = seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.path, self.headers.get("Authorization")))
                if self.path == "/start":
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_credentials_are_not_sent_to_another_host_a_redirect_names(tmp_path: Path) -> None:
    body = b"artifact bytes"
    other = _Server(body=body)
    first = _Server(target=f"{other.url}/file")
    try:
        url = first.url.replace("http://", "http://ops:s3cret@") + "/start"
        assert fetch.main(url, str(tmp_path / "a.bin"), hashlib.sha256(body).hexdigest()) == 0
        assert first.seen[0][1] is not None  # the host the credentials were given for gets them
        assert other.seen == [("/file", None)]  # the host the redirect names does not
        assert (tmp_path / "a.bin").read_bytes() == body
    finally:
        first.close()
        other.close()


def test_a_redirect_on_the_same_host_keeps_the_credentials(tmp_path: Path) -> None:
    body = b"same host"
    server = _Server(body=body, target="/file")  # redirects to itself: /start -> /file
    try:
        url = server.url.replace("http://", "http://ops:s3cret@") + "/start"
        assert fetch.main(url, str(tmp_path / "b.bin"), hashlib.sha256(body).hexdigest()) == 0
        assert [path for path, _ in server.seen] == ["/start", "/file"]
        assert all(auth is not None for _, auth in server.seen)
    finally:
        server.close()
