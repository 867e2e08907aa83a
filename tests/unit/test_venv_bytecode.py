"""The venv's bytecode hook (tasks/venv/operations.py bytecode_hook): the command it writes, run on a real venv."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from pyinfra.api import StringCommand

from tasks.venv.operations import bytecode_hook
from tasks.venv.plan import VenvPlan

pytestmark = pytest.mark.unit


def test_the_hook_gives_a_python_that_ignores_the_environment_the_launchers_bytecode_folder(tmp_path: Path) -> None:
    """The stub's embedded interpreter reads no PYTHON* variable (as `python -E`): with the hook's .pth its
    site sets sys.pycache_prefix from PYTHONPYCACHEPREFIX all the same, and leaves it alone without one."""
    where = tmp_path / "venv"
    venv.create(where, with_pip=False)
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    plan = VenvPlan(venv_dir=str(where), python=sys.executable, python_minor=minor, requirements={})
    command = StringCommand(*bytecode_hook(plan)).get_raw_value()
    subprocess.run(["sh", "-c", command], check=True)
    ask = [str(where / "bin" / "python"), "-E", "-c", "import sys; print(sys.pycache_prefix)"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    folder = str(tmp_path / "bytecode")
    assert subprocess.run(ask, env={**env, "PYTHONPYCACHEPREFIX": folder}, capture_output=True, text=True).stdout == (
        f"{folder}\n"
    )
    assert subprocess.run(ask, env=env, capture_output=True, text=True).stdout == "None\n"
