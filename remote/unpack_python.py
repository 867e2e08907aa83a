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

TOP = "python/"


def _inside(root: str, path: str) -> bool:
    root = os.path.realpath(root)
    return os.path.commonpath([root, os.path.realpath(path)]) == root


def _checked_members(tar: tarfile.TarFile, tmp: str) -> list:
    """Every member renamed without its `python/` top, or an error naming the first hostile one."""
    members = []
    for m in tar.getmembers():
        name = m.name[2:] if m.name.startswith("./") else m.name
        if name.rstrip("/") + "/" == TOP:
            continue
        if not name.startswith(TOP):
            raise ValueError(f"{m.name!r} is outside {TOP}: not a python-build-standalone install_only archive")
        rel = name[len(TOP) :]
        target = os.path.join(tmp, rel)
        if os.path.isabs(rel) or ".." in rel.split("/") or not _inside(tmp, target):
            raise ValueError(f"{m.name!r} would be written outside the install directory")
        if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
            raise ValueError(f"{m.name!r} is a device, fifo or other special file")
        if m.issym():
            link = os.path.join(os.path.dirname(target), m.linkname)
            if os.path.isabs(m.linkname) or not _inside(tmp, link):
                raise ValueError(f"{m.name!r} links to {m.linkname!r}, outside the install directory")
        if m.islnk():
            linkname = m.linkname[2:] if m.linkname.startswith("./") else m.linkname
            if not linkname.startswith(TOP) or not _inside(tmp, os.path.join(tmp, linkname[len(TOP) :])):
                raise ValueError(f"{m.name!r} hard-links to {m.linkname!r}, outside the install directory")
            m.linkname = linkname[len(TOP) :]
        m.name = rel
        m.mode &= 0o777  # no setuid, setgid or sticky bits
        m.uid = m.gid = 0
        m.uname = m.gname = "root"
        members.append(m)
    return members


def main(archive: str, dest: str, minor: str) -> int:
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        with tarfile.open(archive) as tar:
            members = _checked_members(tar, tmp)
            for m in members:  # links are extracted after the checks, in archive order
                tar.extract(m, tmp, set_attrs=True)
    except (ValueError, tarfile.TarError, OSError) as exc:
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
    with open(os.path.join(tmp, ".provisioner"), "w") as f:
        f.write(f"archive={os.path.basename(archive)}\npython={minor}\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    print(f"unpack python: CPython {minor} in {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
