"""Which files of a hub repository a fetch takes and the digest each must have: rules only, no I/O
(inlined into tasks/models/scripts/hub_fetch.py). Nothing the hub sends is trusted as a path or a digest."""

import re

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
