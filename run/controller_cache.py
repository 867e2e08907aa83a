"""The controller's download cache: each file a fleet needs, fetched once from where the hosts would have
fetched it, kept under its sha256, and handed to every host that lacks it (tasks/downloads/relay.py).

Why the controller fetches, not the first host: pyinfra runs each step on every host at once, so a
"first host" would hold the whole fleet back until it finished, and its copy would then have to come back
through the controller anyway. The controller already holds the digests (the rules, the kept lock) and a
connection to every host. Nothing is trusted more for coming from here: a file is kept only once its
sha256 agrees, and each host checks it again before it takes its place.

Hosts run as gevent greenlets in one process (pyinfra patches threading): one lock per sha256 makes the
second host wait for the first one's fetch, and an advisory file lock does the same for another run of
the controller sharing the cache (two test workers, two terminals).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from remote._common import printable
from remote._common import sha256 as _sha256
from remote._http import OPENER, masked, request

CHUNK = 1 << 20
# How long a fetch waits for another controller process that holds the same file's lock.
LOCK_WAIT_S = 3600

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class FetchError(RuntimeError):
    """The controller could not fetch a file or the file was not what its digest says; the message names
    the URL (its password masked) and the fix."""


# (path, size, mtime_ns) -> sha256: what was read (or written, _download) this run
_known_sha256: dict[tuple[str, int, int], str] = {}


def _stat_key(path: str | Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return str(path), st.st_size, st.st_mtime_ns


def file_sha256(path: str | Path) -> str:
    """A controller file's sha256, read once per run while its size and time stay the same."""
    key = _stat_key(path)
    if key not in _known_sha256:
        _known_sha256[key] = _sha256(str(path))
    return _known_sha256[key]


def lock_for(key: str) -> threading.Lock:
    """One lock in this process per key (a file's sha256, a hub snapshot, an image): the run's hosts (gevent
    greenlets) asking for the same download at once wait for one fetch."""
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _flocked(handle) -> None:
    """Takes the advisory lock without blocking the process (other hosts' greenlets go on meanwhile)."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise FetchError(f"another controller run held {handle.name} for {LOCK_WAIT_S} s") from None
            time.sleep(0.2)


def _download(url: str, sha256: str, cache_dir: Path, size: int | None = None) -> Path:
    """url into cache_dir/sha256: written aside (a private temporary name) while hashed, renamed only once
    the digest agrees; a mismatch or a cut transfer leaves nothing behind. size: the bytes the file has (a
    signed list's or a manifest's word): the transfer is cut off past it."""
    final = cache_dir / sha256
    handle, part = tempfile.mkstemp(dir=cache_dir, prefix=f".{sha256[:16]}.", suffix=".part")
    digest = hashlib.sha256()
    try:
        with os.fdopen(handle, "wb") as out, OPENER.open(request(url), timeout=60) as resp:
            expected = resp.headers.get("Content-Length")
            got = 0
            while chunk := resp.read(CHUNK if size is None else min(CHUNK, size + 1 - got)):
                digest.update(chunk)
                out.write(chunk)
                got += len(chunk)
                if size is not None and got > size:
                    raise FetchError(f"{shown(url)} sent more than the {size} bytes it has: cut off, nothing kept")
            if expected is not None and expected.isdigit() and got != int(expected):
                raise FetchError(f"{shown(url)}: the transfer was cut at {got} of {expected} bytes; run again")
        if digest.hexdigest() != sha256:
            raise FetchError(
                f"{shown(url)} has sha256 {digest.hexdigest()}, not {sha256}: nothing was kept or sent. Fix the "
                "URL (or the mirror in between), or the digest if the file was meant to change"
            )
        os.replace(part, final)
        _known_sha256[_stat_key(final)] = sha256  # hashed as it came: the next host's check reads nothing
        return final
    except OSError as exc:
        raise FetchError(f"the controller could not fetch {shown(url)}: {type(exc).__name__}: {exc}") from None
    finally:
        if os.path.exists(part):
            os.unlink(part)


def shown(url: str) -> str:
    """A URL as a message shows it: its password masked, what a terminal would act on escaped."""
    return printable(masked(url))


def fetched(url: str | Callable[[], str], sha256: str, cache_dir: Path, size: int | None = None) -> Path:
    """The controller's copy of url, whose sha256 is this: fetched once, then taken from the cache while it
    still agrees (a cached file altered since is fetched again). url: or what finds it (an index's pages,
    read only where the cache lacks the file); size: where known, no more is read than that."""
    cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    final = cache_dir / sha256
    with lock_for(sha256), open(cache_dir / f".{sha256}.lock", "a") as lock_file:
        _flocked(lock_file)
        if final.is_file() and file_sha256(final) == sha256:
            return final
        return _download(url() if callable(url) else url, sha256, cache_dir, size)
