"""Root writes the hub fetch's record (the marker the HubSnapshot fact reads) from what it checked, never
adopting a file the server's user opened (that user could keep it open and rewrite it after root took it
over). hub_fetch.py, run as that user, prints its record on stdout; root's shell writes that into PART,
root's own file in root's marker folder; this checks it and writes MARKER (aside, then renamed, 0644).

    python3 hub_record.py CACHE REPO REVISION PART MARKER

The record must name REPO@REVISION, a 40-hex commit, the snapshot folder of that commit in CACHE (the
layout hub_fetch.py writes), files of plain relative names each with a digest, and a model folder (for a
`triton:hub:` model) inside the snapshot. Else it is refused (exit 1, nothing written). Runs on the host
(3.8+).
"""

import json
import os
import re
import sys

COMMIT = re.compile(r"^[0-9a-f]{40}$")
DIGEST = re.compile(r"^(sha256:[0-9a-f]{64}|git-blob-sha1:[0-9a-f]{40})$")


def plain(name):
    """A relative path of plain names: no empty, '.', '..' part, no backslash."""
    parts = name.split("/")
    return bool(name) and "\\" not in name and all(p not in ("", ".", "..") for p in parts)


def problem(record, cache, repo, revision):
    """What is wrong with the record, or None."""
    if not isinstance(record, dict):
        return "it is not a JSON object"
    if record.get("repo") != repo or record.get("revision") != revision:
        return f"it names {record.get('repo')!r}@{record.get('revision')!r}, not {repo}@{revision}"
    commit = record.get("commit")
    if not isinstance(commit, str) or not COMMIT.match(commit):
        return "its commit is not 40 hex digits"
    snapshot = os.path.join(cache, "models--" + repo.replace("/", "--"), "snapshots", commit)
    if record.get("path") != snapshot:
        return f"its path is {record.get('path')!r}, not the snapshot folder {snapshot}"
    files, digests = record.get("files"), record.get("digests")
    if not isinstance(files, list) or not all(isinstance(f, str) and plain(f) for f in files):
        return "its files are not plain relative names"
    if not isinstance(digests, dict) or sorted(digests) != sorted(files):
        return "its digests do not name exactly its files"
    if not all(isinstance(d, str) and DIGEST.match(d) for d in digests.values()):
        return "a digest is not sha256:HEX or git-blob-sha1:HEX"
    folder = record.get("folder")
    if folder is not None and not (
        isinstance(folder, str)
        and (
            folder.rstrip("/") == snapshot
            or (folder.startswith(snapshot + "/") and plain(folder[len(snapshot) + 1 :].rstrip("/")))
        )
    ):
        return f"its model folder {folder!r} is not inside the snapshot folder"
    return None


def main(cache, repo, revision, part, marker):
    try:
        with open(part) as f:
            record = json.load(f)
    except (OSError, ValueError) as exc:
        record, why = None, f"it cannot be read as JSON ({type(exc).__name__})"
    else:
        why = problem(record, cache, repo, revision)
    os.unlink(part)
    if why:
        print(f"hub: the record of {repo}@{revision} is refused: {why}. Nothing was recorded.", file=sys.stderr)
        return 1
    keep = {k: record[k] for k in ("repo", "revision", "commit", "files", "path", "digests")}
    if "folder" in record:
        keep["folder"] = record["folder"]
    with open(marker + ".part", "w") as f:
        json.dump(keep, f)
    os.chmod(marker + ".part", 0o644)
    os.replace(marker + ".part", marker)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
