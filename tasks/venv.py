"""The venv the python backend runs models in: a pinned torch variant and the model packages.

Wheels are downloaded once into a wheelhouse on the persistent path and installed from it
with --no-index, so a host re-provisioned after a reset installs without the network. A tar of
the finished venv (venv_snapshot) is kept there too: after a reset it is unpacked, in the
background while apt and Triton install, instead of pip installing every wheel again.
"""

from __future__ import annotations

import hashlib
from functools import partial

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.files import File

import remote
from compat.tables import UV_SHA256, UV_VERSION
from config.secrets import has_credentials
from facts.digests import FileDigests
from facts.venv import VenvData, VenvPackages
from tasks import lock_digests, private_upload
from tasks.venv_plan import SNAPSHOT_SUFFIXES, VenvPlan, pip_requirement

# Stands in the venv while pip installs into it; left behind, it says that pip was cut off.
INSTALL_MARKER = ".pip-install-incomplete"
# every pip and uv call: wheels only. An sdist's build backend (setup.py) is code of its author's, and
# these calls run as root; the lock never holds one (remote/wheel_lock.py refuses it).
ONLY_WHEELS = ("--only-binary", ":all:")
# What a fresh venv holds (ensurepip's wheels, from the base Python: root's). A venv holding anything
# else holds downloaded code (a package's .pth file runs in every interpreter started there): root runs
# no pip, uv or Python of such a venv; it downloads with a pip-only venv beside it, and installs into a
# venv made afresh.
FRESH_VENV_PACKAGES = frozenset({"pip", "setuptools"})
# Seconds a pip command waits for another pip on the same venv (torch alone takes minutes on a slow disk).
PIP_LOCK_TIMEOUT_S = 900
# The parts a lock's files (but torch's) are downloaded in, at once: pip fetches one file at a time.
DOWNLOAD_PARTS = 3


def _usable(venv: VenvData | None, python_minor: str) -> bool:
    """The venv exists, is made from this Python minor and has pip."""
    return bool(venv and venv["python"].startswith(python_minor + ".") and venv["packages"].get("pip"))


def _fresh(venv: VenvData | None) -> bool:
    """The venv exists and holds only what a fresh one does: no downloaded code that root would run."""
    return bool(venv and venv["packages"] and set(venv["packages"]) <= FRESH_VENV_PACKAGES)


def _matches(venv: VenvData | None, plan: VenvPlan) -> bool:
    """The venv is usable and holds exactly the plan's versions."""
    return _usable(venv, plan.python_minor) and all(venv["packages"].get(k) == v for k, v in plan.requirements.items())


def _restores(venv: VenvData | None, plan: VenvPlan) -> bool:
    """The snapshot is to be unpacked: the venv (its fact) does not match and a snapshot of one that
    did is kept. Each venv operation asks the same question, so that a plan made before any of them
    runs (pyinfra without -y) agrees with itself."""
    if not plan.snapshot or _matches(venv, plan):
        return False
    kept = bool(host.get_fact(File, path=plan.snapshot))  # asked either way: every run asks the same facts
    return kept and bool(plan.snapshot_sha256)  # a snapshot whose digest the controller did not keep: never


@operation()
def restore_started(plan: VenvPlan):
    """Start unpacking the venv snapshot in the background, so that the steps that do not need the
    venv (apt, Triton) run meanwhile; `created` with the same token waits for it."""
    if not _restores(host.get_fact(VenvPackages, plan.venv_dir), plan):
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
    if _restores(venv, plan):
        restore = remote.shell("venv_restore.sh", venv_dir, plan.snapshot, plan.snapshot_sha256, plan.python_dir)
        yield StringCommand(*pip_locked(venv_dir), restore)
        return
    if _usable(venv, plan.python_minor):
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


def pip_locked(venv_dir: str) -> list:
    """`flock -w SECONDS VENV.lock`: one pip at a time per venv. A pip that a dropped connection left
    running keeps the lock, so the next run waits for it instead of writing the same files at once.
    The venvs' folder is made first (the lock file lies in it)."""
    folder = venv_dir.rsplit("/", 1)[0] or "/"
    return [
        "mkdir",
        "-p",
        QuoteString(folder),
        "&&",
        "flock",
        "-w",
        str(PIP_LOCK_TIMEOUT_S),
        QuoteString(f"{venv_dir}.lock"),
    ]


def _torch_sources(plan: VenvPlan) -> list[str]:
    """torch from the PyTorch index alone where one is set (never mixed with PyPI: a package of the
    same name there could win), else from the configured index and find-links."""
    if plan.torch_index:
        return ["--index-url", plan.torch_index]
    return _index_sources(plan)


def _index_sources(plan: VenvPlan) -> list[str]:
    """Everything but torch: the configured index (PyPI by default) and find-links."""
    args = ["--index-url", plan.index_url] if plan.index_url else []
    return args + (["--find-links", plan.find_links] if plan.find_links else [])


def _pip_config(sources: list[str]) -> str:
    """A pip configuration file holding these --index-url/--find-links options."""
    index = [v for k, v in zip(sources[::2], sources[1::2], strict=True) if k == "--index-url"]
    links = [v for k, v in zip(sources[::2], sources[1::2], strict=True) if k == "--find-links"]
    text = "[global]\n" + "".join(f"index-url = {v}\n" for v in index)
    return text + (f"find-links = {' '.join(links)}\n" if links else "")


def _pip_download(
    plan: VenvPlan, sources: list[str], *what: str, conf: str = "", dest: str = "", locked: bool = True, pip: str = ""
) -> StringCommand:
    """pip download into the wheelhouse, wheels only (an sdist would run its build backend as root: pip
    refuses it, naming the package); with conf, the sources are in that pip configuration file (a URL
    with a password there, never on the command line). locked: under the venv's pip lock (else the
    caller holds it). pip: the pip that downloads (default the venv's, while it is fresh)."""
    where = ["env", QuoteString(f"PIP_CONFIG_FILE={conf}")] if conf else []
    return StringCommand(
        *(pip_locked(plan.venv_dir) if locked else []),
        *where,
        QuoteString(pip or f"{plan.venv_dir}/bin/pip"),
        "download",
        *ONLY_WHEELS,
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "--cache-dir",
        QuoteString(plan.pip_cache),
        "--dest",
        QuoteString(dest or plan.wheelhouse),
        *([] if conf else (QuoteString(a) for a in sources)),
        *(["--cert", QuoteString(plan.cert)] if plan.cert else []),
        *what,
    )


def pip_at_once(venv_dir: str, commands: list[StringCommand], remove: list[str]) -> StringCommand:
    """The commands run at once under the venv's pip lock (pip fetches one file at a time: a lock's
    files are known, so its parts need not wait for each other), each waited for; the status is the
    last failure's, 0 where none failed. The files in remove (pip configurations holding passwords)
    are removed once all are done."""
    group: list = []
    for command in commands:
        group += [command, "&", 'pids="$pids $!";']
    group += ["rc=0;", "for", "pid", "in", "$pids;", "do", 'wait "$pid"', "||", "rc=$?;", "done;"]
    group += [*(["rm", "-f", *(QuoteString(c) for c in remove), ";"] if remove else []), "exit", "$rc"]
    return StringCommand(*pip_locked(venv_dir), "sh", "-c", QuoteString(StringCommand(*group)))


def _downloads(plan: VenvPlan, steps: list[tuple[str, list[str], list]], at_once: bool = False, pip: str = ""):
    """Each (name, sources, requirements) download, one after the other or (at_once) all at once; where
    a source URL holds a password, its sources go to the host in a root-only pip configuration file
    (private_upload), removed once pip is done. A step named "uv" downloads into the wheelhouse's
    tools/ folder (not part of the venv's lock)."""
    if at_once and len(steps) > 1:
        commands, confs = [], []
        for name, sources, what in steps:
            dest = f"{plan.wheelhouse}/tools" if name == "uv" else ""
            conf = f"{plan.wheelhouse}/.pip-{name}.conf" if any(has_credentials(v) for v in sources[1::2]) else ""
            if conf:
                yield private_upload.upload(conf, _pip_config(sources))
                confs.append(conf)
            commands.append(_pip_download(plan, sources, *what, conf=conf, dest=dest, locked=False, pip=pip))
        label = f"wheels ({', '.join(name for name, _, _ in steps)})"
        yield remote.watched(label, pip_at_once(plan.venv_dir, commands, confs))  # progress shown
        return
    for name, sources, what in steps:
        dest = f"{plan.wheelhouse}/tools" if name == "uv" else ""
        if any(has_credentials(v) for v in sources[1::2]):
            conf = f"{plan.wheelhouse}/.pip-{name}.conf"
            yield private_upload.upload(conf, _pip_config(sources))
            yield remote.watched(
                f"wheels ({name})",
                StringCommand(
                    "{",
                    _pip_download(plan, sources, *what, conf=conf, dest=dest, pip=pip),
                    ";",
                    "rc=$?",
                    ";",
                    "rm",
                    "-f",
                    QuoteString(conf),
                    ";",
                    "exit",
                    "$rc",
                    ";",
                    "}",
                ),
            )
        else:
            yield remote.watched(f"wheels ({name})", _pip_download(plan, sources, *what, dest=dest, pip=pip))


def _save_lock(host, text: str, local_path: str, plan: VenvPlan) -> bool:
    """Keep the lock this run made on the controller (later hosts, and this one after a reset, install
    exactly it), once each file's sha256 agrees with what its index publishes (tasks/lock_digests.py);
    one that does not fails the step before anything is installed from the wheelhouse."""
    checked = lock_digests.check(text, plan.index_url, plan.torch_index, lock_digests.urllib_fetch, plan.lock_trusted)
    for line in checked.lines:
        host.log(line)
    if checked.mismatched:
        host.log(
            "the wheelhouse's files differ from what the index publishes: nothing was installed from it and no lock "
            f"was kept. Remove {plan.wheelhouse} on the host (or fix the mirror in between) and run again."
        )
    if checked.refused:
        return False
    return private_upload.keep_on_controller(host, text, local_path)


def wheels_at_hand(plan: VenvPlan) -> str | None:
    """Why no wheel needs downloading (the wheelhouse is complete, the venv comes from its snapshot,
    or offline, the venv already holds the pins), or None: then wheelhouse_filled downloads."""
    marker = f"{plan.wheelhouse}/.complete"
    digests = host.get_fact(FileDigests, [marker, plan.lock_file])
    host_lock = digests.get(plan.lock_file)
    wanted = hashlib.sha256(plan.lock.encode()).hexdigest() if plan.lock else None
    if digests.get(marker) and host_lock and (wanted is None or host_lock["sha256"] == wanted):
        return f"wheelhouse {plan.wheelhouse} complete, every file recorded with its sha256"
    venv = host.get_fact(VenvPackages, plan.venv_dir)
    if _restores(venv, plan):
        return f"the venv comes from {plan.snapshot}"
    if plan.offline and _matches(venv, plan) and not host.get_fact(File, path=f"{plan.venv_dir}/{INSTALL_MARKER}"):
        return f"offline: {plan.venv_dir} holds the pins already"
    return None


@operation()
def wheelhouse_filled(plan: VenvPlan):
    """Every file the venv needs is in the wheelhouse with its sha256 recorded (requirements.lock),
    downloaded once: torch from its own index, the rest from PyPI or the configured index. With a
    lock kept on the controller, exactly the files it names (pip checks each hash); without, the pins
    are resolved and the lock made here is kept on the controller for every later run."""
    why = wheels_at_hand(plan)
    if why:
        host.noop(why)
        return
    marker = f"{plan.wheelhouse}/.complete"
    yield StringCommand("mkdir", "-p", QuoteString(plan.wheelhouse), "&&", "rm", "-f", QuoteString(marker))
    pip = ""
    if not _fresh(host.get_fact(VenvPackages, plan.venv_dir)):  # it holds downloaded code: a pip-only venv
        pip_venv = f"{plan.venv_dir}.pip"
        yield remote.shell("venv_create.sh", plan.python, pip_venv)
        pip = f"{pip_venv}/bin/pip"
    torch = plan.requirements.get("torch")
    uv_step = None
    if plan.installer == "uv":  # the installer's own wheel, pinned by hash, beside (not in) the venv's lock
        uv_req = f"{plan.wheelhouse}/tools/uv.requirements"
        yield StringCommand("mkdir", "-p", QuoteString(f"{plan.wheelhouse}/tools"))
        yield private_upload.put(uv_req, plan.uv_requirement.encode(), "644")
        only = ["--no-deps", "--require-hashes", "-r", QuoteString(uv_req)]
        uv_step = ("uv", _index_sources(plan), only)
    if plan.lock:
        # every file is known: torch, the rest in parts, and uv, downloaded at once
        lock = plan.lock_file
        rest = [line for line in plan.lock.splitlines() if line.strip() and not line.startswith("torch==")]
        parts = max(1, min(DOWNLOAD_PARTS, len(rest)))
        yield private_upload.put(lock, plan.lock.encode(), "644")
        yield remote.shell("lock_split.sh", lock, str(parts))  # requirements.lock -> .torch, .rest.0 ...
        exactly = ["--no-deps", "--require-hashes", "-r"]
        steps = [("torch", _torch_sources(plan), [*exactly, QuoteString(f"{lock}.torch")])] if torch else []
        steps += [
            (
                f"index{part + 1}" if parts > 1 else "index",
                _index_sources(plan),
                [*exactly, QuoteString(f"{lock}.rest.{part}")],
            )
            for part in range(parts)
        ]
        yield from _downloads(plan, [*steps, *([uv_step] if uv_step else [])], at_once=True, pip=pip)
    else:
        steps = []
        if torch:
            steps.append(("torch", _torch_sources(plan), ["--no-deps", QuoteString(pip_requirement("torch", torch))]))
        # Then the pins and every dependency, torch's too, from the index; torch itself (a +variant
        # version, which PyPI never has) resolves only to the wheel just fetched into the wheelhouse.
        pins = [QuoteString(pip_requirement(k, v)) for k, v in plan.requirements.items()]
        steps.append(("index", [*_index_sources(plan), "--find-links", plan.wheelhouse], pins))
        yield from _downloads(plan, [*steps, *([uv_step] if uv_step else [])], pip=pip)
        yield remote.python("python3", "wheel_lock.py", plan.wheelhouse)
    if pip:
        yield StringCommand("rm", "-rf", QuoteString(pip.removesuffix("/bin/pip")))
    if plan.lock_store and not plan.lock:  # the wheelhouse is complete only once its lock is checked and kept
        yield private_upload.read(plan.lock_file, partial(_save_lock, local_path=plan.lock_store, plan=plan))
    yield StringCommand("touch", QuoteString(marker))


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
    if _restores(venv, plan):
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
    if interrupted or not _fresh(venv):
        yield StringCommand(*pip_locked(venv_dir), remote.shell("venv_create.sh", plan.python, venv_dir))
    if plan.installer == "uv":
        uv = (plan.tools, UV_VERSION, *UV_SHA256)
        install = remote.shell("venv_install.sh", venv_dir, plan.wheelhouse, plan.lock_file, "", *uv)
        yield StringCommand(
            "touch", QuoteString(marker), "&&", *pip_locked(venv_dir), install, "&&", "rm", "-f", QuoteString(marker)
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
        "rm",
        "-f",
        QuoteString(marker),
    )
