"""Download URL to DEST only if its sha256 matches; runs on the host with its python3 (3.8+).

    python3 fetch.py URL|@URLFILE DEST SHA256

Writes DEST.part, checks it, then renames: a bad or interrupted download never sits at DEST.
Exit 3 on a checksum mismatch (the bad file is removed), 4 on a network error. A URL with a user
and password comes as @URLFILE (a root-only file, removed once read), never on the command line;
it is sent as HTTP Basic authentication and shown with its password masked.
"""

import hashlib
import http.client
import os
import sys

from _http import OPENER, masked, request
from _progress import Progress


def main(url: str, dest: str, sha256: str) -> int:
    if url.startswith("@"):  # the URL holds credentials: read it from the root-only file, then drop that
        with open(url[1:]) as f:
            url = f.read().strip()
        os.unlink(f.name)
    shown = masked(url)
    part = dest + ".part"
    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
    digest = hashlib.sha256()
    done = total = 0
    try:
        with OPENER.open(request(url), timeout=60) as resp, open(part, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0)
            progress = Progress(f"download {os.path.basename(dest)}", total)
            while True:
                chunk = resp.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                progress.update(done)
        if total and done != total:
            raise http.client.IncompleteRead(b"", total - done)
        progress.finished(done)
    except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut short
        if os.path.exists(part):
            os.unlink(part)
        of = f" of {total}" if total else ""
        print(
            f"fetch: download of {shown} failed after {done}{of} bytes ({type(exc).__name__}: {exc}); "
            "the partial file was removed and nothing was installed. Run again to retry.",
            file=sys.stderr,
        )
        return 4
    got = digest.hexdigest()
    if got != sha256:
        os.unlink(part)
        print(
            f"fetch: sha256 mismatch for {shown}: expected {sha256}, got {got} ({done} bytes). "
            "The file was removed and nothing was installed; check the URL and the sha256 setting.",
            file=sys.stderr,
        )
        return 3
    os.replace(part, dest)
    print(f"fetch: {dest} ({done} bytes) verified", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
