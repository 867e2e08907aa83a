"""The pip command lines the venv's steps run as root: wheels only, one pip at a time per venv (a lock
file), sources from the configured indexes (a password only in a root-only configuration file), and a
lock's files downloaded in parts at once."""

from __future__ import annotations

from typing import Any

from pyinfra.api import QuoteString, StringCommand

import remote
from tasks.venv.plan import VenvPlan
from config.secrets import has_credentials
from tasks.downloads import private_upload

# every pip and uv call: wheels only. An sdist's build backend (setup.py) is code of its author's, and
# these calls run as root; the lock never holds one (tasks/venv/scripts/wheel_lock.py refuses it).
ONLY_WHEELS = ("--only-binary", ":all:")
# Seconds a pip command waits for another pip on the same venv (torch alone takes minutes on a slow disk).
PIP_LOCK_TIMEOUT_S = 900

# One download: its name ("torch", "index", "uv"), its sources (--index-url/--find-links pairs) and
# what pip is given (requirements, or -r FILE).
Step = tuple[str, list[str], list[Any]]
# The steps that fetch a tool into the wheelhouse's tools/ folder (not part of the venv's lock).
TOOLS = ("uv", "pip")


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


def torch_sources(plan: VenvPlan) -> list[str]:
    """torch from the PyTorch index alone where one is set (never mixed with PyPI: a package of the
    same name there could win), else from the configured index and find-links."""
    if plan.torch_index:
        return ["--index-url", plan.torch_index]
    return index_sources(plan)


def index_sources(plan: VenvPlan) -> list[str]:
    """Everything but torch: the configured index (PyPI by default) and find-links."""
    args = ["--index-url", plan.index_url] if plan.index_url else []
    return args + (["--find-links", plan.find_links] if plan.find_links else [])


def pip_config(sources: list[str]) -> str:
    """A pip configuration file holding these --index-url/--find-links options."""
    index = [v for k, v in zip(sources[::2], sources[1::2], strict=True) if k == "--index-url"]
    links = [v for k, v in zip(sources[::2], sources[1::2], strict=True) if k == "--find-links"]
    text = "[global]\n" + "".join(f"index-url = {v}\n" for v in index)
    return text + (f"find-links = {' '.join(links)}\n" if links else "")


def pip_download(
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


def pinned_pip_installed(plan: VenvPlan, what: list[Any], pip: str = "") -> StringCommand:
    """The pinned pip (planner/tables.py PIP_DOWNLOADER_VERSION), from the wheelhouse's tools/ with its hash
    checked again (what: its download step's arguments), into the venv whose pip downloads (the venv while it
    is fresh, else the pip-only venv): it replaces the pip that venv was made with, for the downloads after it."""
    return StringCommand(
        *pip_locked(plan.venv_dir),
        QuoteString(pip or f"{plan.venv_dir}/bin/pip"),
        "install",
        *ONLY_WHEELS,
        "--disable-pip-version-check",
        "--quiet",
        "--no-index",
        "--find-links",
        QuoteString(f"{plan.wheelhouse}/tools"),
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


def downloads(plan: VenvPlan, steps: list[Step], at_once: bool = False, pip: str = ""):
    """Each (name, sources, requirements) download, one after the other or (at_once) all at once; where
    a source URL holds a password, its sources go to the host in a root-only pip configuration file
    (private_upload), removed once pip is done. A step named "uv" or "pip" (TOOLS) downloads into the
    wheelhouse's tools/ folder (not part of the venv's lock)."""
    if at_once and len(steps) > 1:
        commands, confs = [], []
        for name, sources, what in steps:
            dest = f"{plan.wheelhouse}/tools" if name in TOOLS else ""
            conf = f"{plan.wheelhouse}/.pip-{name}.conf" if any(has_credentials(v) for v in sources[1::2]) else ""
            if conf:
                yield private_upload.upload(conf, pip_config(sources))
                confs.append(conf)
            commands.append(pip_download(plan, sources, *what, conf=conf, dest=dest, locked=False, pip=pip))
        label = f"wheels ({', '.join(name for name, _, _ in steps)})"
        yield remote.watched(label, pip_at_once(plan.venv_dir, commands, confs))  # progress shown
        return
    for name, sources, what in steps:
        dest = f"{plan.wheelhouse}/tools" if name in TOOLS else ""
        if any(has_credentials(v) for v in sources[1::2]):
            conf = f"{plan.wheelhouse}/.pip-{name}.conf"
            yield private_upload.upload(conf, pip_config(sources))
            yield remote.watched(
                f"wheels ({name})",
                StringCommand(
                    "{",
                    pip_download(plan, sources, *what, conf=conf, dest=dest, pip=pip),
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
            yield remote.watched(f"wheels ({name})", pip_download(plan, sources, *what, dest=dest, pip=pip))
