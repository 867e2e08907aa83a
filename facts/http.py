"""Facts about what a download source serves, asked from the host (its network, its proxy)."""

from __future__ import annotations

from pyinfra.api import FactBase, StringCommand

from remote import python


class UrlSize(FactBase[int | None]):
    """Bytes a URL serves by a HEAD request from the host, or None where it cannot be known (no answer,
    no Content-Length). A URL with credentials is never asked this way (deploy code passes none)."""

    def command(self, url: str) -> StringCommand:
        return python("python3", "url_size.py", url)

    def process(self, output: list[str]) -> int | None:
        for line in output:
            if line.startswith("SIZE=") and line[5:].isdigit():
                return int(line[5:])
        return None
