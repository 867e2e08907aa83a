"""The network settings (proxies, with any password they hold, and the hub's endpoint) reach the steps that
download through a root-only file that their shell reads, never through a command line.

pyinfra's `_env` exports variables inside the command it sends (`sudo sh -c 'export http_proxy=...'`),
which every local user reads in `ps` while the step runs. Instead the provisioner writes
/etc/triton-provisioner/network.env (root's, 0600) through a private upload, and the steps that download
run with a shell that reads it first where it can (`_shell_executable`: `sh -c '[ -r FILE ] && . FILE;
exec sh "$@"' sh -c COMMAND`). What `ps` shows is that file's name. Where the file is not there yet (a
fact read before the run writes it, a plan without -y) or not readable (a command the login user runs),
the shell runs without it.
"""

from __future__ import annotations

import hashlib
import shlex
from typing import TypedDict

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

from facts.digests import FileDigests
from tasks.downloads import private_upload

ENV_MODE = "600"


class NetworkArgs(TypedDict, total=False):
    """pyinfra's global argument that runs an operation (or a fact) in the network shell."""

    _shell_executable: str


def env_text(env: dict[str, str]) -> str:
    """The file's text: each variable exported, its value quoted for sh."""
    exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in sorted(env.items()))
    return f"# Written by triton-provisioner: the network settings of the steps that download. Root's only.\n{exports}"


def shell(path: str) -> str:
    """The shell that reads path first where it can (path is the layout's: no quote in it)."""
    if "'" in path or '"' in path:
        raise ValueError(f"network settings path {path!r} holds a quote")
    return f"sh -c '[ -r {path} ] && . {path}; exec sh \"$@\"' sh"


def shell_args(path: str, env: dict[str, str]) -> NetworkArgs:
    """The global arguments that run an operation with the network settings: none where there are none."""
    return NetworkArgs(_shell_executable=shell(path)) if env else NetworkArgs()


def env_sha256(env: dict[str, str]) -> str:
    """The sha256 of the file that holds env (as env_text writes it)."""
    return hashlib.sha256(env_text(env).encode()).hexdigest()


def fact_args(path: str, env: dict[str, str]) -> NetworkArgs | None:
    """The same for a fact read before the file is written: the shell where the file already holds exactly
    env, nothing where there are no settings, else None (the fact is not asked: it would go without them)."""
    if not env:
        return NetworkArgs()
    current = host.get_fact(FileDigests, [path]).get(path)
    return NetworkArgs(_shell_executable=shell(path)) if current and current["sha256"] == env_sha256(env) else None


@operation()
def env_written(path: str, env: dict[str, str]):
    """path holds the network settings env (root's, 0600), or is absent where env is empty."""
    current = host.get_fact(FileDigests, [path]).get(path)
    if not env:
        if current is None:
            host.noop("no network settings")
            return
        yield StringCommand("rm", "-f", QuoteString(path))
        return
    if current and current["mode"] == ENV_MODE and current["sha256"] == env_sha256(env):
        host.noop(f"{path} holds the network settings")
        return
    yield private_upload.put(path, private_upload.Secret(env_text(env)), ENV_MODE)  # never shown: passwords
