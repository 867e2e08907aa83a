"""Facts about the Python interpreters on the host: the stub's libpython and venv support."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase

# Minor versions looked for: every one a python backend stub exists for (pytriton 0.7.0: 3.8-3.13),
# and 3.14 so that the audit names it where it is the only one.
PROBED_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")

# Runs inside each interpreter; must stay valid Python 3.8. Prints one tab-separated line.
_PROBE = (
    "import sys,os,sysconfig,importlib.util as u;"
    "v='%d.%d'%sys.version_info[:2];so='libpython%s.so.1.0'%v;"
    "d=sysconfig.get_config_var('LIBDIR') or '';m=sysconfig.get_config_var('MULTIARCH') or '';"
    "c=[p for p in (os.path.join(d,so),os.path.join(d,m,so)) if os.path.exists(p)];"
    "venv=all(u.find_spec(n) for n in ('venv','ensurepip'));"
    "print('\\t'.join(['PY',v,sys.executable,sys.version.split()[0],c[0] if c else '',str(int(venv))]))"
)


class PythonInterpreter(TypedDict):
    version: str  # minor version, "3.11"
    path: str  # the interpreter, "/usr/bin/python3.11"
    full_version: str  # "3.11.2"
    libpython: str | None  # path of its shared libpython3.X.so.1.0, None where absent
    can_venv: bool  # `python -m venv` can make a venv with pip (venv and ensurepip importable)


class PythonInterpreters(FactBase[dict[str, PythonInterpreter]]):
    """Each python3.X (3.8 to 3.14) on PATH, keyed by minor version; {} where there is none."""

    def command(self) -> str:
        versions = " ".join(PROBED_VERSIONS)
        return (
            f"for v in {versions}; do p=$(command -v python$v 2>/dev/null) || continue; "
            f'"$p" -c "{_PROBE}" 2>/dev/null || printf \'BROKEN\\t%s\\t%s\\n\' "$v" "$p"; '
            "done; true"
        )

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
