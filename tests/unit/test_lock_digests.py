"""A new venv lock against the sha256 its indexes publish (tasks/venv/lock_digests.py), on PyPI's real pages
for six (JSON and HTML, tests/fixtures/index/) and, for the whole path, an index on loopback."""

from __future__ import annotations

import json
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tasks.venv import lock_digests

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "index"
SIX_JSON = (FIXTURES / "pypi-six.json").read_bytes()
SIX_HTML = (FIXTURES / "pypi-six.html").read_bytes()
SIX_WHEEL = "six-1.17.0-py2.py3-none-any.whl"
SIX_SHA = "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"  # this machine's lock has it too
TORCH = "torch==2.13.0+cpu --hash=sha256:" + "6" * 64 + "  # torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl\n"


def lock(sha: str = SIX_SHA) -> str:
    return f"six==1.17.0 --hash=sha256:{sha}  # {SIX_WHEEL}\n"


@pytest.mark.parametrize("page", [("application/vnd.pypi.simple.v1+json", SIX_JSON), ("text/html", SIX_HTML)])
def test_both_forms_of_the_simple_api_give_each_files_sha256(page) -> None:
    digests = lock_digests.published(*page)
    assert digests[SIX_WHEEL] == SIX_SHA
    assert digests["six-1.16.0.tar.gz"] == "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926"


def test_the_lock_is_parsed_as_wheel_lock_writes_it() -> None:
    got = lock_digests.entries(lock() + TORCH + "# a comment\n")
    assert [(e.name, e.version, e.filename) for e in got] == [
        ("six", "1.17.0", SIX_WHEEL),
        ("torch", "2.13.0+cpu", "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"),
    ]


def pages(mapping: dict[str, tuple[str, bytes]]):
    def fetch(url: str) -> tuple[str, bytes]:
        if url not in mapping:
            raise OSError(f"404 {url}")
        return mapping[url]

    return fetch


def test_a_file_the_index_publishes_another_digest_for_is_refused() -> None:
    fetch = pages({"https://pypi.org/simple/six/": ("application/vnd.pypi.simple.v1+json", SIX_JSON)})
    good = lock_digests.check(lock(), "", None, fetch)
    assert good.mismatched == () and good.unpublished == () and good.unreachable == () and not good.refused
    bad = lock_digests.check(lock("0" * 64), "", None, fetch)
    assert bad.mismatched == (
        f"{SIX_WHEEL}: lock sha256 {'0' * 64}, published {SIX_SHA} (https://pypi.org/simple/six/)",
    )
    assert bad.lines[0].startswith("lock refused: the index publishes another sha256 for six-1.17.0")


def test_torch_is_asked_at_its_own_index_and_a_file_no_index_publishes_is_refused_unless_trusted() -> None:
    """A file whose index has no digest for it (or does not answer: 404, 503) fails the lock closed, naming
    the file and the setting that accepts it; named in lock_trust_on_first_use, it is kept, and said so."""
    fetch = pages({"https://pypi.org/simple/six/": ("text/html", SIX_HTML)})
    torch = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    checked = lock_digests.check(lock() + TORCH, "", "https://download.pytorch.org/whl/cpu", fetch)
    assert checked.mismatched == () and checked.untrusted == (torch,) and checked.refused
    assert sorted(u.split(": ")[0] for u in checked.unreachable) == [
        "https://download.pytorch.org/whl/cpu/torch/",
        "https://pypi.org/simple/torch/",
    ]
    assert checked.lines[0].startswith(f"lock refused: no index asked publishes a sha256 for {torch}")
    assert checked.lines[0].endswith("lock_trust_on_first_use = 'torch'")
    trusted = lock_digests.check(
        lock() + TORCH, "", "https://download.pytorch.org/whl/cpu", fetch, frozenset({"torch"})
    )
    assert not trusted.refused and trusted.untrusted == ()
    assert (
        trusted.lines[0] == f"lock: 1 file(s) with no digest published by an index asked, kept as first downloaded "
        f"(lock_trust_on_first_use): {torch}"
    )


def test_an_index_that_does_not_answer_refuses_the_lock() -> None:
    def down(url: str) -> tuple[str, bytes]:
        raise OSError("HTTP Error 503: Service Unavailable")

    checked = lock_digests.check(lock(), "", None, down)
    assert checked.refused and checked.untrusted == (SIX_WHEEL,)
    assert checked.unreachable == ("https://pypi.org/simple/six/: OSError: HTTP Error 503: Service Unavailable",)


class _Index(BaseHTTPRequestHandler):
    def __init__(self, *args, seen: list, **kwargs):
        self.seen = seen
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):
        pass

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Accept", ""), self.headers.get("Authorization", "")))
        body = json.dumps({"files": [{"filename": SIX_WHEEL, "hashes": {"sha256": "1" * 64}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_private_index_is_asked_for_json_with_its_password_as_basic_auth() -> None:
    seen: list = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Index, seen=seen))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = f"http://ops:s3cret@127.0.0.1:{server.server_address[1]}/simple"
        checked = lock_digests.check(lock(), index, None, lock_digests.urllib_fetch)
    finally:
        server.shutdown()
        server.server_close()
    assert seen[0][0] == "/simple/six/" and seen[0][1].startswith("application/vnd.pypi.simple.v1+json")
    assert seen[0][2] == "Basic b3BzOnMzY3JldA=="  # ops:s3cret
    assert len(checked.mismatched) == 1 and "s3cret" not in checked.mismatched[0]


def test_a_pin_the_index_has_only_a_source_archive_of_is_named_before_any_change() -> None:
    """sdist_only: a version with files and no wheel is named; one with a wheel, one the index lists no file
    of (a local version such as +cpu), and a page that cannot be read say nothing."""
    evil = json.dumps({"files": [
        {"filename": "evil_pkg-1.0.tar.gz", "hashes": {"sha256": "1" * 64}},
        {"filename": "evil_pkg-2.0-py3-none-any.whl", "hashes": {"sha256": "2" * 64}},
    ]}).encode()  # fmt: skip
    fetch = pages({
        "https://pypi.org/simple/evil-pkg/": ("application/vnd.pypi.simple.v1+json", evil),
        "https://pypi.org/simple/six/": ("text/html", SIX_HTML),
    })  # fmt: skip
    pins = {"Evil_Pkg": "1.0", "six": "1.17.0", "tritonclient[http,grpc]": "2.51.0"}
    assert lock_digests.sdist_only(pins, "", fetch) == ("evil-pkg==1.0",)
    assert lock_digests.sdist_only({"evil-pkg": "2.0", "six": "9.9"}, "", fetch) == ()


def test_a_host_whose_pins_have_no_wheel_is_refused_before_any_change() -> None:
    from config.settings import load
    from planner import preflight

    refused = preflight.refusal("tb1", load({}), True, [], ("evil-pkg==1.0",))
    assert refused is not None and refused.reason.startswith("evil-pkg==1.0: the index has only a source archive")
    assert "fix: pin a version that publishes a wheel" in refused.reason
    assert preflight.refusal("tb1", load({}), True, []) is None
