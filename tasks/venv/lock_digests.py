"""A venv lock the first host made is checked on the controller against the sha256 its indexes publish
for each file, before any host installs from it: a file whose published digest differs is refused (a
mirror or a path in between changed it), and so is a file no index publishes a digest for (a find-links
folder's, or one whose index did not answer), unless the setting lock_trust_on_first_use names its package:
then the lock trusts the first download of it.

The indexes are asked the way pip asks them: the simple API (PEP 691 JSON, else PEP 503 HTML, whose
links carry `#sha256=`), at the index URL (PyPI's by default) and the torch variant's index, from the
controller (several pages at once), so that a host's own mirror or network cannot vouch for itself. A
find-links folder is the user's own: it is not asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin, urlsplit

from remote._http import OPENER, request

PYPI_SIMPLE = "https://pypi.org/simple"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>\S+) --hash=sha256:(?P<sha>[0-9a-f]{64})\s+# (?P<file>\S+)$"
)

# (url) -> (content type, body); raises OSError where the page cannot be read
Fetch = Callable[[str], tuple[str, bytes]]


@dataclass(frozen=True)
class LockEntry:
    name: str  # normalised (PEP 503)
    version: str
    sha256: str
    filename: str


@dataclass(frozen=True)
class LockCheck:
    mismatched: tuple[str, ...]  # "file: lock sha256 X, published Y (where)"
    unpublished: tuple[LockEntry, ...]  # files no index asked publishes a digest for (or whose page did not answer)
    unreachable: tuple[str, ...]  # "url: why" of the pages that could not be read
    trusted: frozenset[str] = frozenset()  # packages whose unpublished files are accepted as first downloaded

    @property
    def untrusted(self) -> tuple[str, ...]:
        """The files with no published digest whose package the trust-on-first-use setting does not name."""
        return tuple(e.filename for e in self.unpublished if e.name not in self.trusted)

    @property
    def refused(self) -> bool:
        """Nothing is installed from this lock: a digest differs, or a file has none and is not trusted."""
        return bool(self.mismatched or self.untrusted)

    @property
    def lines(self) -> list[str]:
        """What the run says about the lock (one line each kind)."""
        out = []
        if self.mismatched:
            out.append("lock refused: the index publishes another sha256 for " + "; ".join(self.mismatched))
        if self.untrusted:
            names = ",".join(sorted({e.name for e in self.unpublished if e.name not in self.trusted}))
            out.append(
                f"lock refused: no index asked publishes a sha256 for {', '.join(self.untrusted)} (from a "
                "find-links folder, or its index did not answer): nothing was installed from the wheelhouse and "
                f"no lock was kept. Fix: serve it from an index that publishes digests, or accept it as first "
                f"downloaded with lock_trust_on_first_use = '{names}'"
            )
        kept = [e.filename for e in self.unpublished if e.name in self.trusted]
        if kept:
            out.append(
                f"lock: {len(kept)} file(s) with no digest published by an index asked, kept as first downloaded "
                f"(lock_trust_on_first_use): {', '.join(kept)}"
            )
        if self.unreachable:
            out.append("lock: could not ask " + "; ".join(self.unreachable))
        return out


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(lock_text: str) -> list[LockEntry]:
    """The lock's lines (wheel_lock.py's format: `name==version --hash=sha256:HEX  # FILE`)."""
    found = []
    for line in lock_text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            found.append(LockEntry(normalised(m["name"]), m["version"], m["sha"], m["file"]))
    return found


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v)


def _page_files(content_type: str, body: bytes) -> list[tuple[str, str, str]]:
    """(link as written, file name, published sha256 or "") of each file one simple-API page (JSON or HTML)
    or a find-links page lists."""
    if content_type.split(";")[0].strip() == JSON_TYPE:
        data = json.loads(body)
        return [
            (
                str(f.get("url", f["filename"])),
                f["filename"],
                (f.get("hashes") or {}).get("sha256", "").lower() if isinstance(f.get("hashes"), dict) else "",
            )
            for f in data.get("files", [])
            if isinstance(f, dict) and isinstance(f.get("filename"), str)
        ]
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    found = []
    for href in parser.hrefs:
        path, _, fragment = href.partition("#")
        sha = fragment[7:].lower() if fragment.startswith("sha256=") else ""
        found.append((path, unquote(urlsplit(path).path.rsplit("/", 1)[-1]), sha))
    return found


def published(content_type: str, body: bytes) -> dict[str, str]:
    """file name -> published sha256 of one simple-API page (JSON or HTML) or a find-links page."""
    return {name: sha for _, name, sha in _page_files(content_type, body) if sha}


def file_links(content_type: str, body: bytes, page_url: str) -> dict[str, str]:
    """file name -> the URL it is fetched from, of each file one page lists (relative links resolved)."""
    return {name: urljoin(page_url, link) for link, name, _ in _page_files(content_type, body) if name}


def wheel_urls(
    lock_text: str, index_url: str, torch_index: str | None, find_links: str, fetch: Fetch
) -> dict[str, str]:
    """file name -> URL of each file the lock names, from the pages pip would read (the index's project pages,
    torch's index, an http find-links page), each asked once, eight at a time. A file no page lists is left
    out (its fetch names it)."""
    lock = entries(lock_text)
    urls = pages(lock, index_url, torch_index) + ([find_links] if find_links else [])
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda url: _links_of(fetch, url), urls))
    wanted = {e.filename for e in lock}
    found: dict[str, str] = {}
    for answer in answers:
        for name, url in answer.items():
            if name in wanted:
                found.setdefault(name, url)
    return found


def _links_of(fetch: Fetch, url: str) -> dict[str, str]:
    try:
        return file_links(*fetch(url), url)
    except (OSError, ValueError):
        return {}


def pages(lock: list[LockEntry], index_url: str, torch_index: str | None) -> list[str]:
    """The pages to ask: each package's project page at the index, and torch's at its own index."""
    index = (index_url or PYPI_SIMPLE).rstrip("/")
    urls = [f"{index}/{e.name}/" for e in lock]
    if torch_index:
        urls += [f"{torch_index.rstrip('/')}/{e.name}/" for e in lock if e.name == "torch"]
    return list(dict.fromkeys(urls))


def _ask(fetch: Fetch, url: str) -> dict[str, str] | str:
    """The page's published digests, or why it could not be read."""
    try:
        return published(*fetch(url))
    except (OSError, ValueError) as exc:
        return f"{_shown(url)}: {type(exc).__name__}: {exc}"


def check(
    lock_text: str, index_url: str, torch_index: str | None, fetch: Fetch, trusted: frozenset[str] = frozenset()
) -> LockCheck:
    """The lock against what its indexes publish (each page asked once, eight at a time, through fetch);
    trusted: the packages whose files may go without a published digest."""
    lock = entries(lock_text)
    urls = pages(lock, index_url, torch_index)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda url: _ask(fetch, url), urls))
    digests: dict[str, list[tuple[str, str]]] = {}
    unreachable = []
    for url, answer in zip(urls, answers, strict=True):
        if isinstance(answer, str):
            unreachable.append(answer)
            continue
        for filename, sha in answer.items():
            digests.setdefault(filename, []).append((sha, _shown(url)))
    mismatched, unpublished = [], []
    for e in lock:
        said = digests.get(e.filename, [])
        wrong = [(sha, where) for sha, where in said if sha != e.sha256]
        if wrong:
            mismatched.append(f"{e.filename}: lock sha256 {e.sha256}, published {wrong[0][0]} ({wrong[0][1]})")
        elif not said:
            unpublished.append(e)
    return LockCheck(tuple(mismatched), tuple(unpublished), tuple(unreachable), trusted)


def _version_of(filename: str) -> tuple[str, bool] | None:
    """(version, whether it is a wheel) of a distribution's file name; None for any other file."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return (parts[1], True) if len(parts) >= 5 else None
    for suffix in (".tar.gz", ".zip", ".tar.bz2"):
        if filename.endswith(suffix) and "-" in filename:
            return filename[: -len(suffix)].rsplit("-", 1)[1], False
    return None


def sdist_only(pins: dict[str, str], index_url: str, fetch: Fetch) -> tuple[str, ...]:
    """The pins ("name==version") whose version the index lists files for and not one wheel: the download
    (wheels only) would refuse them, so the plan does, before any change. A page that cannot be read says
    nothing: the download's own refusal stands."""
    index = (index_url or PYPI_SIMPLE).rstrip("/")
    wanted = {normalised(name.split("[")[0]): version for name, version in pins.items()}
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda name: _ask(fetch, f"{index}/{name}/"), wanted))
    refused = []
    for (name, version), answer in zip(wanted.items(), answers, strict=True):
        if isinstance(answer, str):
            continue
        kinds = [found[1] for found in map(_version_of, answer) if found and found[0] == version]
        if kinds and not any(kinds):
            refused.append(f"{name}=={version}")
    return tuple(refused)


def _shown(url: str) -> str:
    """url without a user and password."""
    parts = urlsplit(url)
    return url.replace(parts.netloc, parts.hostname or "", 1) if "@" in parts.netloc else url


def urllib_fetch(url: str) -> tuple[str, bytes]:
    """The page at url as pip asks for it (JSON preferred), through the controller's proxies; a URL's
    user and password as Basic authentication, never sent on to another host after a redirect."""
    req = request(url)
    req.add_header("Accept", f"{JSON_TYPE}, text/html;q=0.1")
    with OPENER.open(req, timeout=30) as resp:
        return resp.headers.get("Content-Type", ""), resp.read(64 << 20)
