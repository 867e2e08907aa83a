"""Facts about a virtual environment: its Python and its exact packages, local versions included."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class VenvData(TypedDict):
    python: str  # "3.11.2"
    packages: dict[str, str]  # normalised name -> exact version


class VenvPackages(FactBase[VenvData | None]):
    """The venv's Python version and packages; None where the venv does not exist. Read from its files
    (pyvenv.cfg, each package's METADATA), never by running its interpreter: a package's .pth file would
    run as root."""

    def command(self, venv_dir: str) -> StringCommand:
        return shell("venv_packages.sh", venv_dir)

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
