"""A container registry stand-in on loopback: the OCI distribution API's pull side, as NGC answers it.

`GET /v2/REPO/manifests/REF` and `/v2/REPO/blobs/DIGEST` need a bearer token: without one the answer is
401 with `WWW-Authenticate: Bearer realm=".../token",service=...,scope=...`; the token service hands one
out to anyone (an anonymous pull) or, where the registry has an API key, only for Basic `$oauthtoken:KEY`.
A blob is answered with a redirect to another host name (`localhost`, as NGC sends its CDN's URL) that
serves it without the token: the requests log says whether a token reached it. Images are added with
`push` (a manifest, its config and layers as bytes); `tamper` changes a layer's bytes as served.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_GZIP_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"


def ngc_config(
    ubuntu: str = "22.04", triton: str = "2.51.0", release: str = "24.10", cuda: str = "12.6.2.004"
) -> bytes:
    """An image config as NGC's Triton images carry one: TRITON_SERVER_VERSION, NVIDIA_TRITON_SERVER_VERSION and
    the com.nvidia.tritonserver.version label as Triton's build.py writes them into its Dockerfile, CUDA_VERSION
    as NVIDIA's CUDA base images set it ("" for a CPU-only build, on plain Ubuntu), and the
    org.opencontainers.image labels of Ubuntu's official images."""
    env = [
        "PATH=/opt/tritonserver/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        *([f"CUDA_VERSION={cuda}"] if cuda else []),
        f"TRITON_SERVER_VERSION={triton}",
        f"NVIDIA_TRITON_SERVER_VERSION={release}",
        "TRITON_SERVER_USER=triton-server",
    ]
    labels = {
        "com.nvidia.tritonserver.version": triton,
        "org.opencontainers.image.ref.name": "ubuntu",
        "org.opencontainers.image.version": ubuntu,
    }
    config = {"Env": env, "Labels": labels, "WorkingDir": "/opt/tritonserver"}
    return json.dumps({"architecture": "amd64", "os": "linux", "config": config}, sort_keys=True).encode()


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def descriptor(media_type: str, data: bytes, **extra) -> dict:
    """An OCI descriptor of data: its media type, digest and size."""
    return {"mediaType": media_type, "digest": digest_of(data), "size": len(data), **extra}


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, *args, registry: Registry, **kwargs):
        self.registry = registry
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):
        pass

    def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        # logged before the answer goes: a client that has its answer finds its request in the log
        self.registry.log.append((self.command, self.path, code, self.headers.get("Authorization", "")))
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.registry.token}":
            return True
        realm = f"{self.registry.url}/token"
        scope = "repository:" + self.path.split("/", 2)[2].rsplit("/", 2)[0] + ":pull"
        challenge = f'Bearer realm="{realm}",service="testbed-registry",scope="{scope}"'
        self._send(401, b'{"errors": [{"code": "UNAUTHORIZED"}]}', {"WWW-Authenticate": challenge})
        return False

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        reg = self.registry
        path = self.path.split("?", 1)[0]
        if path == "/token":
            key = reg.api_key
            wanted = "Basic " + base64.b64encode(f"$oauthtoken:{key}".encode()).decode()
            if key and self.headers.get("Authorization") != wanted:
                return self._send(401, b'{"errors": [{"code": "DENIED"}]}')
            answer = reg.token_answer or json.dumps({"token": reg.token}).encode()
            return self._send(200, answer, {"Content-Type": "application/json"})
        if path.startswith("/cdn/"):
            blob = reg.blobs.get(path[len("/cdn/") :])
            if blob is None:
                return self._send(404)
            return self._send(200, reg.served(path[len("/cdn/") :], blob), {"Content-Type": "application/octet-stream"})
        if not path.startswith("/v2/"):
            return self._send(404)
        if not self._authorized():
            return None
        repo_path, kind, ref = path[len("/v2/") :].rsplit("/", 2)
        if repo_path != reg.repository:
            return self._send(404, b'{"errors": [{"code": "NAME_UNKNOWN"}]}')
        if kind == "manifests":
            digest = reg.tags.get(ref, ref)
            body = reg.blobs.get(digest)
            if body is None:
                return self._send(404, b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}')
            media = json.loads(body).get("mediaType", MANIFEST_TYPE)
            return self._send(200, reg.served(digest, body), {"Content-Type": media, "Docker-Content-Digest": digest})
        if kind == "blobs" and ref in reg.blobs:
            cdn = reg.url.replace("127.0.0.1", reg.cdn_host)  # another host name: no token may follow there
            return self._send(307, b"", {"Location": f"{cdn}/cdn/{ref}"})
        return self._send(404, b'{"errors": [{"code": "BLOB_UNKNOWN"}]}')


class Registry:
    """One repository's images on 127.0.0.1, served as a registry with a token service."""

    def __init__(self, repository: str = "nvidia/tritonserver", api_key: str = "", cdn_host: str = "localhost") -> None:
        """cdn_host: the host name blob redirects name (a test host that resolves no `localhost`: 127.0.0.1)."""
        self.repository, self.api_key, self.cdn_host = repository, api_key, cdn_host
        self.token = secrets.token_hex(16)
        self.token_answer = b""  # what the token service answers instead of {"token": ...} (a broken one)
        self.blobs: dict[str, bytes] = {}
        self.tags: dict[str, str] = {}
        self.tampered: dict[str, bytes] = {}
        self.log: list[tuple[str, str, int, str]] = []  # (method, path, status, Authorization sent)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, registry=self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> Registry:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def served(self, digest: str, blob: bytes) -> bytes:
        return self.tampered.get(digest, blob)

    def push(self, tag: str, config: bytes, layers: list[bytes], arch: str = "amd64") -> tuple[str, str]:
        """An image of these gzipped layers under tag, as an index with one linux/ARCH entry; returns
        (the index's digest, the manifest's digest)."""
        manifest = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": descriptor(CONFIG_TYPE, config),
            "layers": [descriptor(LAYER_GZIP_TYPE, layer) for layer in layers],
        }
        manifest_bytes = json.dumps(manifest).encode()
        platform = {"os": "linux", "architecture": arch}
        index = {
            "schemaVersion": 2,
            "mediaType": INDEX_TYPE,
            "manifests": [descriptor(MANIFEST_TYPE, manifest_bytes, platform=platform)],
        }
        index_bytes = json.dumps(index).encode()
        for blob in (config, *layers, manifest_bytes, index_bytes):
            self.blobs[digest_of(blob)] = blob
        self.tags[tag] = digest_of(index_bytes)
        return digest_of(index_bytes), digest_of(manifest_bytes)

    def pad(self, digest: str, extra: int) -> None:
        """Serve the blob or manifest of digest with extra bytes after it (more than its descriptor says)."""
        self.tampered[digest] = self.blobs[digest] + b" " * extra

    def tamper(self, digest: str) -> None:
        """Serve the blob of digest with one byte changed (altered in transit)."""
        blob = bytearray(self.blobs[digest])
        blob[len(blob) // 2] ^= 0xFF
        self.tampered[digest] = bytes(blob)
