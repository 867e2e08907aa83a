"""A local stand-in for the HuggingFace Hub's HTTP API, enough for huggingface_hub's downloads
(hosts reach it through HF_ENDPOINT, the provisioner's hf_endpoint setting): a repository's info
(`GET /api/models/REPO/revision/REV`: its commit and files) and its files (`HEAD`/`GET
/REPO/resolve/REV/FILE`, with the commit and ETag headers the client reads, and Range requests for
resuming). Repositories are folders made by the test. A file can be cut once after N bytes (a dropped
transfer). Every request is logged, so a test can tell what was fetched and how.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote


@dataclass
class _Repo:
    root: Path
    commit: str
    branches: tuple[str, ...] = ("main",)


@dataclass
class Request:
    method: str
    repo: str
    file: str  # "" for the info endpoint
    range: str  # the Range header, "" without one
    status: int
    sent: int = 0
    authorization: str = ""  # the Authorization header, "" without one


@dataclass
class Hub:
    """The stand-in on 127.0.0.1; `add` a repository (a folder of files), then point hosts at `url`."""

    repos: dict[str, _Repo] = field(default_factory=dict)
    log: list[Request] = field(default_factory=list)
    cuts: dict[tuple[str, str], int] = field(default_factory=dict)  # (repo, file) -> bytes before the cut

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, hub=self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Hub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, repo: str, folder: Path) -> str:
        """Serve folder as repo (revision main and its commit); returns the commit, a hash of its files."""
        h = hashlib.sha1()
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes())
        self.repos[repo] = _Repo(folder, h.hexdigest())
        return self.repos[repo].commit

    def cut_once(self, repo: str, file: str, after: int) -> None:
        """The next full GET of this file closes the connection after `after` bytes."""
        self.cuts[(repo, file)] = after

    def fetched(self, repo: str) -> list[Request]:
        """The file GETs of repo that sent bytes."""
        return [r for r in self.log if r.repo == repo and r.method == "GET" and r.file and r.sent]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.log.append(request)


def _metadata(path: Path) -> dict:
    """What the hub's file list gives of a file with `blobs=true`: its size and git blob id, and for a
    large-file-storage file (weights) the sha256 and size of its content."""
    data = path.read_bytes()
    if path.suffix in (".safetensors", ".bin"):
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
        pointer += f"size {len(data)}\n"
        blob = hashlib.sha1(b"blob %d\0" % len(pointer) + pointer.encode()).hexdigest()
        lfs = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": len(pointer)}
        return {"size": len(data), "blobId": blob, "lfs": lfs}
    return {"size": len(data), "blobId": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, *args, hub: Hub, **kwargs):
        self.hub = hub
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):
        pass

    def _find(self) -> tuple[str, _Repo | None, str, str]:
        """(repo id, repo, revision, file) of the path; file "" for the info endpoint."""
        path = unquote(self.path.split("?", 1)[0])
        if path.startswith("/api/models/") and "/revision/" in path:
            repo, rev = path[len("/api/models/") :].split("/revision/", 1)
            return repo, self.hub.repos.get(repo), rev, ""
        parts = path.lstrip("/").split("/")
        if len(parts) >= 5 and parts[2] == "resolve":
            repo = "/".join(parts[:2])
            return repo, self.hub.repos.get(repo), parts[3], "/".join(parts[4:])
        return "", None, "", ""

    def _missing(self, repo_id: str, file: str) -> None:
        self.send_response(404)
        self.send_header("X-Error-Code", "EntryNotFound" if file else "RepoNotFound")
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.hub._record(Request(self.command, repo_id, file, "", 404))

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        repo_id, repo, rev, file = self._find()
        if repo is None or rev not in (*repo.branches, repo.commit):
            return self._missing(repo_id, file)
        if not file:
            names = sorted(str(p.relative_to(repo.root)) for p in repo.root.rglob("*") if p.is_file())
            blobs = "blobs=true" in self.path.split("?", 1)[-1].lower()  # files_metadata: the hub adds each size
            siblings = [{"rfilename": n, **(_metadata(repo.root / n) if blobs else {})} for n in names]
            data = json.dumps({"id": repo_id, "modelId": repo_id, "sha": repo.commit, "siblings": siblings}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            # recorded before the body is sent: a client that has its answer finds it in the log
            auth = self.headers.get("Authorization", "")
            self.hub._record(Request(self.command, repo_id, "", "", 200, len(data), auth))
            if body:
                self.wfile.write(data)
            return None
        path = repo.root / file
        if not path.is_file() or ".." in file.split("/"):
            return self._missing(repo_id, file)
        data = path.read_bytes()
        start, wanted = 0, self.headers.get("Range", "")
        if wanted.startswith("bytes=") and wanted[6:].split("-")[0].isdigit():
            start = int(wanted[6:].split("-")[0])
        self.send_response(206 if start else 200)
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data) - start))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        cut = self.hub.cuts.pop((repo_id, file), None) if body and not start else None
        chunk = (data[start:] if cut is None else data[start : start + cut]) if body else b""
        # recorded before the body is sent: a client that has its answer finds it in the log (a test that
        # asserted right after its fetch once found the second file's GET not yet recorded)
        self.hub._record(Request(self.command, repo_id, file, wanted, 206 if start else 200, len(chunk)))
        if body:
            self.wfile.write(chunk)
            if cut is not None:
                self.wfile.flush()
                self.close_connection = True
        return None
