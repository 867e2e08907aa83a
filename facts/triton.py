"""Facts about an installed Triton server: where, which version, which backends and stubs."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from facts._shell import script_command


class TritonInstallData(TypedDict):
    home: str  # the home asked about (often a `current` link)
    real_home: str  # what it resolves to: the versioned install directory
    version: str | None  # from TRITON_VERSION, as in NVIDIA's containers
    server: bool  # bin/tritonserver is an executable file
    backends: list[str]  # directories under backends/
    python_stub: bool  # backends/python/triton_python_backend_stub exists
    stub_pythons: list[str]  # minor versions under python_backend_stubs/
    manifest: dict[str, str]  # key=value lines this tool writes on install (source, sha256 ...)


class TritonInstall(FactBase[TritonInstallData | None]):
    """The Triton install at home; None where there is none."""

    def command(self, home: str) -> StringCommand:
        return script_command(
            'h="$1"; [ -d "$h" ] || exit 0; echo "REAL=$(readlink -f "$h")";'
            ' [ -x "$h/bin/tritonserver" ] && echo SERVER;'
            ' [ -f "$h/TRITON_VERSION" ] && echo "VERSION=$(head -n 1 "$h/TRITON_VERSION")";'
            ' for b in "$h"/backends/*/; do [ -d "$b" ] && echo "BACKEND=$(basename "$b")"; done;'
            ' [ -f "$h/backends/python/triton_python_backend_stub" ] && echo PYSTUB;'
            ' for s in "$h"/python_backend_stubs/*/triton_python_backend_stub; do'
            ' [ -f "$s" ] && echo "STUB=$(basename "$(dirname "$s")")"; done;'
            ' [ -f "$h/.provisioner" ] && sed "s/^/MANIFEST=/" "$h/.provisioner"; true',
            home,
        )

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
            manifest={},
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
            elif line == "PYSTUB":
                data["python_stub"] = True
            elif key == "STUB":
                data["stub_pythons"].append(value)
            elif key == "MANIFEST":
                k, _, v = value.partition("=")
                data["manifest"][k] = v
        return data
