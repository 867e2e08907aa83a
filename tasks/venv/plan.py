"""What every venv step of a host shares, decided once: where the venv goes (keyed by pins, sources and
Python, beside the one in use), the wheelhouse and snapshot on the persistent path, pip's sources and
the lock the controller keeps. Pure: settings and decisions in, a VenvPlan out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from planner.assessment import Decisions
from planner.tables import (
    PIP_DOWNLOADER_PYTHON,
    PIP_DOWNLOADER_SHA256,
    PIP_DOWNLOADER_VERSION,
    UV_SHA256,
    UV_VERSION,
)
from config import state_seal
from config.layout import Layout
from config.settings import Settings

# Extras to install with a package (the verifier calls Triton over HTTP and gRPC).
EXTRAS = {"tritonclient": "[http,grpc]"}


def pip_requirement(name: str, version: str) -> str:
    """An exact pip requirement, with the package's extras."""
    return f"{name}{EXTRAS.get(name, '')}=={version}"


def wheelhouse_key(requirements: dict[str, str], sources: list[str]) -> str:
    """A wheelhouse per set of pins and sources: a changed pin downloads into a new one."""
    text = "\n".join([*(f"{k}=={v}" for k, v in sorted(requirements.items())), *sources])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# A venv snapshot's file name ends by how it is compressed; venv_restore.sh reads it from there.
SNAPSHOT_SUFFIXES = {"none": ".tar", "gzip": ".tar.gz", "zstd": ".tar.zst"}


def snapshot_codec(setting: str, has_zstd: bool) -> str:
    """venv_snapshot_compression as this host can do it: auto is zstd where the host has the zstd
    command (Ubuntu images do), else gzip, which every host has."""
    if setting == "auto":
        return "zstd" if has_zstd else "gzip"
    return setting


def snapshot_key(wheelhouse_key_: str, python: str, venv_dir: str) -> str:
    """A snapshot per wheelhouse, interpreter and place: a venv names both its python and its path."""
    return hashlib.sha256(f"{wheelhouse_key_}\n{python}\n{venv_dir}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class VenvPlan:
    """What every venv step shares, decided once per host (`plan`): where the venv goes, from which
    Python, with which pins, the wheelhouse and snapshot on the persistent path, pip's sources."""

    venv_dir: str
    python: str  # the interpreter that makes the venv
    python_minor: str  # "3.11": the stub's minor version
    requirements: dict[str, str]  # name -> exact version
    wheelhouse: str = ""
    pip_cache: str = ""
    snapshot: str = ""  # a tar of a finished venv on the persistent path; "" = none
    restore_token: str = ""  # names the background restore job of this run
    snapshot_sha256: str = ""  # the snapshot's sha256 as the controller kept it when it was written; "" = none
    snapshot_digest_store: str = ""  # where on the controller this host's snapshot digest is kept; "" = not kept
    torch_index: str | None = None
    index_url: str = ""
    find_links: str = ""
    cert: str = ""  # a CA bundle for pip instead of certifi's (a standalone Python's pip)
    lock: str = ""  # the venv's lock kept on the controller (every package, with its sha256); "" = none yet
    lock_store: str = ""  # where on the controller the lock made by this run is kept; "" = not kept
    lock_trusted: frozenset[str] = frozenset()  # packages whose files may have no published digest (TOFU)
    offline: bool = False  # no index: a venv that holds the pins is kept without filling the wheelhouse
    installer: str = "pip"  # what installs the wheelhouse into the venv: "uv" (its wheel in tools/) or "pip"
    tools: str = ""  # where uv's binary is unpacked (local disk, beside the installs)
    relay_dir: str = ""  # the controller's cache a kept lock's wheels come through (downloads_via_controller)
    uv_wheel: tuple[str, str, str] = ("", "", "")  # uv's wheel where relayed: (URL, sha256, file name)

    @property
    def uv_requirement(self) -> str:
        """uv pinned, with the sha256 of each platform's wheel (pip takes the one for this host)."""
        return f"uv=={UV_VERSION} " + " ".join(f"--hash=sha256:{h}" for h in UV_SHA256) + "\n"

    @property
    def pip_downloader(self) -> str:
        """The pinned pip's wheel in the wheelhouse's tools/ (tables.PIP_DOWNLOADER_VERSION), installed into
        the venv that downloads the wheelhouse where its Python runs it; "" where that Python is older."""
        try:
            minor = tuple(int(part) for part in self.python_minor.split("."))
        except ValueError:
            return ""
        if not self.wheelhouse or minor < PIP_DOWNLOADER_PYTHON:
            return ""
        return f"{self.wheelhouse}/tools/pip-{PIP_DOWNLOADER_VERSION}-py3-none-any.whl"

    @property
    def pip_downloader_requirement(self) -> str:
        """The pinned pip with its sha256: the one file pip may fetch for it."""
        return f"pip=={PIP_DOWNLOADER_VERSION} --hash=sha256:{PIP_DOWNLOADER_SHA256}\n"

    @property
    def snapshot_digest(self) -> str:
        """Where venv_snapshot.sh leaves the snapshot's sha256 on the host for the controller (root's local
        disk, beside the venv: never on the persistent path, whose writers could rewrite it)."""
        return f"{self.venv_dir}.snapshot-sha256"

    @property
    def python_dir(self) -> str:
        """The directory the venv's interpreter links point into (its base Python's)."""
        return self.python.rsplit("/", 1)[0] or "/"

    @property
    def lock_file(self) -> str:
        """The lock on the host: what the wheelhouse holds, each file with its sha256."""
        return f"{self.wheelhouse}/requirements.lock"


def lock_name(python_minor: str, variant: str, key: str) -> str:
    """The lock's file name on the controller: one per Python, torch variant and wheelhouse key."""
    return f"venv-py{python_minor}-{variant}-{key}.lock"


def _key(settings: Settings, decisions: Decisions, pins: dict[str, str] | None = None) -> str:
    """The wheelhouse key of this host's pins (the venv's, or a model environment's) and sources."""
    return wheelhouse_key(
        decisions.venv_pins if pins is None else pins,
        [decisions.torch_index or "", settings.pip_index_url, settings.pip_find_links],
    )


def venv_name(key: str, python_path: str, python_minor: str) -> str:
    """A venv's folder name: its wheelhouse key (the lock's, see lock_name) and the Python that makes it."""
    digest = hashlib.sha256(f"{key}\n{python_path}".encode()).hexdigest()[:12]
    return f"{digest}-py{python_minor}"


def model_env_target(settings: Settings, layout: Layout, decisions: Decisions, model: str) -> str:
    """A model's own environment (decisions.model_envs), in `layout.model_envs`: named by the model and by its
    pins, sources and Python as a venv is, so a change builds a new one beside the one its stubs run."""
    key = _key(settings, decisions, decisions.model_envs[model])
    return f"{layout.model_envs}/{model}-{venv_name(key, str(decisions.python_path), str(decisions.python))}"


def model_env_targets(settings: Settings, layout: Layout, decisions: Decisions) -> dict[str, str]:
    """Each model with an environment of its own -> where that environment is."""
    return {name: model_env_target(settings, layout, decisions, name) for name in sorted(decisions.model_envs)}


def target(settings: Settings, layout: Layout, decisions: Decisions) -> str:
    """The venv directory for these pins, sources and Python, beside the others in `layout.venvs`:
    a change builds a new venv while the server goes on running the old one."""
    return f"{layout.venvs}/{venv_name(_key(settings, decisions), str(decisions.python_path), str(decisions.python))}"


def apt_digest_store(settings: Settings, host_name: str) -> str:
    """Where the controller keeps this host's apt cache manifest digest (beside the venv locks and the
    snapshot digests: only the controller writes there); "" where venv_lock_dir is "" (none kept)."""
    store = settings.on_controller(settings.venv_lock_dir)
    return str(store / "apt" / host_name.replace("/", "_") / "manifest.sha256") if store else ""


def snapshot_digest_name(host_name: str, snapshot: str) -> str:
    """The controller's record of a host's snapshot digest, under the lock folder: per host (each host's tar
    differs), per snapshot."""
    return f"snapshots/{host_name.replace('/', '_')}/{snapshot.rsplit('/', 1)[-1]}.sha256"


def plan(
    settings: Settings,
    layout: Layout,
    decisions: Decisions,
    find_links: str,
    restore_token: str,
    codec: str = "none",
    host_name: str = "",
    model: str = "",
) -> VenvPlan:
    """The host's venv plan (or, with model, that model's own environment's): the wheelhouse keyed by pins
    and sources, the snapshot by that key (its suffix names its compression, codec), the Python and the
    venv's path, and the lock the controller keeps for them (read here, once)."""
    python, python_path = decisions.python, decisions.python_path
    if python is None or python_path is None:
        raise ValueError("no Python was chosen for the venv: the host has a blocker (see the audit)")
    pins = decisions.model_envs[model] if model else decisions.venv_pins
    key = _key(settings, decisions, pins)
    venv_dir = model_env_target(settings, layout, decisions, model) if model else target(settings, layout, decisions)
    snapshots = layout.model_env_snapshots(model) if model else layout.venv_snapshots
    snapshot = f"{snapshots}/{snapshot_key(key, python_path, venv_dir)}{SNAPSHOT_SUFFIXES[codec]}"
    lock_store, lock, digest_store, digest = "", "", "", ""
    store = settings.on_controller(settings.venv_lock_dir)
    if store:
        lock_store = str(store / lock_name(python, decisions.torch_variant or "cpu", key))
        lock = state_seal.trusted(Path(lock_store)) or ""  # "": none kept, or its seal disagrees (made anew)
        if settings.venv_snapshot and host_name:
            digest_store = str(store / snapshot_digest_name(host_name, snapshot))
            digest = (state_seal.trusted(Path(digest_store)) or "").strip()
    return VenvPlan(
        venv_dir=venv_dir,
        python=python_path,
        python_minor=python,
        requirements=pins,
        wheelhouse=f"{layout.wheelhouse_root}/{key}",
        pip_cache=layout.pip_cache,
        snapshot=snapshot if settings.venv_snapshot else "",
        restore_token=restore_token,
        snapshot_sha256=digest,
        snapshot_digest_store=digest_store,
        torch_index=decisions.torch_index,
        index_url=settings.pip_index_url,
        find_links=find_links,
        cert=decisions.pip_cert,
        lock=lock,
        lock_store=lock_store,
        lock_trusted=settings.lock_trusted,
        offline=settings.offline,
        installer=settings.venv_installer,
        tools=layout.tools,
    )
