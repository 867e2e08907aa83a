"""Secrets in what the tool prints: a URL's password (https://user:PASSWORD@mirror/...) is masked in
every line pyinfra logs and in every error the settings raise; the HuggingFace token is never printed."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

# scheme://USERINFO@host: the user information runs to the authority's last @ (a password may hold an @),
# the authority to the first / ? # or space. user:password -> user:***; a lone token (https://TOKEN@host) -> ***.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s'\"]*)@")


def _masked_userinfo(m: re.Match) -> str:
    user, sep, _ = m["userinfo"].partition(":")
    return f"{m['scheme']}{user}:***@" if sep else f"{m['scheme']}***@"


def mask(text: str) -> str:
    """text with the password (or the lone token) of every URL in it replaced by ***."""
    return _USERINFO.sub(_masked_userinfo, text)


def write_private(path: Path, text: str) -> Path:
    """A report on the controller: its URL passwords masked, 0600 from its first byte (it names hosts,
    paths and sources), written aside and renamed over the old one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(mask(text))
    os.replace(tmp, path)
    return path


def has_credentials(url: str) -> bool:
    """The URL carries a user name or password (scheme://user:pass@host/...)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return bool(parts.username or parts.password)


class MaskingFilter(logging.Filter):
    """Masks URL passwords in a log record's final message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


def mask_output() -> None:
    """Put the masking filter on every handler of pyinfra's logger and the root logger (once)."""
    for logger in (logging.getLogger("pyinfra"), logging.getLogger()):
        for handler in logger.handlers:
            if not any(isinstance(f, MaskingFilter) for f in handler.filters):
                handler.addFilter(MaskingFilter())
