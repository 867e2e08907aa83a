"""Unpack a verified Triton artifact into a complete install directory; runs on the host (3.8+).

    python3 unpack_triton.py pytriton|tarball ARCHIVE DEST STUB_PYTHON SHA256 STRIP VERSION

Builds DEST.tmp with bin/ lib/ backends/ caches/ python_backend_stubs/, puts the stub of
STUB_PYTHON at backends/python/triton_python_backend_stub, writes TRITON_VERSION and the
.provisioner manifest, then renames DEST.tmp to DEST: an interrupted run leaves no DEST.
"""

import os
import shutil
import sys
import tarfile
import zipfile

LAYOUT = ("bin", "lib", "backends", "caches", "python_backend_stubs")


def unpack_pytriton(archive: str, tmp: str) -> None:
    """The wheel's pytriton/tritonserver/* and nvidia_pytriton.libs/* (as lib/)."""
    with zipfile.ZipFile(archive) as whl:
        for info in whl.infolist():
            name = info.filename
            if name.startswith("pytriton/tritonserver/"):
                rel = name[len("pytriton/tritonserver/") :]
            elif name.startswith("nvidia_pytriton.libs/"):
                rel = "lib/" + name[len("nvidia_pytriton.libs/") :]
            else:
                continue
            if not rel or rel.endswith("/"):
                continue
            target = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with whl.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(target, mode or 0o644)
    # the server's RPATH is $ORIGIN/../lib; make every ELF file readable and executable
    for sub in ("bin", "lib"):
        for entry in os.listdir(os.path.join(tmp, sub)):
            os.chmod(os.path.join(tmp, sub, entry), 0o755)
    for root, _, files in os.walk(os.path.join(tmp, "python_backend_stubs")):
        for f in files:
            os.chmod(os.path.join(root, f), 0o755)


def unpack_tarball(archive: str, tmp: str, strip: int) -> str:
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = member.name
            while name.startswith("./"):
                name = name[2:]
            parts = name.lstrip("/").split("/")[strip:]
            unsafe = ".." in parts or ((member.issym() or member.islnk()) and member.linkname.startswith("/"))
            if not parts or parts == [""] or unsafe:
                continue
            member.name = "/".join(parts)
            tar.extract(member, tmp, set_attrs=True)
    path = os.path.join(tmp, "TRITON_VERSION")
    return open(path).read().strip() if os.path.exists(path) else ""


def main(source: str, archive: str, dest: str, stub_python: str, sha256: str, strip: str, version: str) -> int:
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    if source == "pytriton":
        unpack_pytriton(archive, tmp)  # the wheel carries no TRITON_VERSION: the table names it
    else:
        version = unpack_tarball(archive, tmp, int(strip)) or version
    if not os.path.isfile(os.path.join(tmp, "bin", "tritonserver")):
        shutil.rmtree(tmp)
        print(f"unpack: {archive} has no bin/tritonserver (check triton_tarball_strip_components)", file=sys.stderr)
        return 5
    stub_dst = os.path.join(tmp, "backends", "python", "triton_python_backend_stub")
    stub_src = os.path.join(tmp, "python_backend_stubs", stub_python, "triton_python_backend_stub")
    if os.path.isfile(stub_src):
        shutil.copy2(stub_src, stub_dst)
    elif not os.path.isfile(stub_dst):
        shutil.rmtree(tmp)
        print(f"unpack: {archive} has no python backend stub for Python {stub_python}", file=sys.stderr)
        return 6
    if version:
        with open(os.path.join(tmp, "TRITON_VERSION"), "w") as f:
            f.write(version + "\n")
    with open(os.path.join(tmp, ".provisioner"), "w") as f:
        f.write(f"source={source}\nsha256={sha256}\nstub_python={stub_python}\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    print(f"unpack: Triton {version or '(version unknown)'} in {dest}, stub for Python {stub_python}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:8]))
