"""Uploads that no other local user can read or swap: a secret (the HuggingFace token), and every file
root writes from the controller (rendered files, locks, uploaded wheels and models); and the reverse, a
small file of root's read back to the controller (a lock, a digest) without a copy in /tmp.

pyinfra's `files.put` under sudo stages an upload at a predictable /tmp name (/tmp/pyinfra-<sha1>) as the
login user, mode 0644, then root copies it into place: a local user who made that name first (0666)
can read it, or swap its content before root's copy (a launcher root then runs). Here the bytes
travel by SFTP (never on a command line) into a fresh `mktemp -d` directory (0700, the login user's),
and root copies them into place (tasks/downloads/scripts/staged_install.py: never through a link another user
controls, staged in a root-only directory, unreadable by others from the first byte), gives the file its
mode through its own descriptor and renames it over the old one; the staging directory is removed
whatever happens.
"""

from __future__ import annotations

import hashlib
import re
from io import BytesIO, StringIO
from pathlib import Path

from pyinfra import host
from pyinfra.api import FunctionCommand, QuoteString, StringCommand, operation

import remote
from config import state_seal
from facts.digests import FileDigests

# What `mktemp -d` prints: a directory whose last part is tmp.XXXXXXXXXX (anything else: refused).
_MKTEMP_DIR = re.compile(r"^/[A-Za-z0-9_./-]*/tmp\.[A-Za-z0-9]{6,}$")


class Secret(str):
    """A string that never shows itself in a repr, a log line or a traceback's arguments."""

    def __repr__(self) -> str:
        return "<secret>"


class _PrivateUpload(FunctionCommand):
    """Runs _put_private with the operation's connector arguments (sudo or not), which plain
    FunctionCommands do not pass on."""

    def execute(self, state, host, connector_arguments):
        return _put_private(host, *self.args, connector_arguments=connector_arguments)

    def __repr__(self) -> str:
        return f"PrivateUpload({self.args[0]}, mode {self.args[2]})"


def _put_private(
    host, dest: str, src: Secret | bytes | str, mode: str, connector_arguments: dict, sha256: str = ""
) -> bool:
    """src (a secret, bytes, or a file on the controller) to dest with mode, through a private directory;
    with sha256, placed only where the host's own check of what it received agrees."""
    # no network here: the plain shell (the network shell of a downloading step is root's alone, 0700)
    connector_arguments = {**connector_arguments, "_shell_executable": "sh"}
    as_user = {**connector_arguments, "_sudo": False, "_su_user": None, "_doas": False, "_dzdo": False}
    ok, out = host.run_shell_command(StringCommand("mktemp", "-d"), **as_user)
    stage_dir = out.stdout.strip() if ok else ""
    if not _MKTEMP_DIR.match(stage_dir):
        host.log(f"could not make a private staging directory (mktemp -d gave {stage_dir!r})")
        return False
    try:
        staged = f"{stage_dir}/file"
        data = StringIO(str(src)) if isinstance(src, Secret) else BytesIO(src) if isinstance(src, bytes) else src
        if not host.put_file(data, staged, **as_user):
            return False
        placed = remote.python("python3", "staged_install.py", staged, dest, mode, *([sha256] if sha256 else []))
        ok, out = host.run_shell_command(placed, **connector_arguments)
        if not ok:
            for line in out.stderr_lines[-3:]:
                host.log(line)
        return ok
    finally:
        host.run_shell_command(StringCommand("rm", "-rf", QuoteString(stage_dir)), **as_user)


def put_now(host, dest: str, src: bytes | str, mode: str, connector_arguments: dict, sha256: str = "") -> bool:
    """src (bytes, or a file on the controller) to dest with mode, now, from a command's own execute() (one
    that must first make what it sends: tasks/downloads/relay.py); with sha256, the host places it only
    where its own check agrees (a host never trusts a file more for coming from the controller)."""
    return _put_private(host, dest, src, mode, connector_arguments, sha256)


class _PrivateRead(FunctionCommand):
    """Reads a small text file of the host's with the operation's connector arguments (sudo or not) and
    hands its text to keep(host, text) on the controller. pyinfra's `get_file` under sudo copies the file
    to a predictable /tmp name first (a link a local user planted there would take root's copy); this
    reads it on the command's output instead."""

    def execute(self, state, host, connector_arguments):
        src, keep, remove = self.args
        args = {**connector_arguments, "_shell_executable": "sh"}
        command = StringCommand("cat", QuoteString(src), *(["&&", "rm", "-f", QuoteString(src)] if remove else []))
        ok, out = host.run_shell_command(command, **args)
        if not ok:
            host.log(f"could not read {src}")
            return False
        return keep(host, "".join(f"{line}\n" for line in out.stdout_lines))

    def __repr__(self) -> str:
        return f"PrivateRead({self.args[0]})"


def keep_on_controller(host, text: str, local_path: str) -> bool:
    """A `read` callback: keep text (a file of the host's: a lock, a digest) at local_path on the controller
    (written aside, then renamed), sealed where the controller has a key (config/state_seal.py)."""
    local = Path(local_path)
    state_seal.sealed(local, text)
    host.log(f"kept on the controller: {local}")
    return True


def read(src: str, keep, remove: bool = False) -> _PrivateRead:
    """The command that reads src on the host (a small text file) and calls keep(host, text) here; with
    remove, src is removed once read (a file whose home is the controller)."""
    return _PrivateRead(keep, (src, keep, remove), {})


def upload(dest: str, secret: str) -> _PrivateUpload:
    """The command that writes secret to dest (0600, root) the safe way, for an operation to yield."""
    return _PrivateUpload(_put_private, (dest, Secret(secret), "600"), {})


def put(dest: str, src: bytes | str, mode: str) -> _PrivateUpload:
    """The command that writes src (bytes, or the path of a file on the controller) to dest with mode
    (root's), through a private staging directory, for an operation to yield."""
    return _PrivateUpload(_put_private, (dest, src, mode), {})


@operation()
def written(dest: str, secret: str):
    """dest holds exactly secret, mode 0600; rewritten only when either differs."""
    secret = Secret(secret)
    current = host.get_fact(FileDigests, [dest]).get(dest)
    if current and current["mode"] == "600" and current["sha256"] == hashlib.sha256(secret.encode()).hexdigest():
        host.noop(f"{dest} holds the secret, mode 0600")
        return
    yield upload(dest, secret)
