"""The venv the python backend runs models in: a pinned torch variant and the model packages.

Wheels are downloaded once into a wheelhouse on the persistent path and installed from it
with --no-index, so a host re-provisioned after a reset installs without the network. A tar of
the finished venv (venv_snapshot) is kept there too: after a reset it is unpacked, in the
background while apt and Triton install, instead of pip installing every wheel again.
"""

from __future__ import annotations

from functools import partial

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.files import File

import remote
from planner.tables import UV_SHA256, UV_VERSION
from tasks.venv.plan import SNAPSHOT_SUFFIXES, VenvPlan
from tasks.venv.state import INSTALL_MARKER, fresh, restores, usable
from facts.venv import VenvPackages
from tasks.downloads import private_upload
from tasks.venv.pip_commands import ONLY_WHEELS, pip_locked


@operation()
def restore_started(plan: VenvPlan):
    """Start unpacking the venv snapshot in the background, so that the steps that do not need the
    venv (apt, Triton) run meanwhile; `created` with the same token waits for it."""
    if not restores(host.get_fact(VenvPackages, plan.venv_dir), plan):
        host.noop("no venv to unpack from a snapshot")
        return
    restore = remote.source("venv_restore.sh")
    yield remote.shell(
        "venv_restore_start.sh",
        plan.venv_dir,
        plan.snapshot,
        plan.restore_token,
        restore,
        plan.snapshot_sha256,
        plan.python_dir,
    )


@operation()
def created(plan: VenvPlan):
    """A venv at venv_dir made from the plan's Python (the stub's minor version); a wrong one is replaced.

    With a snapshot of a finished venv on the persistent path, a missing or wrong venv is
    unpacked from it (seconds) rather than made empty and filled by pip (a minute): here, or
    by the background job `restore_started` began with restore_token, which this waits for
    (its log is there when it was started: it may have finished, or failed, by now).
    """
    venv_dir = plan.venv_dir
    if plan.restore_token and host.get_fact(File, path=f"{venv_dir}.restore-{plan.restore_token}.log"):
        yield remote.live(remote.shell("venv_restore_wait.sh", venv_dir, plan.restore_token, plan.snapshot))
        return
    venv = host.get_fact(VenvPackages, venv_dir)
    if restores(venv, plan):
        restore = remote.shell("venv_restore.sh", venv_dir, plan.snapshot, plan.snapshot_sha256, plan.python_dir)
        yield StringCommand(*pip_locked(venv_dir), restore)
        return
    if usable(venv, plan.python_minor):
        host.noop(f"venv {venv_dir} is Python {venv['python']}")
        return
    # A venv is not relocatable (its scripts name its path), so it is made at venv_dir itself;
    # a replaced one waits aside and comes back if the new one cannot be made.
    yield remote.shell("venv_create.sh", plan.python, venv_dir)


@operation()
def snapshot_saved(plan: VenvPlan):
    """A tar of the finished venv is on the persistent path (written aside, then renamed), its sha256 kept
    on the controller (the only digest a restore trusts); older snapshots beside it are removed. Runs
    after the packages are in, so it holds a complete venv."""
    if not plan.snapshot:
        host.noop("venv snapshots are off (venv_snapshot)")
        return
    if not plan.snapshot_digest_store:
        host.noop("no venv snapshot: its digest is kept on the controller, in venv_lock_dir, which is off")
        return
    if host.get_fact(File, path=plan.snapshot) and plan.snapshot_sha256:
        host.noop(f"venv snapshot {plan.snapshot} kept, its sha256 on the controller")
        return
    folder, name = plan.snapshot.rsplit("/", 1)
    codec = next((c for c, suffix in SNAPSHOT_SUFFIXES.items() if c != "none" and name.endswith(suffix)), "none")
    yield remote.shell("venv_snapshot.sh", plan.venv_dir, folder, plan.snapshot, name, codec, plan.snapshot_digest)
    keep = partial(private_upload.keep_on_controller, local_path=plan.snapshot_digest_store)
    yield private_upload.read(plan.snapshot_digest, keep, remove=True)  # its home is the controller


@operation()
def packages_installed(plan: VenvPlan):
    """The venv holds exactly the plan's versions, installed from the wheelhouse with no index.

    A marker file stands in the venv while pip runs: one left behind means a pip was cut off, and
    a package it was writing can look installed (its metadata in place) with its files half written.
    Then, as whenever the venv holds packages already (downloaded code, which the installer would run
    as root: its interpreter starts there), the venv is made afresh and every package installed into it.
    """
    venv_dir, requirements = plan.venv_dir, plan.requirements
    venv = host.get_fact(VenvPackages, venv_dir)
    if restores(venv, plan):
        host.noop(f"the venv comes from {plan.snapshot} with {', '.join(f'{k} {v}' for k, v in requirements.items())}")
        return
    marker = f"{venv_dir}/{INSTALL_MARKER}"
    interrupted = bool(host.get_fact(File, path=marker))
    have = (venv or {}).get("packages", {})
    differ = {k: v for k, v in requirements.items() if have.get(k) != v}
    if not differ and not interrupted:
        host.noop(f"venv has {', '.join(f'{k} {v}' for k, v in requirements.items())}")
        return
    yield remote.python("python3", "wheel_lock.py", "--check", plan.wheelhouse)  # each file, its sha256
    if interrupted or not fresh(venv):
        yield StringCommand(*pip_locked(venv_dir), remote.shell("venv_create.sh", plan.python, venv_dir))
    if plan.installer == "uv":
        uv = (plan.tools, UV_VERSION, *UV_SHA256)
        install = remote.shell("venv_install.sh", venv_dir, plan.wheelhouse, plan.lock_file, "", *uv)
        yield StringCommand(
            "touch",
            QuoteString(marker),
            "&&",
            *pip_locked(venv_dir),
            install,
            "&&",
            *bytecode_hook(plan),
            "&&",
            "rm",
            "-f",
            QuoteString(marker),
        )
        return
    yield StringCommand(
        "touch",
        QuoteString(marker),
        "&&",
        *pip_locked(venv_dir),
        QuoteString(f"{venv_dir}/bin/pip"),
        "install",
        *ONLY_WHEELS,
        "--disable-pip-version-check",
        "--no-index",
        "--no-compile",
        "--progress-bar",
        "off",
        "--find-links",
        QuoteString(plan.wheelhouse),
        # exactly the recorded files, every one checked against its sha256, transitive ones too
        "--require-hashes",
        "--no-deps",
        "-r",
        QuoteString(plan.lock_file),
        "&&",
        *bytecode_hook(plan),
        "&&",
        "rm",
        "-f",
        QuoteString(marker),
    )


# A .pth line site runs at every start of the venv's Python, the stubs' embedded one too: the stub takes no
# PYTHONPYCACHEPREFIX from its environment, so without it a model folder's model.py (which does not set
# sys.pycache_prefix as the provisioner's templates do) compiled torch and transformers at every load. It
# reads only the variable the server's launcher exports (config/layout.py python_bytecode): root's runs of
# the venv's Python, which have none, write and read bytecode as before.
BYTECODE_PTH = "_triton_provisioner_bytecode.pth"
BYTECODE_LINE = 'import os, sys; sys.pycache_prefix = os.environ.get("PYTHONPYCACHEPREFIX") or sys.pycache_prefix'


def bytecode_hook(plan: VenvPlan) -> list:
    """The command parts that write BYTECODE_PTH into the venv's site-packages."""
    path = f"{plan.venv_dir}/lib/python{plan.python_minor}/site-packages/{BYTECODE_PTH}"
    return ["printf", "'%s\\n'", QuoteString(BYTECODE_LINE), ">", QuoteString(path)]
