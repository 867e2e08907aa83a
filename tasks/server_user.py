"""The system user the server and the models' code run as: made once, no login and no home; it owns
only the HF cache (the one place it may write). The server's run directory stays root's: root writes
there (pid, hash, the log and its rotation), and a link the server's user planted there would turn
those writes to any file. The server gets its log as an open file from root."""

from __future__ import annotations

import re

from pyinfra.api import deploy
from pyinfra.operations import files, server


@deploy("Server user")
def present(user: str, run_dir: str, hf_cache: str, made_users: str) -> None:
    """`user` exists (a system user, made here: the rules refuse an account the provisioner did not make)
    and owns hf_cache, recorded in made_users; run_dir is root's (0755); nothing to do for root."""
    if user == "root":
        return
    server.user(
        name=f"system user {user}",
        user=user,
        system=True,
        shell="/usr/sbin/nologin",
        home="/nonexistent",
        create_home=False,
        ensure_home=False,  # /nonexistent stays nonexistent
    )
    folder = made_users.rsplit("/", 1)[0]
    files.directory(name="the provisioner's records", path=folder, user="root", group="root", mode="755")
    files.line(name=f"{user} recorded as made here", path=made_users, line=f"^{re.escape(user)}$", replace=user)
    files.directory(name="run directory owned by root", path=run_dir, user="root", group="root", mode="755")
    files.directory(name=f"HF cache owned by {user}", path=hf_cache, user=user, group=user, mode="755")
