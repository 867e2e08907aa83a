"""The registry most private registries are built on, run for real: Debian's `docker-registry` (the CNCF
distribution registry 2.8) as a plain process on loopback, its storage a temporary folder, with htpasswd
(Basic) authentication where a user is given; images pushed into it by `skopeo` (Debian's, the client users
push with) from an OCI image layout written here. `scripts/setup.sh --test` installs the three
(docker-registry, skopeo, apache2-utils for htpasswd). What it answers is the registry's own: its 401
challenges, its media types, its digests."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from testbed.registry import CONFIG_TYPE, INDEX_TYPE, LAYER_GZIP_TYPE, MANIFEST_TYPE, descriptor, digest_of

TOOLS = ("docker-registry", "skopeo", "htpasswd")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Distribution:
    """A running distribution registry: `url`, `repository`; `push` an image; with `user` and `secret`, its
    API answers 401 `WWW-Authenticate: Basic realm=...` until they are given."""

    def __init__(self, repository: str = "nvidia/tritonserver", user: str = "", secret: str = "") -> None:
        missing = [tool for tool in TOOLS if not shutil.which(tool)]
        if missing:
            raise RuntimeError(f"{', '.join(missing)} missing: bash scripts/setup.sh --test installs them")
        self.repository, self.user, self.secret = repository, user, secret
        self.folder = Path(tempfile.mkdtemp(prefix="distribution-"))
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _config(self) -> Path:
        auth = ""
        if self.user:
            htpasswd = self.folder / "htpasswd"
            made = subprocess.run(  # bcrypt, the one scheme distribution takes; the secret on stdin
                ["htpasswd", "-iBn", self.user], input=self.secret, capture_output=True, text=True, check=True
            )
            htpasswd.write_text(made.stdout)
            auth = f"auth:\n  htpasswd:\n    realm: test-registry\n    path: {htpasswd}\n"
        config = self.folder / "config.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: error\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.folder / 'storage'}\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n{auth}"
        )
        return config

    def __enter__(self) -> Distribution:
        log = (self.folder / "registry.log").open("w")
        self.process = subprocess.Popen(["docker-registry", "serve", str(self._config())], stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/v2/", timeout=2).close()
                break
            except urllib.error.HTTPError:  # 401: up, and asking for its user
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    said = (self.folder / "registry.log").read_text()
                    raise RuntimeError(f"docker-registry did not start: {said}") from None
                time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)

    def push(self, tag: str, config: bytes, layers: list[bytes], arch: str = "amd64") -> tuple[str, str]:
        """An image of these gzipped layers, as an index with one linux/ARCH entry, written as an OCI image
        layout and pushed by skopeo (its digests kept); (the index's digest, the manifest's digest)."""
        layout = self.folder / f"layout-{tag}"
        blobs = layout / "blobs" / "sha256"
        blobs.mkdir(parents=True)
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_TYPE,
                "config": descriptor(CONFIG_TYPE, config),
                "layers": [descriptor(LAYER_GZIP_TYPE, layer) for layer in layers],
            }
        ).encode()
        platform = {"os": "linux", "architecture": arch}
        index = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": INDEX_TYPE,
                "manifests": [descriptor(MANIFEST_TYPE, manifest, platform=platform)],
            }
        ).encode()
        for blob in (config, *layers, manifest, index):
            (blobs / digest_of(blob).removeprefix("sha256:")).write_bytes(blob)
        (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
        top = descriptor(INDEX_TYPE, index, annotations={"org.opencontainers.image.ref.name": tag})
        (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [top]}))
        argv = ["skopeo", "copy", "--all", "--preserve-digests", "--dest-tls-verify=false"]
        if self.user:  # skopeo's auth file (0600), not a command line: where users keep their registry logins
            auth = self.folder / "auth.json"
            fd = os.open(auth, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            token = base64.b64encode(f"{self.user}:{self.secret}".encode()).decode()
            with os.fdopen(fd, "w") as f:
                json.dump({"auths": {f"127.0.0.1:{self.port}": {"auth": token}}}, f)
            argv += ["--dest-authfile", str(auth)]
        target = f"docker://127.0.0.1:{self.port}/{self.repository}:{tag}"
        subprocess.run([*argv, f"oci:{layout}:{tag}", target], capture_output=True, text=True, check=True, timeout=120)
        return digest_of(index), digest_of(manifest)
