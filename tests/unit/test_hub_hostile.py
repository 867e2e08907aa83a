"""The hub fetch (tasks/models/scripts/hub_fetch.py) against a hub, or a mirror standing in, that lies: run over HTTP on
loopback, into a temporary cache. Whatever it sends, nothing lands outside the cache, nothing unverified
enters it, and the token never goes to another host."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

import remote
from testbed.hub import Hub

hub_fetch = remote.load("hub_fetch.py")
pytestmark = pytest.mark.unit

REPO = "org/clf"
COMMIT = "c" * 40
TOKEN = "hf_unitTOKEN42"
FILES = {"config.json": b'{"model_type": "bert"}', "model.safetensors": b"\x01weights" * 1000}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def honest_siblings(files: dict[str, bytes]) -> list[dict]:
    """The hub's file list with blobs=true: a git blob id each, and sha256 and size for the weights."""
    out = []
    for name, data in files.items():
        entry: dict = {"rfilename": name, "size": len(data), "blobId": git_blob(data)}
        if name.endswith(".safetensors"):
            entry["lfs"] = {"sha256": sha256(data), "size": len(data), "pointerSize": 130}
        out.append(entry)
    return out


@dataclass
class Liar:
    """A hub on loopback that answers from what the test sets: the info JSON, each file's bytes and
    headers, a redirect for a file; every request is recorded with its Authorization header."""

    info: dict = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    seen: list[tuple[str, str]] = field(default_factory=list)  # (path, Authorization)

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_LiarHandler, liar=self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _LiarHandler(BaseHTTPRequestHandler):
    def __init__(self, *args, liar: Liar, **kwargs):
        self.liar = liar
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):
        pass

    def do_HEAD(self) -> None:
        self.do_GET(body=False)

    def do_GET(self, body: bool = True) -> None:
        path = unquote(self.path.split("?", 1)[0])
        self.liar.seen.append((path, self.headers.get("Authorization", "")))
        if path.startswith("/api/models/"):
            data = json.dumps(self.liar.info).encode()
        elif path in self.liar.redirects:
            self.send_response(302)
            self.send_header("Location", self.liar.redirects[path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        elif path.rsplit("/", 1)[-1] in self.liar.files:
            data = self.liar.files[path.rsplit("/", 1)[-1]]
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        # what huggingface_hub reads from a file's HEAD: the commit and the ETag (the hub's: the digest)
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{sha256(data)}"', **self.liar.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)


@pytest.fixture
def liar() -> Iterator[Liar]:
    made = Liar(info={"id": REPO, "sha": COMMIT, "siblings": honest_siblings(FILES)}, files=dict(FILES))
    yield made
    made.close()


def run(tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch, revision: str = "main") -> int:
    """hub_fetch.py's main as the host runs it (its environment), into tmp_path/home."""
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return hub_fetch.main(REPO, revision, str(tmp_path / "marker.json"))


def tree(root: Path) -> set[str]:
    """Every path under root (links not followed), relative."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_an_honest_hub_fills_the_cache_as_huggingface_hub_reads_it(tmp_path, monkeypatch) -> None:
    with Hub() as hub:
        (tmp_path / "repo").mkdir()
        for name, data in FILES.items():
            (tmp_path / "repo" / name).write_bytes(data)
        (tmp_path / "repo" / "tf_model.h5").write_bytes(b"not fetched")
        commit = hub.add(REPO, tmp_path / "repo")
        assert run(tmp_path, hub.url, monkeypatch) == 0
    folder = tmp_path / "home/hub/models--org--clf"
    assert (folder / "refs/main").read_text() == commit
    snapshot = folder / "snapshots" / commit
    assert sorted(p.name for p in snapshot.iterdir()) == ["config.json", "model.safetensors"]
    for name, data in FILES.items():
        assert (snapshot / name).is_symlink() and (snapshot / name).read_bytes() == data
    marker = json.loads((tmp_path / "marker.json").read_text())
    assert marker["commit"] == commit and marker["path"] == str(snapshot)
    assert marker["digests"] == {
        "config.json": f"git-blob-sha1:{git_blob(FILES['config.json'])}",
        "model.safetensors": f"sha256:{sha256(FILES['model.safetensors'])}",
    }
    # huggingface_hub itself finds it offline, as the served model's loader asks for it
    from huggingface_hub import snapshot_download

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    found = snapshot_download(REPO, revision="main", local_files_only=True, cache_dir=str(tmp_path / "home/hub"))
    assert Path(found) == snapshot


def test_on_a_drive_that_takes_no_links_the_snapshot_holds_the_files_and_a_second_fetch_takes_nothing(
    tmp_path, monkeypatch
) -> None:
    """Google Drive refuses a symbolic link (EOPNOTSUPP; other drives EPERM or EIO): the snapshot then holds the
    files themselves, as huggingface_hub keeps its cache there, which it reads offline; a second fetch has them."""
    import errno

    def refused(*args, **kwargs):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(hub_fetch.os, "symlink", refused)
    with Hub() as hub:
        (tmp_path / "repo").mkdir()
        for name, data in FILES.items():
            (tmp_path / "repo" / name).write_bytes(data)
        commit = hub.add(REPO, tmp_path / "repo")
        assert run(tmp_path, hub.url, monkeypatch) == 0
        assert len(hub.fetched(REPO)) == len(FILES)
        assert run(tmp_path, hub.url, monkeypatch) == 0
        assert len(hub.fetched(REPO)) == len(FILES)  # nothing downloaded again
    snapshot = tmp_path / "home/hub/models--org--clf/snapshots" / commit
    for name, data in FILES.items():
        assert not (snapshot / name).is_symlink() and (snapshot / name).read_bytes() == data
    from huggingface_hub import snapshot_download

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    found = snapshot_download(REPO, revision="main", local_files_only=True, cache_dir=str(tmp_path / "home/hub"))
    assert Path(found) == snapshot


def test_a_dotdot_etag_writes_nothing_outside_the_cache(tmp_path, liar, monkeypatch) -> None:
    """huggingface_hub named the blob after the ETag header: `../` there wrote outside the cache."""
    liar.headers["ETag"] = '"../../../../outside"'
    liar.headers["X-Linked-Etag"] = '"../../../../outside"'
    assert run(tmp_path, liar.url, monkeypatch) == 0
    assert {p for p in tree(tmp_path) if not p.startswith("home/")} == {"home", "marker.json"}
    assert not (tmp_path / "outside").exists()


@pytest.mark.parametrize(
    "lie",
    [
        {"sha": "../../../../escaped"},  # the commit names a folder
        {"sha": COMMIT, "siblings": [{"rfilename": "model.safetensors", "size": 8, "lfs": {"sha256": "../../x"}}]},
        {"sha": COMMIT, "siblings": [{"rfilename": "model.safetensors", "size": 8}]},  # no digest at all
        {"sha": COMMIT, "siblings": [{"rfilename": "config.json", "size": 2, "blobId": "../../../cfg"}]},
    ],
    ids=["commit", "lfs-sha256", "no-digest", "blob-id"],
)
def test_a_name_that_is_not_a_digest_is_refused_before_any_download(tmp_path, liar, monkeypatch, lie) -> None:
    liar.info = {"id": REPO, **lie, "siblings": lie.get("siblings", honest_siblings(FILES))}
    if lie.get("sha") == COMMIT and lie["siblings"][0]["rfilename"] == "config.json":
        liar.info["siblings"] = lie["siblings"] + honest_siblings({"model.safetensors": FILES["model.safetensors"]})
    assert run(tmp_path, liar.url, monkeypatch) == 3
    assert not any(p.startswith("/org/clf/resolve") for p, _ in liar.seen)  # nothing was fetched
    assert not (tmp_path / "marker.json").exists()
    assert "escaped" not in " ".join(tree(tmp_path)) and not (tmp_path / "x").exists()


def test_file_names_that_climb_are_never_fetched(tmp_path, liar, monkeypatch) -> None:
    liar.info["siblings"] = [
        *honest_siblings(FILES),
        *({**s, "rfilename": f"../../{s['rfilename']}"} for s in honest_siblings({"evil.json": b"{}"})),
        *({**s, "rfilename": f"..\\{s['rfilename']}"} for s in honest_siblings({"evil2.json": b"{}"})),
    ]
    liar.files["evil.json"] = liar.files["evil2.json"] = b"{}"
    assert run(tmp_path, liar.url, monkeypatch) == 0
    assert not any("evil" in p for p, _ in liar.seen)
    assert not any("evil" in p for p in tree(tmp_path))


@pytest.mark.parametrize("change", ["altered", "longer", "shorter"])
def test_a_file_that_is_not_what_the_list_says_never_enters_the_cache(tmp_path, liar, monkeypatch, change) -> None:
    weights = FILES["model.safetensors"]
    liar.files["model.safetensors"] = {
        "altered": b"\x02" + weights[1:],
        "longer": weights + b"more",
        "shorter": weights[:-10],
    }[change]
    assert run(tmp_path, liar.url, monkeypatch) == (1 if change == "shorter" else 3)
    folder = tmp_path / "home/hub/models--org--clf"
    assert not (folder / "blobs" / sha256(weights)).exists()
    assert not (folder / "snapshots" / COMMIT / "model.safetensors").exists()
    assert not (tmp_path / "marker.json").exists()


def test_a_partial_file_resumes_and_is_then_verified(tmp_path, liar, monkeypatch) -> None:
    weights = FILES["model.safetensors"]
    blobs = tmp_path / "home/hub/models--org--clf/blobs"
    blobs.mkdir(parents=True)
    (blobs / f"{sha256(weights)}.incomplete").write_bytes(weights[:100])
    assert run(tmp_path, liar.url, monkeypatch) == 0  # the liar ignores Range: the whole file again
    assert (blobs / sha256(weights)).read_bytes() == weights


def test_the_token_goes_to_the_hub_only_never_after_a_redirect_elsewhere(tmp_path, liar, monkeypatch) -> None:
    elsewhere = Liar(files={"model.safetensors": FILES["model.safetensors"]})
    try:
        liar.redirects[f"/{REPO}/resolve/{COMMIT}/model.safetensors"] = f"{elsewhere.url}/cdn/model.safetensors"
        assert run(tmp_path, liar.url, monkeypatch) == 0
        assert elsewhere.seen == [("/cdn/model.safetensors", "")]
        assert {auth for _, auth in liar.seen} == {f"Bearer {TOKEN}"}
    finally:
        elsewhere.close()


def test_a_revision_that_climbs_is_refused(tmp_path, liar, monkeypatch) -> None:
    assert run(tmp_path, liar.url, monkeypatch, revision="../../../../etc") == 3
    assert liar.seen == []


@pytest.mark.parametrize("copy", ["honest", "altered", "shorter"])
def test_the_controllers_copy_is_taken_only_where_this_hosts_list_of_the_hub_agrees(
    tmp_path, liar, monkeypatch, copy
) -> None:
    """HUB_RELAY_DIR (tasks/models/hub_relay.py): a file the controller fetched once for the fleet, named by its digest,
    is copied instead of downloaded; it is checked against the digest of the hub's list this host read, so an
    altered or cut copy never enters the cache (the run fails naming it), and the hub sends no file either way."""
    relay = tmp_path / "relay"
    relay.mkdir()
    weights = FILES["model.safetensors"]
    data = {"honest": weights, "altered": b"\x02" + weights[1:], "shorter": weights[:-1]}[copy]
    (relay / sha256(weights)).write_bytes(data)
    monkeypatch.setenv("HUB_RELAY_DIR", str(relay))
    code = run(tmp_path, liar.url, monkeypatch)
    downloaded = {p.rsplit("/", 1)[-1] for p, _ in liar.seen if "/resolve/" in p}
    blob = tmp_path / "home/hub/models--org--clf/blobs" / sha256(weights)
    if copy == "honest":
        assert code == 0 and blob.read_bytes() == weights
        assert downloaded == {"config.json"}  # the weights came from the controller's copy
    else:
        assert code == 3 and not blob.exists() and not (tmp_path / "marker.json").exists()
        assert "model.safetensors" not in downloaded
        assert not list(blob.parent.glob("*.incomplete"))
