"""The wheelhouse on the persistent path: every file the venv installs, downloaded once with its sha256
recorded (requirements.lock), so that a host re-provisioned after a reset installs with no network.
A first lock is checked against what the index publishes and kept on the controller."""

from __future__ import annotations

from collections.abc import Generator
from functools import partial
from typing import Any

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

import remote
from tasks.venv import lock_digests
from tasks.venv.plan import VenvPlan, pip_requirement
from tasks.venv.state import fresh, wheels_at_hand
from facts.digests import FileDigests
from facts.venv import VenvPackages
from tasks.downloads import private_upload
from tasks.downloads import relay as controller_downloads
from tasks.venv.pip_commands import Step, downloads, index_sources, pinned_pip_installed, torch_sources

# The parts a lock's files (but torch's) are downloaded in, at once: pip fetches one file at a time.
DOWNLOAD_PARTS = 3


def _save_lock(host, text: str, local_path: str, plan: VenvPlan) -> bool:
    """Keep the lock this run made on the controller (later hosts, and this one after a reset, install
    exactly it), once each file's sha256 agrees with what its index publishes (tasks/venv/lock_digests.py);
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


def _relayed(plan: VenvPlan):
    """The kept lock's files (and uv's wheel) from the controller's cache (tasks/downloads/relay.py):
    only those the wheelhouse lacks or holds with another sha256, each checked on the host before it takes
    its place; pip or uv checks each again against the lock when it installs."""
    wanted = {f"{plan.wheelhouse}/{e.filename}": e for e in lock_digests.entries(plan.lock)}
    uv_url, uv_sha256, uv_name = plan.uv_wheel
    uv_path = f"{plan.wheelhouse}/tools/{uv_name}" if plan.installer == "uv" and uv_name else ""
    have = host.get_fact(FileDigests, paths=[*wanted, *([uv_path] if uv_path else [])])

    def agrees(path: str, sha256: str) -> bool:
        got = have.get(path)
        return bool(got and got["sha256"] == sha256)

    if uv_path:
        yield StringCommand("mkdir", "-p", QuoteString(f"{plan.wheelhouse}/tools"))
        if not agrees(uv_path, uv_sha256):
            yield from controller_downloads.sent(uv_url, uv_sha256, uv_path, plan.relay_dir)
    for path, entry in wanted.items():
        if not agrees(path, entry.sha256):
            url = controller_downloads.wheel_url(plan, entry.filename)
            yield from controller_downloads.sent(url, entry.sha256, path, plan.relay_dir)
    yield private_upload.put(plan.lock_file, plan.lock.encode(), "644")


def _tool_step(plan: VenvPlan, name: str, requirement: str) -> Generator[Any, Any, Step]:
    """tools/NAME.requirements on the host (a tool pinned by the sha256 of its wheel, beside, not in, the
    venv's lock); returns the download step that fetches exactly that file into tools/."""
    path = f"{plan.wheelhouse}/tools/{name}.requirements"
    yield StringCommand("mkdir", "-p", QuoteString(f"{plan.wheelhouse}/tools"))
    yield private_upload.put(path, requirement.encode(), "644")
    return name, index_sources(plan), ["--no-deps", "--require-hashes", "-r", QuoteString(path)]


@operation()
def filled(plan: VenvPlan):
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
    if plan.relay_dir and plan.lock:
        yield from _relayed(plan)
        yield StringCommand("touch", QuoteString(marker))
        return
    pip = ""
    if not fresh(host.get_fact(VenvPackages, plan.venv_dir)):  # it holds downloaded code: a pip-only venv
        pip_venv = f"{plan.venv_dir}.pip"
        yield remote.shell("venv_create.sh", plan.python, pip_venv)
        pip = f"{pip_venv}/bin/pip"
    if plan.pip_downloader:  # first the pinned pip, which then downloads the rest
        pip_step = yield from _tool_step(plan, "pip", plan.pip_downloader_requirement)
        yield from downloads(plan, [pip_step], pip=pip)
        yield pinned_pip_installed(plan, pip_step[2], pip)
    torch = plan.requirements.get("torch")
    uv_step: Step | None = None
    steps: list[Step] = []
    if plan.installer == "uv":  # the installer's own wheel
        uv_step = yield from _tool_step(plan, "uv", plan.uv_requirement)
    if plan.lock:
        # every file is known: torch, the rest in parts, and uv, downloaded at once
        lock = plan.lock_file
        rest = [line for line in plan.lock.splitlines() if line.strip() and not line.startswith("torch==")]
        parts = max(1, min(DOWNLOAD_PARTS, len(rest)))
        yield private_upload.put(lock, plan.lock.encode(), "644")
        yield remote.shell("lock_split.sh", lock, str(parts))  # requirements.lock -> .torch, .rest.0 ...
        exactly = ["--no-deps", "--require-hashes", "-r"]
        steps = [("torch", torch_sources(plan), [*exactly, QuoteString(f"{lock}.torch")])] if torch else []
        steps += [
            (
                f"index{part + 1}" if parts > 1 else "index",
                index_sources(plan),
                [*exactly, QuoteString(f"{lock}.rest.{part}")],
            )
            for part in range(parts)
        ]
        yield from downloads(plan, [*steps, *([uv_step] if uv_step else [])], at_once=True, pip=pip)
    else:
        steps = []
        if torch:
            steps.append(("torch", torch_sources(plan), ["--no-deps", QuoteString(pip_requirement("torch", torch))]))
        # Then the pins and every dependency, torch's too, from the index; torch itself (a +variant
        # version, which PyPI never has) resolves only to the wheel just fetched into the wheelhouse.
        pins = [QuoteString(pip_requirement(k, v)) for k, v in plan.requirements.items()]
        steps.append(("index", [*index_sources(plan), "--find-links", plan.wheelhouse], pins))
        yield from downloads(plan, [*steps, *([uv_step] if uv_step else [])], pip=pip)
        yield remote.python("python3", "wheel_lock.py", plan.wheelhouse)
    if pip:
        yield StringCommand("rm", "-rf", QuoteString(pip.removesuffix("/bin/pip")))
    if plan.lock_store and not plan.lock:  # the wheelhouse is complete only once its lock is checked and kept
        yield private_upload.read(plan.lock_file, partial(_save_lock, local_path=plan.lock_store, plan=plan))
    yield StringCommand("touch", QuoteString(marker))
