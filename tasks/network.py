"""The network settings (proxies, with any password they hold, and the hub's endpoint) reach the steps that
download through a root-only shell that exports them, never through a command line.

pyinfra's `_env` exports variables inside the command it sends (`sudo sh -c 'export http_proxy=...'`),
which every local user reads in `ps` while the step runs. Instead the provisioner writes
/etc/triton-provisioner/network-shell (root's, 0700: it exports the variables, then runs /bin/sh) through a
private upload, and the steps that download run with it as their shell (`_shell_executable`).
"""

from __future__ import annotations

import hashlib
import shlex
from typing import TypedDict

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

from facts.digests import FileDigests
from tasks import private_upload

SHELL_MODE = "700"


class NetworkArgs(TypedDict, total=False):
    """pyinfra's global argument that runs an operation (or a fact) in the network shell."""

    _shell_executable: str


def script(env: dict[str, str]) -> str:
    """The shell's text: the variables exported, then /bin/sh with the arguments it was given."""
    exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in sorted(env.items()))
    return (
        "#!/bin/sh\n# Written by triton-provisioner (network settings for the steps that download); root's only.\n"
        f'{exports}exec /bin/sh "$@"\n'
    )


def shell_args(path: str, env: dict[str, str]) -> NetworkArgs:
    """The global arguments that run an operation with the network settings: none where there are none."""
    return NetworkArgs(_shell_executable=path) if env else NetworkArgs()


def fact_args(path: str, env: dict[str, str]) -> NetworkArgs | None:
    """The same for a fact read before the shell is written: the shell where it already holds exactly env,
    nothing where there are no settings, else None (the fact is not asked: its command would carry them)."""
    if not env:
        return NetworkArgs()
    current = host.get_fact(FileDigests, [path]).get(path)
    wanted = hashlib.sha256(script(env).encode()).hexdigest()
    return NetworkArgs(_shell_executable=path) if current and current["sha256"] == wanted else None


@operation()
def shell_written(path: str, env: dict[str, str]):
    """path is the network shell for env (root's, 0700), or absent where env is empty."""
    current = host.get_fact(FileDigests, [path]).get(path)
    if not env:
        if current is None:
            host.noop("no network settings: no network shell")
            return
        yield StringCommand("rm", "-f", QuoteString(path))
        return
    text = script(env).encode()
    if current and current["mode"] == SHELL_MODE and current["sha256"] == hashlib.sha256(text).hexdigest():
        host.noop(f"{path} exports the network settings")
        return
    yield private_upload.put(path, private_upload.Secret(text.decode()), SHELL_MODE)  # never shown: passwords
