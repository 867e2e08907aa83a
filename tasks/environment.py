"""The environment Triton runs with: env.sh, a profile for login shells, and a launcher.

pyinfra's commands run in a non-login shell that reads no profile, so the server and every
check start through the launcher, which sets the same variables as the profile.
"""

from __future__ import annotations

import shlex
from io import StringIO

from pyinfra.api import deploy
from pyinfra.operations import files

from tasks.layout import Layout


def env_script(layout: Layout, libpython_dir: str | None) -> str:
    """The variables: TRITON_HOME, PATH (venv first: the stub finds python3 there), LD_LIBRARY_PATH, HF_HOME."""
    q = shlex.quote
    lib_dirs = '"$TRITON_HOME/lib"' + (f":{q(libpython_dir)}" if libpython_dir else "")
    return (
        "# Written by triton-provisioner: the environment Triton and its python backend run with.\n"
        f"export TRITON_HOME={q(layout.current)}\n"
        f"export HF_HOME={q(layout.hf_home)}\n"
        f'export PATH={q(layout.venv + "/bin")}:"$TRITON_HOME/bin:$PATH"\n'
        f'export LD_LIBRARY_PATH={lib_dirs}"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"\n'
    )


@deploy("Triton environment")
def configured(layout: Layout, libpython_dir: str | None) -> None:
    """env.sh, /etc/profile.d/triton.sh and the launcher, each rewritten only when its content differs."""
    env_file = f"{layout.home}/env.sh"
    files.put(name="Triton env.sh", src=StringIO(env_script(layout, libpython_dir)), dest=env_file, mode="644")
    files.put(
        name="Login shells read env.sh",
        src=StringIO(f"# triton-provisioner\n. {shlex.quote(env_file)}\n"),
        dest=layout.profile,
        mode="644",
    )
    files.put(
        name="Launcher: run a command in Triton's environment",
        src=StringIO(
            f'#!/bin/sh\n# triton-provisioner: run "$@" with Triton\'s environment\n'
            f'. {shlex.quote(env_file)}\nexec "$@"\n'
        ),
        dest=layout.launcher,
        mode="755",
    )
