"""A secret (the HuggingFace token) in a root-only file, never readable by anyone else, not for a moment.

pyinfra's `files.put` under sudo stages the upload in /tmp as the login user (mode 0644) and copies
it into place before setting the mode: two windows in which any local user can read the token. Here
the bytes travel by SFTP (never on a command line) into a fresh `mktemp -d` directory (0700, the
login user's), and root copies them into place under `umask 077`, so the file is 0600 from its first
byte; the staging directory is removed whatever happens.
"""

from __future__ import annotations

import hashlib
import re
from io import StringIO

from pyinfra import host
from pyinfra.api import FunctionCommand, QuoteString, StringCommand, operation

import remote
from facts.digests import FileDigests

# What `mktemp -d` prints: a directory whose last part is tmp.XXXXXXXXXX (anything else: refused).
_MKTEMP_DIR = re.compile(r"^/[A-Za-z0-9_./-]*/tmp\.[A-Za-z0-9]{6,}$")


class Secret(str):
    """A string that never shows itself in a repr, a log line or a traceback's arguments."""

    def __repr__(self) -> str:
        return "<secret>"


class _SecretUpload(FunctionCommand):
    """Runs _put_secret with the operation's connector arguments (sudo or not), which plain
    FunctionCommands do not pass on."""

    def execute(self, state, host, connector_arguments):
        return _put_secret(host, *self.args, connector_arguments=connector_arguments)

    def __repr__(self) -> str:
        return f"SecretUpload({self.args[0]})"


def _put_secret(host, dest: str, secret: Secret, connector_arguments: dict) -> bool:
    as_user = {**connector_arguments, "_sudo": False, "_su_user": None, "_doas": False}
    ok, out = host.run_shell_command(StringCommand("mktemp", "-d"), **as_user)
    stage_dir = out.stdout.strip() if ok else ""
    if not _MKTEMP_DIR.match(stage_dir):
        host.log(f"could not make a private staging directory (mktemp -d gave {stage_dir!r})")
        return False
    try:
        staged = f"{stage_dir}/secret"
        if not host.put_file(StringIO(str(secret)), staged, **as_user):
            return False
        ok, _ = host.run_shell_command(
            remote.shell("secret_install.sh", staged, dest),
            **connector_arguments,
        )
        return ok
    finally:
        host.run_shell_command(StringCommand("rm", "-rf", QuoteString(stage_dir)), **as_user)


def upload(dest: str, secret: str) -> _SecretUpload:
    """The command that writes secret to dest (0600, root) the safe way, for an operation to yield."""
    return _SecretUpload(_put_secret, (dest, Secret(secret)), {})


@operation()
def written(dest: str, secret: str):
    """dest holds exactly secret, mode 0600; rewritten only when either differs."""
    secret = Secret(secret)
    current = host.get_fact(FileDigests, [dest]).get(dest)
    if current and current["mode"] == "600" and current["sha256"] == hashlib.sha256(secret.encode()).hexdigest():
        host.noop(f"{dest} holds the secret, mode 0600")
        return
    yield upload(dest, secret)
