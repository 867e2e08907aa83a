"""Facts about a virtual environment: its Python and its exact packages, local versions included."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from facts._shell import script_command

# importlib.metadata sees what pip installed, with local versions such as 2.5.1+cu124,
# which pyinfra's pip facts (a `pip freeze` regex) skip. Valid Python 3.8.
_PROBE = (
    "import sys,importlib.metadata as m;"
    "print('PY', '%d.%d.%d' % sys.version_info[:3]);"
    "[print('PKG', (d.metadata['Name'] or '').lower().replace('_','-'), d.version)"
    " for d in m.distributions()]"
)


class VenvData(TypedDict):
    python: str  # "3.11.2"
    packages: dict[str, str]  # normalised name -> exact version


class VenvPackages(FactBase[VenvData | None]):
    """The venv's Python version and packages; None where the venv does not exist."""

    def command(self, venv_dir: str) -> StringCommand:
        return script_command(
            '[ -x "$1/bin/python" ] || exit 0; "$1/bin/python" -c "$2" 2>/dev/null || echo BROKEN',
            venv_dir,
            _PROBE,
        )

    def process(self, output: list[str]) -> VenvData | None:
        if not output:
            return None
        data = VenvData(python="", packages={})
        for line in output:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "PY":
                data["python"] = parts[1]
            elif len(parts) == 3 and parts[0] == "PKG" and parts[1]:
                data["packages"][parts[1]] = parts[2]
        return data
