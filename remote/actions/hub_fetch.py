"""Download the files a model's task loads from the HuggingFace Hub into the HF cache, verified, and no others.

    python3 hub_fetch.py REPO REVISION MARKER_FILE [MODEL_NAME]     (MARKER_FILE "-": the record on stdout)

Only root-level files: the configuration and tokenizer files (*.json, *.txt, *.model) and one copy
of the weights: the safetensors files where the repository has them, else the PyTorch ones; never
the TensorFlow, Flax, ONNX, GGUF or other copies many repositories carry, nor subfolders.
With MODEL_NAME: the repository holds a Triton model folder (config.pbtxt, version folders), at its
top or as the folder MODEL_NAME/; every file of that folder is fetched (the controller runs this for a
`triton:hub:` model, then checks the folder before any host changes).

Nothing the hub (or a mirror standing in for it) sends is trusted as a path: the commit must be 40
hex digits, a file name one plain name, and each file's cache name is its digest from the hub's file
list (the sha256 of a large-file-storage file, the git blob id of the others), both checked as hex.
Every file is checked against that digest (and its size) before it enters the cache, so a truncated,
altered or substituted file never does. The layout is huggingface_hub's (blobs/, snapshots/COMMIT/,
refs/REVISION), which the served models load offline. The commit, the files and their digests go to
MARKER_FILE (JSON), read by the HubSnapshot fact. A partial file resumes on the next run.

Runs as the server's user (the cache is that user's; root never writes in it), with the host's
python3 (3.8+) and no huggingface_hub: HF_HOME (or HF_HUB_CACHE), HF_ENDPOINT and HF_TOKEN come from
the environment; the token is sent to the hub's own host only, never after a redirect to another.
On a host the secrets never are in its environment (another process of the server's user, a model's
code, reads /proc/PID/environ): root opens the token file and the network settings (root's, 0600) as
the file descriptors HUB_SECRET_FDS names ("3 4"), and this script makes itself undumpable (its /proc
files root's, no ptrace by that user) before it reads them, then closes them.
"""

# ruff: noqa: E402 (the secrets are read before _http builds its opener)
import hashlib
import http.client
import json
import os
import re
import sys
import urllib.parse


def _secrets_from_fds():
    """The token, and the network settings (`export NAME='value'` lines) put into os.environ, read from
    the descriptors root opened (HUB_SECRET_FDS: "TOKEN_FD NETWORK_FD"); "" and nothing where none."""
    fds = os.environ.pop("HUB_SECRET_FDS", "").split()
    if not fds:
        return ""
    import ctypes
    import shlex

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0: no /proc reads, no ptrace
        raise SystemExit("hub: cannot make this process undumpable: its secrets are not read")
    texts = []
    for fd in fds:
        with os.fdopen(int(fd), "r") as f:
            texts.append(f.read())
    for line in texts[1].splitlines() if len(texts) > 1 else []:
        words = shlex.split(line, comments=True)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, value = words[1].split("=", 1)
            os.environ[name] = value
    return texts[0].strip()


FD_TOKEN = _secrets_from_fds()  # before _http builds its opener: it reads the proxies from os.environ

from _http import OPENER, masked, request
from _progress import Progress

CONFIG_SUFFIXES = (".json", ".txt", ".model")
OTHER_WEIGHTS = ("tf_model", "flax_model", "rust_model", "model.onnx", "coreml", "openvino")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+ -]*$")  # one name: no "/", no leading dot, no "\"
MODEL_FOLDER_BYTES = 2 << 30  # a Triton model folder is carried in the model repository: no larger
MODEL_FOLDER_DEPTH = 8


class Refused(Exception):
    """What the hub sent cannot be used (a name, a digest, a size): nothing of it entered the cache."""


def lean_files(names):
    """The files to fetch of a repository's file names: root-level config and tokenizer files, and
    the safetensors weights, else the PyTorch weights."""
    root = [n for n in names if "/" not in n and not n.startswith(".")]
    safetensors = [n for n in root if n.endswith(".safetensors")]
    weights = safetensors or [n for n in root if n.startswith("pytorch_model") and n.endswith(".bin")]
    kind = ".safetensors" if safetensors else ".bin"
    config = [
        n
        for n in root
        if n.endswith(CONFIG_SUFFIXES)
        and not n.startswith(OTHER_WEIGHTS)
        # a weights index goes with its weights only
        and not (n.endswith(".index.json") and not n.endswith(f"{kind}.index.json"))
    ]
    return sorted(set(config + weights))


def hidden(name):
    """A file the hub lists that no model loads: .gitattributes, a folder of dotfiles (not "." or "..":
    those are refused)."""
    return any(part.startswith(".") and part not in (".", "..") for part in name.split("/"))


def model_folder_files(names, model):
    """(the folder's prefix in the repository, its files) of a repository holding a Triton model folder:
    the whole repository where config.pbtxt or a version folder is at its top, else the folder named as
    the model. A name that is not plain parts (no "..", no "\\", no empty part) is refused, not skipped."""
    names = [n for n in names if not hidden(n)]
    for name in names:
        parts = name.split("/")
        if len(parts) > MODEL_FOLDER_DEPTH or not all(PLAIN_NAME.match(p) for p in parts):
            raise Refused(f"the hub names a file {name!r}, which is not a path of plain names")
    top = any(n == "config.pbtxt" or (n.split("/", 1)[0].isdigit() and "/" in n) for n in names)
    prefix = "" if top else f"{model}/"
    files = [n for n in names if n.startswith(prefix)]
    if not files:
        raise Refused(
            f"it holds no Triton model folder: neither config.pbtxt (or a version folder) at its top nor a "
            f"folder {model}/"
        )
    return prefix, sorted(files)


def expected(sibling, folder=False):
    """(cache name, digest kind, size) of one file of the hub's list, or Refused naming what is wrong.
    folder: a path of plain names (already checked) rather than one name."""
    name = sibling.get("rfilename", "")
    if not folder and (not PLAIN_NAME.match(name) or name in (".", "..")):
        raise Refused(f"the hub names a file {name!r}, which is not a plain file name")
    lfs = sibling.get("lfs") or {}
    size = lfs.get("size", sibling.get("size"))
    if not isinstance(size, int) or size < 0:
        raise Refused(f"the hub gives no size for {name}")
    if lfs:
        digest = str(lfs.get("sha256", "")).lower()
        if not SHA256.match(digest):
            raise Refused(f"the hub gives {name} a sha256 that is not 64 hex digits: {digest[:80]!r}")
        return digest, "sha256", size
    blob = str(sibling.get("blobId", "")).lower()
    if not COMMIT.match(blob):
        raise Refused(f"the hub gives {name} no digest to check it by (blobId {blob[:80]!r})")
    return blob, "git-blob-sha1", size


def hasher(kind, size):
    """A hash of the kind the hub gives: sha256 of the bytes, or git's blob id (sha1 of a header and them)."""
    if kind == "sha256":
        return hashlib.sha256()
    h = hashlib.sha1()
    h.update(b"blob %d\0" % size)
    return h


def api_get(endpoint, path, token):
    """The JSON at endpoint + path."""
    with OPENER.open(authorized(endpoint + path, token), timeout=60) as resp:
        return json.loads(resp.read(50 << 20))


def authorized(url, token):
    """A request for url with the token as a Bearer header (the URL's own user and password win)."""
    req = request(url)
    if token and not req.has_header("Authorization"):
        req.add_header("Authorization", f"Bearer {token}")
    return req


def download(url, token, blob, kind, size, progress, done_before):
    """The file at url into blob (verified against its digest and size), resuming BLOB.incomplete."""
    part = blob + ".incomplete"
    try:
        have = os.lstat(part).st_size if os.path.isfile(part) and not os.path.islink(part) else 0
    except OSError:
        have = 0
    if have > size or (os.path.lexists(part) and not have):
        os.unlink(part)
        have = 0
    req = authorized(url, token)
    if have:
        req.add_header("Range", f"bytes={have}-")
    with OPENER.open(req, timeout=60) as resp:
        if have and resp.status != 206:
            have = 0  # the server sent the whole file
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if have else os.O_TRUNC)
        with os.fdopen(os.open(part, flags, 0o644), "ab" if have else "wb") as out:
            got = have
            while True:
                chunk = resp.read(1 << 20)
                if not chunk:
                    break
                if got + len(chunk) > size:
                    raise Refused(f"{url} sent more than the {size} bytes the hub's file list gives")
                out.write(chunk)
                got += len(chunk)
                progress.update(done_before + got, os.path.basename(url))
    if got != size:
        raise http.client.IncompleteRead(b"", size - got)
    digest = hasher(kind, size)
    with open(part, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != os.path.basename(blob):
        os.unlink(part)
        raise Refused(
            f"{url}: its {kind} is {digest.hexdigest()}, the hub's file list gives {os.path.basename(blob)} "
            "(altered or substituted in transit or on the mirror); removed"
        )
    os.replace(part, blob)


def link(target, path):
    """path is a symbolic link to target (replaced atomically)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, path)


def write_text(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def fetch(repo, revision, endpoint, token, cache, model=None):
    """Fetch repo@revision's lean files (with model: its Triton model folder's files) into cache; returns
    (commit, snapshot, {file: "kind:digest"}, bytes, skipped, the model folder's prefix)."""
    if not REPO.match(repo) or ".." in repo.split("/"):
        raise Refused(f"{repo!r} is not a repository id (org/name)")
    if not revision or revision.startswith("/") or ".." in revision.split("/") or "\\" in revision:
        raise Refused(f"{revision!r} is not a revision (a branch, tag or commit without '..')")
    quoted = urllib.parse.quote(revision, safe="")
    info = api_get(endpoint, f"/api/models/{repo}/revision/{quoted}?blobs=true", token)
    commit = str(info.get("sha", "")).lower()
    if not COMMIT.match(commit):
        raise Refused(f"the hub gives {repo}@{revision} a commit that is not 40 hex digits: {commit[:80]!r}")
    siblings = [s for s in info.get("siblings") or [] if isinstance(s, dict)]
    names = [str(s.get("rfilename", "")) for s in siblings]
    prefix = ""
    if model:
        prefix, files = model_folder_files(names, model)
    else:
        files = lean_files(names)
        if not any(f.endswith((".safetensors", ".bin")) for f in files):
            raise Refused(f"{repo}@{revision} has no safetensors or PyTorch weights at its top level")
    wanted = {f: expected(s, folder=bool(model)) for s in siblings for f in files if s.get("rfilename") == f}
    folder = os.path.join(cache, "models--" + repo.replace("/", "--"))
    blobs, snapshot = os.path.join(folder, "blobs"), os.path.join(folder, "snapshots", commit)
    os.makedirs(blobs, exist_ok=True)
    os.makedirs(snapshot, exist_ok=True)
    total = sum(size for _, _, size in wanted.values())
    if model and total > MODEL_FOLDER_BYTES:
        raise Refused(
            f"its model folder holds {total >> 20} MiB: more than {MODEL_FOLDER_BYTES >> 20} MiB is not carried"
        )
    progress, done = Progress(f"hub {repo}", total), 0
    for name, (digest, kind, size) in sorted(wanted.items()):
        blob = os.path.join(blobs, digest)
        if not (os.path.isfile(blob) and not os.path.islink(blob) and os.path.getsize(blob) == size):
            url = f"{endpoint}/{repo}/resolve/{commit}/{urllib.parse.quote(name)}"
            download(url, token, blob, kind, size, progress, done)
        dest = os.path.join(snapshot, name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        link(os.path.relpath(blob, os.path.dirname(dest)), dest)
        done += size
        progress.update(done)
    progress.finished(done)
    if revision != commit:
        ref = os.path.join(folder, "refs", revision)
        os.makedirs(os.path.dirname(ref), exist_ok=True)
        write_text(ref, commit)
    digests = {name: f"{kind}:{digest}" for name, (digest, kind, _) in wanted.items()}
    return commit, snapshot, digests, total, len(siblings) - len(files), prefix


def main(repo, revision, marker_file, model=None):
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    home = os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface")
    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub")
    token = FD_TOKEN or os.environ.get("HF_TOKEN", "").strip()
    try:
        commit, snapshot, digests, size, skipped, prefix = fetch(repo, revision, endpoint, token, cache, model)
    except Refused as exc:
        print(
            f"hub: {repo}@{revision} refused: {masked(str(exc))}. Nothing unverified entered the cache.",
            file=sys.stderr,
        )
        return 3
    except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut short
        print(
            f"hub: download of {repo}@{revision} failed (from {masked(endpoint)}): {type(exc).__name__}: "
            f"{masked(str(exc))}. Run again: a partial file resumes where it stopped.",
            file=sys.stderr,
        )
        return 1
    record = {"repo": repo, "revision": revision, "commit": commit, "files": sorted(digests), "path": snapshot}
    if model:
        record["folder"] = os.path.join(snapshot, prefix)
    if marker_file == "-":  # root writes it, from what it checks (remote/actions/hub_record.py)
        print(json.dumps({**record, "digests": digests}))
    else:
        with open(marker_file, "w") as f:
            json.dump({**record, "digests": digests}, f)
    print(
        f"hub: {repo}@{revision} is commit {commit}: {len(digests)} files, {size} bytes, each checked against "
        f"the hub's digest ({skipped} other files of the repository not fetched)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
