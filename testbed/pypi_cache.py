"""A caching stand-in for PyPI's simple index, served by the test bed's mirror under /pypi/.

Hosts given `pip_index_url = MIRROR/pypi/simple/` resolve and download through it: each project page
is fetched from PyPI (JSON, PEP 691) and kept for PAGE_TTL seconds, each file once per machine (a
files.pythonhosted.org path names its content, so a kept file never goes stale). The pages it serves
are PyPI's with the file URLs pointed back at the mirror; hashes, yanks and metadata flags unchanged,
so pip, uv and the lock's digest check see what PyPI publishes. Two test workers share one cache.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

UPSTREAM_INDEX = "https://pypi.org/simple"
UPSTREAM_FILES = "https://files.pythonhosted.org"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
PAGE_TTL = 1800  # one suite's run resolves against the same pages
_PROJECT = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_FILE = re.compile(r"^packages/[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*$")


class NotFound(Exception):
    """What was asked for is not a project or file PyPI has (the handler answers 404)."""


def project_name(path: str) -> str:
    """The normalised project of a /simple/NAME/ path (PEP 503); NotFound for anything else."""
    match = re.fullmatch(r"/simple/([^/]+)/?", path)
    if not match:
        raise NotFound(path)
    name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
    if not _PROJECT.match(name):
        raise NotFound(path)
    return name


def file_path(path: str) -> str:
    """The files.pythonhosted.org path of a /files/packages/... path, checked (no `..`, no odd names)."""
    rel = path.removeprefix("/files/")
    if rel == path or not _FILE.match(rel) or ".." in rel.split("/"):
        raise NotFound(path)
    return rel


def pointed_at(page: bytes, files_base: str, upstream_files: str = UPSTREAM_FILES) -> bytes:
    """PyPI's JSON page with each file URL under upstream_files moved to files_base (the mirror's /pypi/files)."""
    data = json.loads(page)
    for entry in data.get("files", []):
        url = str(entry.get("url", ""))
        if url.startswith(upstream_files + "/"):
            entry["url"] = files_base.rstrip("/") + url[len(upstream_files) :]
    return json.dumps(data).encode()


def _fetch(url: str, accept: str = "*/*") -> bytes:
    """url's body; NotFound on 404, OSError on anything else that fails (after three tries)."""
    for attempt in range(3):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=60) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise NotFound(url) from exc
            if attempt == 2:
                raise
        except OSError:
            if attempt == 2:
                raise
        time.sleep(1 + attempt)
    raise AssertionError("unreachable")


def _kept(dest: Path, body: bytes) -> None:
    """dest written whole or not at all (two workers may keep the same file at once)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_bytes(body)
    os.replace(partial, dest)


class PypiCache:
    """The pages and files of PyPI, kept under root (pages for page_ttl seconds, files for good)."""

    def __init__(
        self,
        root: Path,
        index: str = UPSTREAM_INDEX,
        files: str = UPSTREAM_FILES,
        page_ttl: float = PAGE_TTL,
        fetch=_fetch,
    ) -> None:
        self.root = Path(root)
        self.index, self.files, self.page_ttl, self._fetch = index.rstrip("/"), files.rstrip("/"), page_ttl, fetch
        self.upstream_fetches = 0  # what this process fetched from PyPI (pages and files)

    def page(self, path: str, files_base: str) -> bytes:
        """The JSON page of /simple/NAME/, its files pointed at files_base; a stale kept page where PyPI fails."""
        name = project_name(path)
        kept = self.root / "simple" / f"{name}.json"
        fresh = kept.exists() and time.time() - kept.stat().st_mtime < self.page_ttl
        if not fresh:
            try:
                body = self._fetch(f"{self.index}/{name}/", JSON_TYPE)
                self.upstream_fetches += 1
                json.loads(body)  # only a page that parses is kept
                _kept(kept, body)
            except (OSError, ValueError):
                if not kept.exists():
                    raise
        return pointed_at(kept.read_bytes(), files_base, self.files)

    def file(self, path: str) -> Path:
        """The kept copy of /files/packages/..., fetched from PyPI the first time."""
        rel = file_path(path)
        kept = self.root / "files" / rel
        if not kept.exists():
            body = self._fetch(f"{self.files}/{rel}")
            self.upstream_fetches += 1
            _kept(kept, body)
        return kept
