"""A local artifact mirror: an HTTP server on loopback serving files the tests place there.

It stands in for the download sources a real host uses (a Triton tarball URL, a wheel
index, PyPI through a cache: testbed/pypi_cache.py), and keeps an access log so a test can
prove that nothing was fetched. Usage:

    python -m testbed.mirror DIR [--port 0]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from remote._common import sha256
from testbed.pypi_cache import JSON_TYPE, NotFound, PypiCache


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file: the installer's own (remote/_common.py), so the test bed and the host agree."""
    return sha256(str(path))


class _Handler(SimpleHTTPRequestHandler):
    """Serves the mirror directory and appends one line per request to the access log."""

    def __init__(self, *args, mirror: Mirror, **kwargs):
        self.mirror = mirror
        super().__init__(*args, directory=str(mirror.root), **kwargs)

    def log_request(self, code="-", size="-"):
        if self.path.startswith("/_cut/"):
            return  # do_GET records what it really sent
        status = int(code) if str(code).isdigit() else 0
        sent = self.headers_sent_size() if status == 200 and self.command == "GET" else 0  # a HEAD sends none
        self.mirror._record(self.command, self.path, status, sent)

    pypi_size = 0  # bytes of a /pypi/ answer

    def headers_sent_size(self) -> int:
        """Bytes of the file this request asked for (what a 200 sends)."""
        if self.pypi_size:
            return self.pypi_size
        path = self.translate_path(self.path)
        try:
            return Path(path).stat().st_size
        except OSError:
            return 0

    def log_message(self, format, *args):
        pass

    def _refused(self) -> bool:
        """A peer the mirror does not admit gets 403 (a mirror reachable only through a proxy)."""
        if self.mirror.allow is None or self.client_address[0] in self.mirror.allow:
            return False
        self.send_error(403, f"{self.client_address[0]} may not use this mirror")
        return True

    rate = 0  # bytes per second this request is sent at (0: as fast as it goes)

    def _slowed(self) -> None:
        """/_slow/RATE/PATH is PATH sent at RATE bytes per second (links in a listing stay slow)."""
        if self.path.startswith("/_slow/"):
            _, _, rate, rest = self.path.split("/", 3)
            self.rate, self.path = int(rate), "/" + rest

    def copyfile(self, source, outputfile) -> None:
        if not self.rate:
            return super().copyfile(source, outputfile)
        started, sent = time.monotonic(), 0
        while chunk := source.read(64 << 10):
            outputfile.write(chunk)
            sent += len(chunk)
            ahead = sent / self.rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        return None

    def _pypi(self, head: bool) -> None:
        """/pypi/simple/NAME/ and /pypi/files/...: PyPI through the mirror's cache (testbed/pypi_cache.py)."""
        rest = self.path.split("?", 1)[0][len("/pypi") :]
        pypi = self.mirror.pypi
        assert pypi is not None
        try:
            if rest.startswith("/simple/"):
                content_type, body = JSON_TYPE, pypi.page(rest, f"{self.mirror.url}/pypi/files")
            else:
                content_type, body = "application/octet-stream", pypi.file(rest).read_bytes()
        except NotFound:
            self.send_error(404, "not on PyPI")
            return
        except OSError as exc:
            self.send_error(502, f"PyPI did not answer: {type(exc).__name__}")
            return
        self.pypi_size = len(body)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        if self._refused():
            return
        if self.mirror.pypi is not None and self.path.startswith("/pypi/"):
            return self._pypi(head=True)
        self._slowed()
        super().do_HEAD()

    def do_GET(self):
        """/_cut/N/PATH sends PATH's headers (its full Content-Length) and N bytes, then drops the
        connection: a download cut mid-transfer. /_slow/RATE/PATH sends PATH at RATE bytes a second.
        Every other path is served as a file."""
        if self._refused():
            return None
        if self.mirror.pypi is not None and self.path.startswith("/pypi/"):
            return self._pypi(head=False)
        self._slowed()
        if not self.path.startswith("/_cut/"):
            return super().do_GET()
        _, _, after, rest = self.path.split("/", 3)
        path = Path(self.translate_path("/" + rest))
        data = path.read_bytes()[: int(after)]
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(path.stat().st_size))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True
        self.mirror._record("GET", self.path, 200, len(data))


class Mirror:
    """An HTTP file server on 127.0.0.1 over one directory, with an access log."""

    def __init__(
        self,
        root: Path,
        port: int = 0,
        host: str = "127.0.0.1",
        allow: tuple[str, ...] | None = None,
        pypi: PypiCache | None = None,
    ):
        self.allow = allow  # peer addresses admitted; None: every peer
        self.pypi = pypi  # PyPI's index under /pypi/simple/ (None: not served)
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_path = self.root.parent / f"{self.root.name}-access.log"
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), partial(_Handler, mirror=self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Mirror:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Mirror:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def place(self, src: Path, name: str | None = None) -> tuple[str, str]:
        """Copy a file into the mirror (with NAME.sha256 beside it); return its URL and sha256."""
        name = name or Path(src).name
        dest = self.root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if Path(src).resolve() != dest.resolve():
            shutil.copyfile(src, dest)
        digest = sha256_of(dest)
        dest.with_name(dest.name + ".sha256").write_text(f"{digest}  {dest.name}\n")
        return f"{self.url}/{name}", digest

    def cut_url(self, name: str, after: int) -> str:
        """A URL of the placed file NAME whose transfer stops after AFTER bytes."""
        return f"{self.url}/_cut/{after}/{name}"

    def slow_url(self, name: str, rate: int) -> str:
        """A URL of NAME (a placed file, or a folder ending in /) sent at RATE bytes per second."""
        return f"{self.url}/_slow/{rate}/{name}"

    def _record(self, method: str, path: str, status: int, size: int = 0) -> None:
        with self._lock, open(self.log_path, "a") as log:
            log.write(f"{time.time():.3f} {method} {path} {status} {size}\n")

    def requests(self) -> list[tuple[str, str, int]]:
        """Every request served so far, as (method, path, status)."""
        if not self.log_path.exists():
            return []
        out = []
        for line in self.log_path.read_text().splitlines():
            _, method, path, status, _size = line.split(" ")
            out.append((method, path, int(status)))
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.mirror", description=__doc__.split("\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    mirror = Mirror(args.directory, args.port)
    print(f"serving {args.directory} at {mirror.url}; access log {mirror.log_path}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        mirror._server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
