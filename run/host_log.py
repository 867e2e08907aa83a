"""Show, in the run's normal output, lines a host script wrote to a file: what a start proved, what a
cache check removed. (pyinfra shows a command's own output only when it fails, or with -vvv.)"""

from __future__ import annotations

from pyinfra.api import FunctionCommand
from pyinfra.facts.files import FileContents

from remote._common import printable


def _show(state, host, path: str) -> bool:
    """Each line, its control characters escaped: the proof holds lines the server's user wrote."""
    for line in host.get_fact(FileContents, path=path) or []:
        host.log(printable(line))
    return True


def shown(path: str) -> FunctionCommand:
    """A command that logs each line of the host's file at path (nothing where it is absent or empty)."""
    return FunctionCommand(_show, (path,), {})
