"""Run one of tasks/scripts/*.py on the host with a given python3, its arguments quoted."""

from __future__ import annotations

from pathlib import Path

from pyinfra.api import QuoteString, StringCommand

SCRIPTS = Path(__file__).parent / "scripts"


def python_script(python: str, name: str, *args: str) -> StringCommand:
    """`PYTHON -c SOURCE ARGS...`: the script travels inside the command; nothing is pasted into it."""
    source = (SCRIPTS / name).read_text()
    return StringCommand(QuoteString(python), "-c", QuoteString(source), *(QuoteString(a) for a in args))
