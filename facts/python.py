"""Facts about the Python interpreters on the host: the stub's libpython, venv support, and whether
the server's user can run each one."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell, source

# Minor versions looked for: every one a python backend stub exists for (pytriton 0.7.0: 3.8-3.13),
# and 3.14 so that the audit names it where it is the only one.
PROBED_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")


class PythonInterpreter(TypedDict):
    version: str  # minor version, "3.11"
    path: str  # the interpreter, links resolved: "/usr/bin/python3.11" (what a venv is made from)
    found_at: str  # where it was found: "/usr/local/bin/python3.11", a pyenv shim's target ...
    full_version: str  # "3.11.2"
    libpython: str | None  # path of its shared libpython3.X.so.1.0, None where absent
    can_venv: bool  # `python -m venv` can make a venv with pip (venv and ensurepip importable)
    blocked_by: str  # what keeps the server's user from running it (a directory it cannot enter); "" = nothing


class PythonInterpreters(FactBase[list[PythonInterpreter]]):
    """Every python3.X (3.8 to 3.14) in PATH's directories, /usr/local/bin and /usr/bin, once per real
    interpreter, in that order; with whether `user` (the server's) can run it, checked as that user
    (as nobody where it does not exist yet). [] where there is none."""

    def command(self, user: str) -> StringCommand:
        return shell("python_interpreters.sh", source("python_interpreter.py"), user, *PROBED_VERSIONS)

    @staticmethod
    def default() -> list[PythonInterpreter]:
        return []

    def process(self, output: list[str]) -> list[PythonInterpreter]:
        found: list[PythonInterpreter] = []
        for line in output:
            parts = line.split("\t")
            if parts[0] == "PY" and len(parts) in (7, 8):  # an empty last field may arrive stripped
                _, version, found_at, full, libpython, venv, real, blocked_by = [*parts, ""][:8]
                found.append(
                    PythonInterpreter(
                        version=version,
                        path=real,
                        found_at=found_at,
                        full_version=full,
                        libpython=libpython or None,
                        can_venv=venv == "1",
                        blocked_by=blocked_by,
                    )
                )
        return found
