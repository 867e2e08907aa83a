"""A forwarding HTTP proxy on loopback for the tests: plain requests (absolute URLs) and CONNECT
tunnels (https), one log line per request, so a test proves that every download went through it.

Connections it makes to loopback addresses leave from 127.0.0.2: a mirror that admits only that
peer (`Mirror(allow=("127.0.0.2",))`) is then reachable through the proxy and nowhere else. Usage:

    python -m testbed.proxy [--port 0]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import ipaddress
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SOURCE_FOR_LOOPBACK = "127.0.0.2"
# Headers that belong to one connection, never forwarded (RFC 9110, 7.6.1).
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade"}


def _source(host: str) -> tuple[str, int] | None:
    """Leave from 127.0.0.2 towards loopback; elsewhere from wherever the kernel routes."""
    if host == "localhost":
        return (SOURCE_FOR_LOOPBACK, 0)
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return (SOURCE_FOR_LOOPBACK, 0)
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection; the body ends when it closes

    def __init__(self, *args, proxy: Proxy, **kwargs):
        self.proxy = proxy
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):
        pass

    def do_CONNECT(self):
        host, _, port = self.path.rpartition(":")
        try:
            upstream = socket.create_connection((host, int(port)), timeout=30, source_address=_source(host))
        except (OSError, ValueError) as exc:
            self.proxy.record("CONNECT", self.path, 502)
            self.send_error(502, f"cannot reach {self.path}: {exc}")
            return
        self.proxy.record("CONNECT", self.path, 200)
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self._relay(self.connection, upstream)

    @staticmethod
    def _relay(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 120)
                if not ready:
                    return
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except OSError:
            return
        finally:
            b.close()

    def _forward(self):
        url = urlsplit(self.path)
        if url.scheme != "http" or not url.hostname:
            self.proxy.record(self.command, self.path, 400)
            self.send_error(400, "a proxy request needs an absolute http:// URL")
            return
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        body = None
        if self.headers.get("Content-Length"):
            body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        conn = http.client.HTTPConnection(
            url.hostname, url.port or 80, timeout=60, source_address=_source(url.hostname)
        )
        try:
            conn.request(self.command, path, body=body, headers=headers)
            resp = conn.getresponse()
        except OSError as exc:
            self.proxy.record(self.command, self.path, 502)
            self.send_error(502, f"cannot reach {url.hostname}: {exc}")
            return
        self.proxy.record(self.command, self.path, resp.status)
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP and k.lower() != "transfer-encoding":
                self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            while chunk := resp.read(65536):
                self.wfile.write(chunk)
        conn.close()

    do_GET = do_HEAD = do_POST = _forward


class Proxy:
    """The proxy on 127.0.0.1, with the log of what it forwarded: (method, target, status)."""

    def __init__(self, port: int = 0):
        self._lock = threading.Lock()
        self.log: list[tuple[str, str, int]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), lambda *a: _Handler(*a, proxy=self))
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def record(self, method: str, target: str, status: int) -> None:
        with self._lock:
            self.log.append((method, target, status))

    def __enter__(self) -> Proxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.proxy", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    proxy = Proxy(args.port)
    print(f"proxy at {proxy.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        proxy._server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
