"""The environment Triton runs with: env.sh, a profile for login shells, and a launcher.

pyinfra's commands run in a non-login shell that reads no profile, so the server and every
check start through the launcher, which sets the same variables as the profile.
"""

from __future__ import annotations

import shlex

from pyinfra.api import deploy

from config.layout import Layout
from tasks import small_files


def env_script(layout: Layout, libpython_dir: str | None) -> str:
    """The variables: TRITON_HOME, PATH (venv first: the stub finds python3 there), LD_LIBRARY_PATH, HF_HOME."""
    q = shlex.quote
    lib_dirs = ":".join(q(d) for d in layout.library_dirs(libpython_dir))
    return (
        "# Written by triton-provisioner: the environment Triton and its python backend run with.\n"
        f"export TRITON_HOME={q(layout.current)}\n"
        f"export HF_HOME={q(layout.hf_home)}\n"
        f'export PATH={q(layout.venv + "/bin")}:"$TRITON_HOME/bin:$PATH"\n'
        f'export LD_LIBRARY_PATH={lib_dirs}"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"\n'
    )


@deploy("Triton environment")
def configured(layout: Layout, libpython_dir: str | None) -> None:
    """env.sh, /etc/profile.d/triton.sh (login shells read env.sh) and the launcher (runs a command
    in Triton's environment), each rewritten only when its content differs."""
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
        },
    )
