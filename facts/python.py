"""Facts about the Python interpreters on the host: the stub's libpython and venv support."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell, source

# Minor versions looked for: every one a python backend stub exists for (pytriton 0.7.0: 3.8-3.13),
# and 3.14 so that the audit names it where it is the only one.
PROBED_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")


class PythonInterpreter(TypedDict):
    version: str  # minor version, "3.11"
    path: str  # the interpreter, "/usr/bin/python3.11"
    full_version: str  # "3.11.2"
    libpython: str | None  # path of its shared libpython3.X.so.1.0, None where absent
    can_venv: bool  # `python -m venv` can make a venv with pip (venv and ensurepip importable)


class PythonInterpreters(FactBase[dict[str, PythonInterpreter]]):
    """Each python3.X (3.8 to 3.14) on PATH, keyed by minor version; {} where there is none."""

    def command(self) -> StringCommand:
        return shell("pythons.sh", source("python_probe.py"), *PROBED_VERSIONS)

    @staticmethod
    def default() -> dict[str, PythonInterpreter]:
        return {}

    def process(self, output: list[str]) -> dict[str, PythonInterpreter]:
        found: dict[str, PythonInterpreter] = {}
        for line in output:
            parts = line.split("\t")
            if parts[0] == "PY" and len(parts) == 6:
                _, version, path, full, libpython, venv = parts
                found[version] = PythonInterpreter(
                    version=version,
                    path=path,
                    full_version=full,
                    libpython=libpython or None,
                    can_venv=venv == "1",
                )
        return found
