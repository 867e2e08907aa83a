"""The controller's trust anchors sealed with a key that does not live beside them. On a notebook the controller's
state (venv locks, snapshot and apt-manifest digests) lies on the drive (controller_state_dir): whoever can
write the drive could rewrite a digest with the file it vouches for, and root would install both. With a key,
each anchor is kept with an HMAC-SHA256 of its name and text (NAME.hmac beside it), and one whose seal does
not agree is not trusted: read as absent, so the host's caches are checked anew, never believed.

The key: TRITON_PROVISIONER_STATE_KEY in the controller's environment, else Colab's notebook secret of that
name (`google.colab.userdata`: kept by Colab across resets, never on the drive), else the file
~/.config/triton-provisioner/state.key (0600, outside the drive). It is never printed, logged or sent to a host.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from functools import cache
from pathlib import Path

KEY_NAME = "TRITON_PROVISIONER_STATE_KEY"
KEY_FILE = Path("~/.config/triton-provisioner/state.key")
SUFFIX = ".hmac"


def _colab_secret() -> str:
    """The notebook secret KEY_NAME, where this runs in Colab and the notebook may read it; else ""."""
    try:
        from google.colab import userdata  # type: ignore[import-not-found]

        return str(userdata.get(KEY_NAME) or "")
    except Exception:  # not Colab, no such secret, or the notebook not granted it: no key from there
        return ""


def _key_file() -> str:
    """The key file's text, where it is a regular file of this user's that no one else may read; else ""."""
    path = KEY_FILE.expanduser()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return ""
        return f.read().strip()


@cache
def key() -> tuple[bytes, str] | None:
    """(the key, where it came from), or None where none is given."""
    for where, found in ((f"${KEY_NAME}", lambda: os.environ.get(KEY_NAME, "")), ("Colab's secret", _colab_secret)):
        value = found().strip()
        if value:
            return value.encode(), where
    value = _key_file()
    return (value.encode(), str(KEY_FILE)) if value else None


def _seal(path: Path, text: str, secret: bytes) -> str:
    """The HMAC of the anchor's text and its name (its last three path parts: a host's digest cannot stand in
    for another host's, nor a lock for another lock)."""
    name = "/".join(path.parts[-3:])
    return hmac.new(secret, f"{name}\n{text}".encode(), hashlib.sha256).hexdigest()


def sealed(path: Path, text: str) -> None:
    """Write an anchor with its seal beside it where a key is given (each written aside, then renamed)."""
    found = key()
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace(path, text)
    if found:
        _replace(_sidecar(path), _seal(path, text, found[0]) + "\n")
    else:
        _sidecar(path).unlink(missing_ok=True)  # an old seal would not agree with the new text


def _replace(target: Path, body: str) -> None:
    """body at target, written aside under a name of its own (the run's hosts may keep one lock at once)."""
    part = target.with_name(f".{target.name}.{secrets.token_hex(6)}.part")
    part.write_text(body)
    part.replace(target)


def trusted(path: Path) -> str | None:
    """An anchor's text where it may be believed: there, and (where a key is given) its seal agrees; None else."""
    try:
        text = path.read_text()
    except OSError:
        return None
    found = key()
    if found is None:
        return text
    try:
        seal = _sidecar(path).read_text().strip()
    except OSError:
        return None
    return text if hmac.compare_digest(seal, _seal(path, text, found[0])) else None


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)
