"""The code is ruff clean (lint and format), as the developers' guide asks."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]


def test_ruff_check_and_format() -> None:
    for args in (["check", "."], ["format", "--check", "."]):
        res = subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
