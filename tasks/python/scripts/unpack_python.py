"""Unpack a verified standalone CPython archive into DEST and prove it works; runs on the host (3.8+).

    python3 unpack_python.py ARCHIVE DEST MINOR

ARCHIVE is a python-build-standalone `install_only` tar.gz: everything under `python/`, with
bin/python3.X and lib/libpython3.X.so.1.0. Builds DEST.tmp, refusing any member that would land
or point outside it, device files and set-id bits; checks that the interpreter starts and has
venv, ensurepip and ssl (pip needs them); then renames DEST.tmp to DEST. An interrupted or
refused run leaves no DEST.
"""

import os
import shutil
import subprocess
import sys
import tarfile

from _archive import UnsafeArchive, extract_tar, finish

TOP = "python"  # an install_only archive holds everything under python/


def main(archive: str, dest: str, minor: str) -> int:
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        extract_tar(archive, tmp, strip=1, top=TOP)
    except (UnsafeArchive, tarfile.TarError, OSError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"unpack python: {archive}: {exc}. Nothing was installed.", file=sys.stderr)
        return 5
    python = os.path.join(tmp, "bin", f"python{minor}")
    libpython = os.path.join(tmp, "lib", f"libpython{minor}.so.1.0")
    probe = "import venv, ensurepip, ssl, sys; print('%d.%d' % sys.version_info[:2])"
    missing = [p for p in (python, libpython) if not os.path.isfile(p)]
    res = None if missing else subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if missing or res.returncode != 0 or res.stdout.strip() != minor:
        shutil.rmtree(tmp, ignore_errors=True)
        why = (
            f"it has no {', '.join(os.path.relpath(p, tmp) for p in missing)}"
            if missing
            else (f"python{minor} -c '{probe}' gave: {(res.stderr or res.stdout).strip()[-300:]}")
        )
        print(
            f"unpack python: {archive} is not a working CPython {minor}: {why}. Nothing was installed.", file=sys.stderr
        )
        return 6
    finish(tmp, dest, {"archive": os.path.basename(archive), "python": minor})
    print(f"unpack python: CPython {minor} in {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
