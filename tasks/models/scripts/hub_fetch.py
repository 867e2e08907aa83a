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

HUB_RELAY_DIR (a folder of root's): files the controller fetched once for a fleet, each named by its digest
(tasks/models/hub_relay.py). A file found there is copied instead of downloaded, and checked against the digest of
the hub's list this host read itself, like a download: a copy that is not what the list says is refused.

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
import shutil
import stat
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
from _hub_files import COMMIT, MODEL_FOLDER_BYTES, REPO, Refused, expected, lean_files, model_folder_files
from _progress import Progress


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
    checked_in(part, blob, kind, size, url, "altered or substituted in transit or on the mirror")


def checked_in(part, blob, kind, size, source, how):
    """part into the cache as blob once its digest is blob's name, else removed and Refused naming source."""
    digest = hasher(kind, size)
    with open(part, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != os.path.basename(blob):
        os.unlink(part)
        raise Refused(
            f"{source}: its {kind} is {digest.hexdigest()}, the hub's file list gives {os.path.basename(blob)} "
            f"({how}); removed"
        )
    os.replace(part, blob)


def relayed(relay, blob, kind, size):
    """The controller's copy of blob (relay/DIGEST, a plain file of that size) copied in and checked; False
    where there is none."""
    if not relay:
        return False
    src = os.path.join(relay, os.path.basename(blob))
    try:
        fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    part = blob + ".incomplete"
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return False
        if info.st_size != size:
            raise Refused(f"the controller's copy {src} holds {info.st_size} bytes, the hub's file list {size}")
        if os.path.lexists(part):
            os.unlink(part)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(part, flags, 0o644), "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
    checked_in(part, blob, kind, size, f"the controller's copy {src}", "not what this host's list of the hub says")
    return True


def link(target, path):
    """path is a symbolic link to target (replaced atomically); OSError where the file system takes none."""
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


def fetch(repo, revision, endpoint, token, cache, model=None, relay=""):
    """Fetch repo@revision's lean files (with model: its Triton model folder's files) into cache, each from
    relay where the controller put it there; returns (commit, snapshot, {file: "kind:digest"}, bytes,
    skipped, the model folder's prefix, bytes taken from relay)."""
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
    progress, done, from_relay = Progress(f"hub {repo}", total), 0, 0
    for name, (digest, kind, size) in sorted(wanted.items()):
        blob, dest = os.path.join(blobs, digest), os.path.join(snapshot, name)
        if os.path.isfile(dest) and not os.path.islink(dest) and os.path.getsize(dest) == size:
            done += size  # the file itself, where the cache's drive took no link (below)
            continue
        if not (os.path.isfile(blob) and not os.path.islink(blob) and os.path.getsize(blob) == size):
            if relayed(relay, blob, kind, size):
                from_relay += size
            else:
                url = f"{endpoint}/{repo}/resolve/{commit}/{urllib.parse.quote(name)}"
                download(url, token, blob, kind, size, progress, done)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        try:
            link(os.path.relpath(blob, os.path.dirname(dest)), dest)
        except OSError:  # a drive with no symbolic links (Google Drive: EOPNOTSUPP; others EPERM or EIO): the
            os.replace(blob, dest)  # file itself in the snapshot, as huggingface_hub keeps its cache there
        done += size
        progress.update(done)
    progress.finished(done)
    if revision != commit:
        ref = os.path.join(folder, "refs", revision)
        os.makedirs(os.path.dirname(ref), exist_ok=True)
        write_text(ref, commit)
    digests = {name: f"{kind}:{digest}" for name, (digest, kind, _) in wanted.items()}
    return commit, snapshot, digests, total, len(siblings) - len(files), prefix, from_relay


def main(repo, revision, marker_file, model=None):
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    home = os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface")
    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub")
    token = FD_TOKEN or os.environ.get("HF_TOKEN", "").strip()
    try:
        relay = os.environ.get("HUB_RELAY_DIR", "")
        commit, snapshot, digests, size, skipped, prefix, from_relay = fetch(
            repo, revision, endpoint, token, cache, model, relay
        )
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
    if marker_file == "-":  # root writes it, from what it checks (tasks/models/scripts/hub_record.py)
        print(json.dumps({**record, "digests": digests}))
    else:
        with open(marker_file, "w") as f:
            json.dump({**record, "digests": digests}, f)
    print(
        f"hub: {repo}@{revision} is commit {commit}: {len(digests)} files, {size} bytes, each checked against "
        f"the hub's digest ({skipped} other files of the repository not fetched"
        + (f"; {from_relay} bytes from the controller's copy" if relay else "")
        + ")",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
