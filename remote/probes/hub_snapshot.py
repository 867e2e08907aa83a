"""HubSnapshot's probe: the snapshot folder of REPO@REVISION that hub_fetch.py completed, offline.

    python3 hub_snapshot.py MARKER_DIR REPO REVISION

Prints SNAPSHOT=PATH where hub_fetch.py's marker names a commit whose every file is still in the
cache, else ABSENT=why. Runs on the host (3.8+), without huggingface_hub.
"""

import json
import os
import sys

from _common import marker_name


def main(marker_dir, repo, revision):
    try:
        with open(os.path.join(marker_dir, marker_name(repo, revision))) as f:
            marker = json.load(f)
    except (OSError, ValueError):
        print("ABSENT=not fetched")
        return 0
    path = marker.get("path", "")
    missing = [f for f in marker.get("files", []) if not os.path.isfile(os.path.join(path, f))]
    print(f"ABSENT=missing {missing[0]}" if missing or not path else f"SNAPSHOT={path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
