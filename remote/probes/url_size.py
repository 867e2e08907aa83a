"""The size in bytes of what a URL serves, from a HEAD request made on the host (its network, its
proxy); runs with the host's python3 (3.8+).

    python3 url_size.py URL

Prints SIZE=N, or SIZE= where the server is unreachable or sends no Content-Length: the plan then
says no size. Always exits 0: an unknown size is an answer, not a failure.
"""

import sys
import urllib.request


def main(url: str) -> int:
    size = ""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5) as resp:
            length = resp.headers.get("Content-Length") or ""
            size = length if length.isdigit() else ""
    except Exception:  # unreachable, refused, an HTTP error: no size, and the download step will say why
        pass
    print(f"SIZE={size}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
