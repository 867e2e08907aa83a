"""The real artifacts the e2e tests serve from the local mirror: the pytriton wheel, a Triton
tarball made from it, and this machine's CPU torch wheel. Cached outside the repository."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from compat.tables import PYTRITON_RELEASES
from tests.mirror import sha256_of
from tests.testbed import CACHE_DIR

PYTRITON = PYTRITON_RELEASES["0.7.0"]
TORCH_VERSION = "2.13.0"
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")


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
    return {
        "triton_pytriton_url": wheel_url,
        "pip_find_links": f"{mirror.url}/wheels/",
        "torch_index_url": "",
        "torch_version": TORCH_VERSION,
    }


def triton_tarball() -> Path:
    """A tarball in the container layout (tritonserver/bin, lib, backends ...), made from the wheel once."""
    out = CACHE_DIR / "artifacts" / f"tritonserver-{PYTRITON.triton}-from-pytriton-{PYTRITON.version}.tar"
    if out.exists():
        return out
    partial = out.with_suffix(".partial")
    with zipfile.ZipFile(pytriton_wheel()) as whl, tarfile.open(partial, "w") as tar:
        for info in whl.infolist():
            name = info.filename
            if name.startswith("pytriton/tritonserver/"):
                rel = name[len("pytriton/tritonserver/") :]
            elif name.startswith("nvidia_pytriton.libs/"):
                rel = "lib/" + name[len("nvidia_pytriton.libs/") :]
            else:
                continue
            if not rel or name.endswith("/"):
                continue
            member = tarfile.TarInfo(f"tritonserver/{rel}")
            member.size = info.file_size
            member.mode = 0o755 if rel.startswith(("bin/", "lib/", "python_backend_stubs/")) else 0o644
            with whl.open(info) as src:
                tar.addfile(member, src)
        version = f"{PYTRITON.triton}\n".encode()
        member = tarfile.TarInfo("tritonserver/TRITON_VERSION")
        member.size = len(version)
        import io

        tar.addfile(member, io.BytesIO(version))
    partial.rename(out)
    return out
