"""The real artifacts the e2e tests serve from the local mirror: the pytriton wheel, a Triton
tarball made from it, and this machine's CPU torch wheel. Cached outside the repository."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

from planner.tables import PYTRITON_RELEASES
from remote._archive import wheel_layout_name
from testbed.config import CACHE_DIR, cache_built
from testbed.mirror import sha256_of

PYTRITON = PYTRITON_RELEASES["0.7.0"]
TORCH_VERSION = "2.13.0"
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")


@cache_built
def pytriton_wheel() -> Path:
    """nvidia-pytriton 0.7.0 from PyPI (55 MB, once), verified against the table's sha256."""
    dest_dir = CACHE_DIR / "artifacts"
    wheel = dest_dir / PYTRITON.url.rsplit("/", 1)[1]
    if not wheel.exists():
        dest_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-q",
                "-d",
                str(dest_dir),
                f"nvidia-pytriton=={PYTRITON.version}",
            ],
            check=True,
        )
    if sha256_of(wheel) != PYTRITON.sha256:
        wheel.unlink()
        raise RuntimeError(f"{wheel} does not match the published sha256; removed, run again")
    return wheel


def mirror_settings(mirror) -> dict:
    """Place the pytriton wheel and the torch wheel on the mirror; the settings that use them."""
    wheel = pytriton_wheel()
    wheel_url, _ = mirror.place(wheel, "pytriton/" + wheel.name)
    (mirror.root / "wheels").mkdir(exist_ok=True)
    link = mirror.root / "wheels" / TORCH_WHEEL.name
    if not link.exists():
        link.symlink_to(TORCH_WHEEL)
    pypi = {"pip_index_url": f"{mirror.url}/pypi/simple/"} if mirror.pypi else {}  # PyPI, cached per machine
    return pypi | {
        "triton_pytriton_url": wheel_url,
        "pip_find_links": f"{mirror.url}/wheels/",
        "torch_index_url": "",
        "torch_version": TORCH_VERSION,
        "lock_trust_on_first_use": "torch",  # the mirror's find-links publishes no digest for it
        # the tests' venv locks, kept with the mirror (never in the source tree)
        "venv_lock_dir": str(mirror.root.parent / "venv-locks"),
        # and the downloads a fleet's hosts take through the controller: one cache per test worker, none in $HOME
        "controller_cache_dir": str(mirror.root.parent / "controller-cache"),
    }


@cache_built
def triton_tarball() -> Path:
    """A tarball in the container layout (tritonserver/bin, lib, backends ...), made from the wheel once."""
    out = CACHE_DIR / "artifacts" / f"tritonserver-{PYTRITON.triton}-from-pytriton-{PYTRITON.version}.tar"
    if out.exists():
        return out
    partial = out.with_suffix(".partial")
    with zipfile.ZipFile(pytriton_wheel()) as whl, tarfile.open(partial, "w") as tar:
        for info in whl.infolist():
            rel = wheel_layout_name(info.filename)  # as the installer lays the wheel out
            if rel is None:
                continue
            member = tarfile.TarInfo(f"tritonserver/{rel}")
            member.size = info.file_size
            member.mode = 0o755 if rel.startswith(("bin/", "lib/", "python_backend_stubs/")) else 0o644
            with whl.open(info) as src:
                tar.addfile(member, src)
        version = f"{PYTRITON.triton}\n".encode()
        member = tarfile.TarInfo("tritonserver/TRITON_VERSION")
        member.size = len(version)
        tar.addfile(member, io.BytesIO(version))
    partial.rename(out)
    return out


@cache_built
def _derived_tarball(out: Path, edit, extra: dict[str, bytes] | None = None) -> Path:
    """`out`, made once from triton_tarball(): each member passed through edit(member), which returns
    it (renamed if need be) or None to leave it out; then the extra files (name -> bytes)."""
    if out.exists():
        return out
    partial = out.with_suffix(f".{os.getpid()}.partial")  # two workers may make it at once: the same bytes
    with tarfile.open(triton_tarball()) as src, tarfile.open(partial, "w") as tar:
        for member in src.getmembers():
            data = src.extractfile(member) if member.isfile() else None
            kept = edit(member)
            if kept is not None:
                tar.addfile(kept, data)
        for name, content in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    partial.rename(out)
    return out


def triton_tarball_one_stub(python: str) -> Path:
    """A tarball like a container copy built for one Python: only the stub of `python`, at
    backends/python/, and no python_backend_stubs/ to choose another from."""
    stub = f"tritonserver/python_backend_stubs/{python}/triton_python_backend_stub"

    def edit(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if member.name == stub:
            member.name = "tritonserver/backends/python/triton_python_backend_stub"
        elif member.name.startswith("tritonserver/python_backend_stubs/"):
            return None
        return member

    return _derived_tarball(CACHE_DIR / "artifacts" / f"tritonserver-{PYTRITON.triton}-stub-{python}-only.tar", edit)


def triton_tarball_variant(name: str, drop: str = "", note: str = "") -> Path:
    """The tarball again as another build: with one member left out (drop: a name prefix under
    tritonserver/, e.g. a library the server needs) and a NOTES file (note), so its sha256 differs."""
    return _derived_tarball(
        CACHE_DIR / "artifacts" / f"tritonserver-{PYTRITON.triton}-{name}.tar",
        lambda m: None if drop and m.name.startswith(f"tritonserver/{drop}") else m,
        {"tritonserver/NOTES": (note or name).encode() + b"\n"},
    )


@cache_built
def standalone_python() -> tuple[Path, str]:
    """A stand-in for a python-build-standalone `install_only` archive, made from this controller's
    own CPython (built --enable-shared): `python/` with bin/python3.X (RUNPATH $ORIGIN/../lib, as the
    real builds have), lib/libpython3.X.so.1.0 and the standard library, no site-packages. Returns
    the archive and its full version. No python-build-standalone release is reachable from here."""
    version = ".".join(str(n) for n in sys.version_info[:3])
    minor = ".".join(str(n) for n in sys.version_info[:2])
    out = CACHE_DIR / "artifacts" / f"cpython-{version}-standin-x86_64-linux-install_only.tar.gz"
    if out.exists():
        return out, version
    prefix = Path(sys.base_prefix)
    libpython = Path(sysconfig.get_config_var("LIBDIR") or "") / f"libpython{minor}.so.1.0"
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not libpython.exists():
        raise RuntimeError(f"{prefix} has no shared libpython: a standalone stand-in needs a --enable-shared CPython")
    if not shutil.which("patchelf"):
        raise RuntimeError("patchelf is missing: bash scripts/setup.sh --test installs it")
    work = out.with_suffix(".work")
    shutil.rmtree(work, ignore_errors=True)
    top = work / "python"
    (top / "bin").mkdir(parents=True)
    (top / "lib").mkdir()
    exe = top / "bin" / f"python{minor}"
    shutil.copy2(prefix / "bin" / f"python{minor}", exe)
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(exe)], check=True)
    os.symlink(f"python{minor}", top / "bin" / "python3")
    shutil.copy2(libpython, top / "lib" / libpython.name)
    os.symlink(libpython.name, top / "lib" / f"libpython{minor}.so")
    skip = shutil.ignore_patterns("site-packages", "test", "__pycache__", "idlelib", "tkinter", "turtledemo")
    shutil.copytree(prefix / "lib" / f"python{minor}", top / "lib" / f"python{minor}", ignore=skip, symlinks=True)
    (top / "lib" / f"python{minor}" / "site-packages").mkdir()
    partial = out.with_suffix(".partial")
    with tarfile.open(partial, "w:gz", compresslevel=6) as tar:
        tar.add(top, arcname="python")
    partial.rename(out)
    shutil.rmtree(work)
    return out, version


@cache_built
def uv_wheel() -> Path:
    """The pinned uv wheel for this machine from PyPI (once), verified against the table's sha256."""
    from planner.tables import UV_VERSION, UV_WHEELS

    url, sha = UV_WHEELS["x86_64"]
    dest_dir = CACHE_DIR / "artifacts"
    wheel = dest_dir / url.rsplit("/", 1)[1]
    if not wheel.exists():
        dest_dir.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q"]
        subprocess.run([*pip, "-d", str(dest_dir), f"uv=={UV_VERSION}"], check=True)
    if sha256_of(wheel) != sha:
        wheel.unlink()
        raise RuntimeError(f"{wheel} does not match the published sha256; removed, run again")
    return wheel


@cache_built
def uv_downloads_list(mirror) -> tuple[str, str]:
    """A downloads list in uv's format (python-build-standalone's download-metadata.json) naming the
    standalone stand-in on the mirror with its sha256, placed on the mirror; returns its URL and the
    stand-in's full version. uv installs from it through its real code path."""
    import json

    archive, version = standalone_python()
    url, sha = mirror.place(archive, "python/" + archive.name)
    major, minor, patch = (int(n) for n in version.split("."))
    entry = {
        "name": "cpython",
        "arch": {"family": "x86_64", "variant": None},
        "os": "linux",
        "libc": "gnu",
        "major": major,
        "minor": minor,
        "patch": patch,
        "prerelease": "",
        "url": url,
        "sha256": sha,
        "variant": None,
        "build": "standin",
    }
    listing = CACHE_DIR / "artifacts" / "uv-downloads.json"
    listing.write_text(json.dumps({f"cpython-{version}-linux-x86_64-gnu": entry}, indent=1))
    list_url, _ = mirror.place(listing, "python/downloads.json")
    return list_url, version


IDENTITY_SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "backends" / "identity.c"
IDENTITY_HELPER_SOURCE = IDENTITY_SOURCE.with_name("identity_helper.c")


@cache_built
def identity_backend() -> tuple[bytes, bytes]:
    """A Triton backend of the tests' own (tests/fixtures/backends/identity.c: INPUT0 sent back as OUTPUT0)
    and the library it links (identity_helper.c, soname libidentity_helper.so.1), built with gcc once per
    source: a backend other than python, served from the image, that needs a library only the image has."""
    key = sha256_of(IDENTITY_SOURCE)[:8] + sha256_of(IDENTITY_HELPER_SOURCE)[:8]
    out = CACHE_DIR / "artifacts" / f"libtriton_identity-{key}"
    backend, helper = out / "libtriton_identity.so", out / "libidentity_helper.so.1.0.0"
    if not backend.exists():
        part = out.with_suffix(".part")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir(parents=True)
        built = part / helper.name
        gcc = ["gcc", "-shared", "-fPIC", "-O2", "-Wall"]
        soname = "-Wl,-soname,libidentity_helper.so.1"
        subprocess.run([*gcc, soname, "-o", str(built), str(IDENTITY_HELPER_SOURCE)], check=True)
        subprocess.run([*gcc, "-o", str(part / backend.name), str(IDENTITY_SOURCE), str(built)], check=True)
        shutil.rmtree(out, ignore_errors=True)
        part.rename(out)
    return backend.read_bytes(), helper.read_bytes()


def triton_image_layers() -> list[bytes]:
    """An NGC-like image of the pytriton build's Triton, as gzipped layers: the server's tree under
    /opt/tritonserver with a file the next layer whites out, and files outside it (a library, /etc) that
    must not be unpacked, a backend no model uses and one of the tests' own (identity, a C backend); then its
    python backend and the whiteout; then an
    opaque folder that hides a lower layer's stray backend. Made once per session (the same bytes: gzip with
    no time in it)."""
    keep = ("tritonserver/backends/python/",)
    backend, helper = identity_backend()
    base, python = io.BytesIO(), io.BytesIO()
    with (
        tarfile.open(triton_tarball()) as src,
        tarfile.open(fileobj=base, mode="w") as low,
        tarfile.open(fileobj=python, mode="w") as high,
    ):
        for member in src.getmembers():
            data = src.extractfile(member) if member.isfile() else None
            member.name = "opt/" + member.name
            (high if member.name.startswith(tuple("opt/" + k for k in keep)) else low).addfile(member, data)
        extra = {
            "opt/tritonserver/NOTES.decoy": b"whited out by the next layer",
            "opt/tritonserver/backends/stray/libtriton_stray.so": b"hidden by an opaque folder above it",
            "opt/tritonserver/backends/onnxruntime/libtriton_onnxruntime.so": b"a backend no model uses",
            "opt/tritonserver/backends/identity/libtriton_identity.so": backend,
            # the library identity links, carried into the install: reached through a folder's link, as CUDA's
            "usr/local/helper-1.0/lib/libidentity_helper.so.1.0.0": helper,
            "usr/lib/x86_64-linux-gnu/libdecoy.so.1": b"outside /opt/tritonserver, linked by nothing",
            "etc/motd": b"outside /opt/tritonserver",
        }
        for name, content in extra.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), 0o755
            low.addfile(info, io.BytesIO(content))
        for name, target in (
            ("usr/local/helper", "helper-1.0"),
            ("usr/lib/x86_64-linux-gnu/libidentity_helper.so.1", "../../local/helper/lib/libidentity_helper.so.1.0.0"),
        ):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            low.addfile(info)
        whiteout = tarfile.TarInfo("opt/tritonserver/.wh.NOTES.decoy")
        high.addfile(whiteout, io.BytesIO(b""))
    opaque = io.BytesIO()
    with tarfile.open(fileobj=opaque, mode="w") as top:
        top.addfile(tarfile.TarInfo("opt/tritonserver/backends/stray/.wh..wh..opq"), io.BytesIO(b""))
    return [gzip.compress(layer.getvalue(), compresslevel=1, mtime=0) for layer in (base, python, opaque)]


def gzip_layer(files: dict[str, bytes]) -> bytes:
    """An image layer of these files (name -> bytes), gzipped with no time in it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return gzip.compress(out.getvalue(), mtime=0)
