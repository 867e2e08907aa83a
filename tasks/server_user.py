"""The system user the server and the models' code run as: made once, no login and no home; it owns
only the HF cache (the one place it may write). The server's run directory stays root's: root writes
there (pid, hash, the log and its rotation), and a link the server's user planted there would turn
those writes to any file. The server gets its log as an open file from root."""

from __future__ import annotations

from pyinfra.api import deploy
from pyinfra.operations import files, server


@deploy("Server user")
def present(user: str, run_dir: str, hf_cache: str) -> None:
    """`user` exists (a system user) and owns hf_cache; run_dir is root's (0755); nothing to do for root."""
    if user == "root":
        return
    server.user(
        name=f"system user {user}",
        user=user,
        system=True,
        shell="/usr/sbin/nologin",
        home="/nonexistent",
        create_home=False,
    )
    files.directory(name="run directory owned by root", path=run_dir, user="root", group="root", mode="755")
    files.directory(name=f"HF cache owned by {user}", path=hf_cache, user=user, group=user, mode="755")
