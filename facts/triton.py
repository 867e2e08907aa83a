"""Facts about an installed Triton server: where, which version, which backends and stubs."""

from __future__ import annotations

import re
from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell

# The libpython a python backend stub links, as its ELF dynamic section names it (grep -E):
# "libpython3.10.so.1.0", or pytriton's vendored "libpython3-419a3a08.13.so.1.0".
STUB_LIBPYTHON_RE = r"libpython3(\.[0-9]+|-[0-9a-f]+\.[0-9]+)\.so\.1\.0"


def stub_python_of(libpython: str) -> str | None:
    """ "libpython3.10.so.1.0" -> "3.10"; "libpython3-419a3a08.13.so.1.0" -> "3.13"."""
    m = re.fullmatch(r"libpython3(?:\.|-[0-9a-f]+\.)([0-9]+)\.so\.1\.0", libpython)
    return f"3.{m.group(1)}" if m else None


class TritonInstallData(TypedDict):
    home: str  # the home asked about (often a `current` link)
    real_home: str  # what it resolves to: the versioned install directory
    version: str | None  # from TRITON_VERSION, as in NVIDIA's containers
    server: bool  # bin/tritonserver is an executable file
    backends: list[str]  # directories under backends/
    python_stub: bool  # backends/python/triton_python_backend_stub exists
    stub_pythons: list[str]  # minor versions under python_backend_stubs/
    stub_libpython: str | None  # the libpython the active stub links, "libpython3.10.so.1.0"
    stub_python: str | None  # the Python minor version that libpython is, "3.10"
    manifest: dict[str, str]  # key=value lines this tool writes on install (source, sha256 ...)
    writable: str | None  # a file or directory of the install that group or others may write


class TritonInstall(FactBase[TritonInstallData | None]):
    """The Triton install at home; None where there is none."""

    def command(self, home: str) -> StringCommand:
        return shell("triton_install.sh", home, STUB_LIBPYTHON_RE)

    def process(self, output: list[str]) -> TritonInstallData | None:
        if not output:
            return None
        data = TritonInstallData(
            home="",
            real_home="",
            version=None,
            server=False,
            backends=[],
            python_stub=False,
            stub_pythons=[],
            stub_libpython=None,
            stub_python=None,
            manifest={},
            writable=None,
        )
        for line in output:
            key, _, value = line.partition("=")
            if key == "REAL":
                data["real_home"] = value
            elif line == "SERVER":
                data["server"] = True
            elif key == "VERSION" and value.strip():
                data["version"] = value.strip()
            elif key == "BACKEND":
                data["backends"].append(value)
            elif line.startswith("PYSTUB"):
                data["python_stub"] = True
                lib = line.partition(" STUBLIB=")[2].strip()
                data["stub_libpython"] = lib or None
                data["stub_python"] = stub_python_of(lib) if lib else None
            elif key == "WRITABLE" and value:
                data["writable"] = value
            elif key == "STUB":
                data["stub_pythons"].append(value)
            elif key == "MANIFEST":
                k, _, v = value.partition("=")
                data["manifest"][k] = v
        return data
