"""The system user the server and the models' code run as: made once, no login and no home; it owns
only the HF cache (the one place it may write). The server's run directory stays root's: root writes
there (pid, hash, the log and its rotation), and a link the server's user planted there would turn
those writes to any file. The server gets its log as an open file from root."""

from __future__ import annotations

import re

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation
from pyinfra.operations import files

from facts.system import Account

NOLOGIN = "/usr/sbin/nologin"
NO_HOME = "/nonexistent"  # stays nonexistent: the user has no home


@operation()
def system_user(user: str, made_users: str):
    """`user` exists as a system user with no login and no home: made (useradd) where absent, with its own
    group (the group of its name where one is left behind); its shell and home set back where they changed.
    Read from the Account fact the rules read already (pyinfra's server.user reads every user and group)."""
    account = host.get_fact(Account, user, made_users)
    if account is None:
        add = ["useradd", "-r", "-M", "-d", NO_HOME, "-s", NOLOGIN]
        yield StringCommand(
            "if", "getent", "group", QuoteString(user), ">/dev/null;",
            "then", *add, "-g", QuoteString(user), QuoteString(user), ";",
            "else", *add, QuoteString(user), ";", "fi",
        )  # fmt: skip
        return
    if account["home"] != NO_HOME or account["shell"] != NOLOGIN:
        yield StringCommand("usermod", "-d", NO_HOME, "-s", NOLOGIN, QuoteString(user))
        return
    host.noop(f"system user {user} exists (uid {account['uid']}, no login, no home)")


@deploy("Server user")
def present(user: str, run_dir: str, hf_cache: str, bytecode: str, made_users: str) -> None:
    """`user` exists (a system user, made here: the rules refuse an account the provisioner did not make)
    and owns hf_cache and its Python bytecode folder, recorded in made_users; run_dir is root's (0755);
    nothing to do for root."""
    if user == "root":
        return
    system_user(name=f"system user {user}", user=user, made_users=made_users)
    folder = made_users.rsplit("/", 1)[0]
    files.directory(name="the provisioner's records", path=folder, user="root", group="root", mode="755")
    files.line(name=f"{user} recorded as made here", path=made_users, line=f"^{re.escape(user)}$", replace=user)
    files.directory(name="run directory owned by root", path=run_dir, user="root", group="root", mode="755")
    files.directory(name=f"HF cache owned by {user}", path=hf_cache, user=user, group=user, mode="755")
    files.directory(name=f"Python bytecode owned by {user}", path=bytecode, user=user, group=user, mode="700")
