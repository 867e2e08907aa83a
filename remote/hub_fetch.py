"""Download the files a model's task loads from the HuggingFace Hub into HF_HOME, and no others.

    VENV_PYTHON hub_fetch.py REPO REVISION MARKER_DIR

Only root-level files: the configuration and tokenizer files (*.json, *.txt, *.model) and one copy
of the weights: the safetensors files where the repository has them, else the PyTorch ones; never
the TensorFlow, Flax, ONNX, GGUF or other copies many repositories carry, nor subfolders. The commit
the revision resolved to and the files fetched are recorded in MARKER_DIR (JSON, written when the
download is complete), which the HubSnapshot fact reads. Runs with the venv's python (its
huggingface_hub; HF_HOME, HF_ENDPOINT and the token file come from the environment).
"""

import contextlib
import json
import os
import sys
import threading

from _common import marker_name
from _progress import Progress

CONFIG_SUFFIXES = (".json", ".txt", ".model")
OTHER_WEIGHTS = ("tf_model", "flax_model", "rust_model", "model.onnx", "coreml", "openvino")


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


def blob_bytes(folder):
    """Bytes in a repository's blob folder of the HF cache, partial downloads (.incomplete) too."""
    total = 0
    for entry in os.scandir(folder) if os.path.isdir(folder) else ():
        with contextlib.suppress(OSError):  # renamed meanwhile
            total += entry.stat(follow_symlinks=False).st_size
    return total


def watched(folder, progress, stop):
    """Progress lines while the download runs: the growth of the blob folder."""
    start = blob_bytes(folder)
    while not stop.wait(0.5):
        progress.update(max(blob_bytes(folder) - start, 0))
    progress.finished(max(blob_bytes(folder) - start, 0))


def main(repo, revision, marker_dir):
    from huggingface_hub import HfApi, constants, snapshot_download

    try:
        info = HfApi().model_info(repo, revision=revision, files_metadata=True)
        files = lean_files([s.rfilename for s in info.siblings or []])
        if not any(f.endswith((".safetensors", ".bin")) for f in files):
            print(f"hub: {repo}@{revision} has no safetensors or PyTorch weights at its top level", file=sys.stderr)
            return 3
        total = sum(s.size or 0 for s in info.siblings or [] if s.rfilename in files)
        blobs = os.path.join(constants.HF_HUB_CACHE, "models--" + repo.replace("/", "--"), "blobs")
        stop = threading.Event()
        watcher = threading.Thread(target=watched, args=(blobs, Progress(f"hub {repo}", total), stop), daemon=True)
        watcher.start()
        try:
            path = snapshot_download(repo, revision=revision, allow_patterns=files)
        finally:
            stop.set()
            watcher.join(timeout=5)
    except Exception as exc:  # every download error: say which model, and that a rerun resumes
        print(
            f"hub: download of {repo}@{revision} failed: {type(exc).__name__}: {exc}. Run again: a partial "
            "file resumes where it stopped.",
            file=sys.stderr,
        )
        return 1
    missing = [f for f in files if not os.path.isfile(os.path.join(path, f))]
    if missing:
        print(f"hub: {repo}@{revision}: {', '.join(missing)} missing after the download", file=sys.stderr)
        return 1
    commit = os.path.basename(path.rstrip("/"))
    size = sum(os.path.getsize(os.path.join(path, f)) for f in files)
    os.makedirs(marker_dir, exist_ok=True)
    dest = os.path.join(marker_dir, marker_name(repo, revision))
    with open(dest + ".tmp", "w") as f:
        json.dump({"repo": repo, "revision": revision, "commit": commit, "files": files, "path": path}, f)
    os.replace(dest + ".tmp", dest)
    skipped = len(info.siblings or []) - len(files)
    print(
        f"hub: {repo}@{revision} is commit {commit}: {len(files)} files, {size} bytes "
        f"({skipped} other files of the repository not fetched)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
