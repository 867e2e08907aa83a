"""Small files the tool renders (env.sh, the launcher, model configs): each written only when its
content or mode differs, all of them compared by one fact instead of two round trips a file."""

from __future__ import annotations

import hashlib
import posixpath

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

from facts.digests import FileDigests
from tasks.downloads import private_upload


@operation()
def written(files: dict[str, tuple[bytes, str]]):
    """Each dest holds its content with its mode (dest -> (content, octal mode)); the rest is left alone.

    Uploaded through a private staging directory (never a /tmp name another user could predict) to a
    temporary name beside dest, renamed over it: a reader never sees half a file.
    """
    have = host.get_fact(FileDigests, paths=list(files))
    changed = False
    for dest, (content, mode) in files.items():
        got = have.get(dest)
        if got and got["sha256"] == hashlib.sha256(content).hexdigest():
            if got["mode"] != mode:
                changed = True
                yield StringCommand("chmod", mode, QuoteString(dest))
            continue
        changed = True
        yield private_upload.put(dest, content, mode)
    if not changed:
        host.noop(f"{len(files)} file(s) as rendered: {', '.join(posixpath.basename(d) for d in files)}")
