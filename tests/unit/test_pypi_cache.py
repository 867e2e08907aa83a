"""The test bed's caching PyPI stand-in (testbed/pypi_cache.py) over a real PyPI page (tests/fixtures/index),
served through the mirror as pip and the lock's digest check read it."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tasks.venv import lock_digests
from testbed.mirror import Mirror
from testbed.pypi_cache import JSON_TYPE, NotFound, PypiCache, file_path, project_name

pytestmark = pytest.mark.unit

SIX_JSON = (Path(__file__).resolve().parents[1] / "fixtures" / "index" / "pypi-six.json").read_bytes()
SIX_FILE = next(f["url"] for f in json.loads(SIX_JSON)["files"] if f["filename"].endswith(".whl"))


class Upstream:
    """PyPI as a dict of URL -> body; counts what was asked; fails (OSError) once `down` is set."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        self.pages, self.asked, self.down = pages, [], False

    def __call__(self, url: str, accept: str = "*/*") -> bytes:
        self.asked.append(url)
        if self.down:
            raise OSError("PyPI is down")
        if url not in self.pages:
            raise NotFound(url)
        return self.pages[url]


@pytest.fixture
def upstream() -> Upstream:
    return Upstream({"https://pypi.org/simple/six/": SIX_JSON, SIX_FILE: b"the wheel's bytes"})


def test_names_and_paths_are_checked() -> None:
    assert project_name("/simple/Typing_Extensions/") == "typing-extensions"
    assert project_name("/simple/six") == "six"
    for bad in ("/simple/", "/simple/../etc/", "/simple/a/b/", "/simple/-x-/", "/other/six/"):
        with pytest.raises(NotFound):
            project_name(bad)
    assert file_path("/files/packages/b7/ce/six-1.17.0-py2.py3-none-any.whl") == (
        "packages/b7/ce/six-1.17.0-py2.py3-none-any.whl"
    )
    for bad in ("/files/packages/../../etc/passwd", "/files/etc/passwd", "/files/packages/a b.whl", "/packages/x"):
        with pytest.raises(NotFound):
            file_path(bad)


def test_a_page_is_pypis_with_its_files_on_the_mirror_and_kept(tmp_path: Path, upstream: Upstream) -> None:
    cache = PypiCache(tmp_path, fetch=upstream)
    page = json.loads(cache.page("/simple/six/", "http://127.0.0.1:9/pypi/files"))
    original = json.loads(SIX_JSON)
    assert [f["hashes"] for f in page["files"]] == [f["hashes"] for f in original["files"]]
    assert [f["url"] for f in page["files"]] == [
        f["url"].replace("https://files.pythonhosted.org", "http://127.0.0.1:9/pypi/files") for f in original["files"]
    ]
    cache.page("/simple/six/", "http://127.0.0.1:9/pypi/files")
    assert upstream.asked == ["https://pypi.org/simple/six/"]  # kept for its TTL


def test_a_stale_page_is_fetched_again_and_kept_when_pypi_fails(tmp_path: Path, upstream: Upstream) -> None:
    cache = PypiCache(tmp_path, fetch=upstream, page_ttl=60)
    first = cache.page("/simple/six/", "http://m/pypi/files")
    kept = tmp_path / "simple" / "six.json"
    os.utime(kept, (kept.stat().st_atime - 120, kept.stat().st_mtime - 120))
    upstream.down = True
    assert cache.page("/simple/six/", "http://m/pypi/files") == first
    assert len(upstream.asked) == 2
    with pytest.raises(OSError):
        cache.page("/simple/idna/", "http://m/pypi/files")  # never kept: nothing to fall back on


def test_a_file_is_fetched_once_and_shared(tmp_path: Path, upstream: Upstream) -> None:
    rel = "/files/" + SIX_FILE.removeprefix("https://files.pythonhosted.org/")
    assert PypiCache(tmp_path, fetch=upstream).file(rel).read_bytes() == b"the wheel's bytes"
    assert PypiCache(tmp_path, fetch=upstream).file(rel).read_bytes() == b"the wheel's bytes"  # a second worker
    assert upstream.asked == [SIX_FILE]
    assert not list(tmp_path.rglob("*.partial"))


def test_the_mirror_serves_it_as_the_lock_check_reads_it(tmp_path: Path, upstream: Upstream) -> None:
    with Mirror(tmp_path / "files", pypi=PypiCache(tmp_path / "cache", fetch=upstream)) as mirror:
        content_type, body = lock_digests.urllib_fetch(f"{mirror.url}/pypi/simple/six/")
        assert content_type.startswith(JSON_TYPE)
        links = lock_digests.file_links(content_type, body, f"{mirror.url}/pypi/simple/six/")
        wheel_url = next(url for name, url in links.items() if name.endswith(".whl"))
        assert wheel_url.startswith(f"{mirror.url}/pypi/files/packages/")
        with urllib.request.urlopen(wheel_url) as resp:
            assert resp.read() == b"the wheel's bytes"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{mirror.url}/pypi/simple/no-such-project/")
        assert missing.value.code == 404
        upstream.down = True
        with pytest.raises(urllib.error.HTTPError) as down:
            urllib.request.urlopen(f"{mirror.url}/pypi/simple/idna/")
        assert down.value.code == 502
    assert [(m, p, s) for m, p, s in mirror.requests() if "/pypi/files/" in p] == [
        ("GET", wheel_url.removeprefix(mirror.url), 200)
    ]
