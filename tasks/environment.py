"""The environment Triton runs with: env.sh, a profile for login shells, a launcher, and the script
that rotates the server's log.

pyinfra's commands run in a non-login shell that reads no profile, so the server and every
check start through the launcher, which sets the same variables as the profile.
"""

from __future__ import annotations

import shlex

from pyinfra.api import deploy

import remote
from config.layout import Layout
from tasks import small_files


def env_script(layout: Layout, libpython_dir: str | None) -> str:
    """The variables: TRITON_HOME, PATH (venv first: the stub finds python3 there), LD_LIBRARY_PATH, HF_HOME
    (and HF_HUB_OFFLINE offline)."""
    lib_dirs = ":".join(shlex.quote(directory) for directory in layout.library_dirs(libpython_dir))
    return (
        "# Written by triton-provisioner: the environment Triton and its python backend run with.\n"
        f"export TRITON_HOME={shlex.quote(layout.current)}\n"
        f"export HF_HOME={shlex.quote(layout.hf_home)}\n"
        f'export PATH={shlex.quote(layout.venv + "/bin")}:"$TRITON_HOME/bin:$PATH"\n'
        f'export LD_LIBRARY_PATH={lib_dirs}"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"\n'
        # offline: the hub is never asked (the models load from the cache only)
        + ("export HF_HUB_OFFLINE=1\n" if layout.settings.offline else "")
    )


def log_rotate_script(python: str | None) -> bytes:
    """remote/actions/log_rotate.py as a program run by this host's Python."""
    python = python or "python3"
    shebang = f"#!{python}" if python.startswith("/") else f"#!/usr/bin/env {python}"
    return f"{shebang}\n{remote.source('log_rotate.py')}".encode()


@deploy("Triton environment")
def configured(layout: Layout, libpython_dir: str | None, python: str | None) -> None:
    """env.sh, /etc/profile.d/triton.sh (login shells read env.sh), the launcher (runs a command
    in Triton's environment) and the log rotation script, each rewritten only when its content differs."""
    env_file = f"{layout.home}/env.sh"
    launcher = (
        f'#!/bin/sh\n# triton-provisioner: run "$@" with Triton\'s environment\n. {shlex.quote(env_file)}\nexec "$@"\n'
    )
    small_files.written(
        name="env.sh, login profile, launcher",
        files={
            env_file: (env_script(layout, libpython_dir).encode(), "644"),
            layout.profile: (f"# triton-provisioner\n. {shlex.quote(env_file)}\n".encode(), "644"),
            layout.launcher: (launcher.encode(), "755"),
            layout.log_rotate: (log_rotate_script(python), "755"),
        },
    )
