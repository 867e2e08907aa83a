"""ImageConfig's probe: what the image pinned to DIGEST says of itself (its config's labels and
environment), from the host's cache of pulled blobs alone, each checked against its digest; offline.

    python3 image_config.py CACHE DIGEST [MACHINE]

Prints CONFIG=JSON, or ABSENT=why where the cache lacks the image's index, manifest or config (or holds
other bytes, or an image this host cannot use: the pull says why). Runs on the host (3.8+); exits 0.
"""

import json
import sys

from _oci import ImageRefused, cached_config, host_arch


def main(cache, digest, machine=""):
    try:
        summary = cached_config(cache, digest, host_arch(machine))
    except (ImageRefused, OSError, ValueError) as exc:
        print(f"ABSENT={exc}")
        return 0
    print(f"CONFIG={json.dumps(summary, sort_keys=True)}" if summary is not None else "ABSENT=not pulled")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
