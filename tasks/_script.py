"""Run one of tasks/scripts/*.py on the host with a given python3, its arguments quoted."""

from __future__ import annotations

from pathlib import Path

from pyinfra.api import QuoteString, StringCommand

SCRIPTS = Path(__file__).parent / "scripts"


def python_script(
    python: str, name: str, *args: str, via: str | None = None, env: dict[str, str] | None = None
) -> StringCommand:
    """`[env K=V] [VIA] PYTHON -c SOURCE ARGS...`: the script travels inside the command; nothing is
    pasted into it. via is a launcher that sets the environment first (python is then found on its PATH).
    """
    source = (SCRIPTS / name).read_text()
    prefix: list = ["env", *(QuoteString(f"{k}={v}") for k, v in (env or {}).items())] if env else []
    if via:
        prefix.append(QuoteString(via))
    return StringCommand(*prefix, QuoteString(python), "-c", QuoteString(source), *(QuoteString(a) for a in args))
