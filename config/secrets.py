"""Secrets in what the tool prints: a URL's password (https://user:PASSWORD@mirror/...) is masked in
every line pyinfra logs and in every error the settings raise; the HuggingFace token is never printed."""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit

# scheme://user:password@ -> scheme://user:***@ (the user name helps; the password is the secret)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@:\s'\"]*):[^/@\s'\"]*@")


def mask(text: str) -> str:
    """text with the password of every URL in it replaced by ***."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)


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
