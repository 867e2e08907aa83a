"""The system user the server and the models' code run as: made once, no login and no home; it owns
only the server's run directory and the HF cache (the only places it may write)."""

from __future__ import annotations

from pyinfra.api import deploy
from pyinfra.operations import files, server


@deploy("Server user")
def present(user: str, run_dir: str, hf_cache: str) -> None:
    """`user` exists (a system user) and owns run_dir and hf_cache; nothing to do for root."""
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
    files.directory(name=f"run directory owned by {user}", path=run_dir, user=user, group=user, mode="750")
    files.directory(name=f"HF cache owned by {user}", path=hf_cache, user=user, group=user, mode="755")
