"""What the rules produce: the host facts they read, the decisions provisioning acts on, and the
assessment that holds both with the audit's items (planner/items.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from facts.disk import FreeSpaceData
from facts.files import UnsafePart
from facts.image import ImageConfigData
from facts.nvidia import NvidiaData
from facts.ports import Listener
from facts.python import PythonInterpreter
from facts.system import AccountData, CRuntimeData, InitSystemData, OsReleaseData
from facts.triton import TritonInstallData
from facts.venv import VenvData
from planner.items import Item
from tasks.models.serving import Serving


@dataclass
class HostFacts:
    """The facts the rules read, as gathered from one host (planner/reading.py, facts/)."""

    os: OsReleaseData | None
    c_runtime: CRuntimeData
    pythons: list[PythonInterpreter]  # every interpreter, with what blocks the server's user
    nvidia: NvidiaData | None
    linker_cache: dict[str, list[str]]
    free_install: FreeSpaceData | None = None  # FreeSpace of triton_home
    free_venv: FreeSpaceData | None = None  # FreeSpace of venv_dir
    free_persist: FreeSpaceData | None = None  # FreeSpace of persist_dir
    triton: TritonInstallData | None = None  # TritonInstall of the server home
    triton_missing_libs: dict[str, list[str]] = field(default_factory=dict)
    venv: VenvData | None = None  # VenvPackages of venv_dir
    model_envs: dict[str, VenvData | None] = field(default_factory=dict)  # VenvPackages of each model's own env
    ports: dict[int, list[Listener]] = field(default_factory=dict)
    front_pid: int | None = None  # FrontState: our front (HAProxy) running on the server's ports, if any
    init: InitSystemData | None = None
    hf_home_exists: bool = False
    env_files_exist: bool = False
    system_ca_bundle: bool = False  # planner.tables.SYSTEM_CA_BUNDLE exists on the host
    standalone_python_exists: bool = False  # the standalone CPython of python_standalone_url is unpacked
    uv_pythons: list[str] = field(default_factory=list)  # minor versions of the CPythons uv installed, checked
    persist_dir: dict[str, Any] | None = None  # pyinfra's Directory fact of persist_dir: user, group, mode (755)
    persist_blocked: str = ""  # UserAccess: the directory on the way to persist_dir the server's user cannot enter
    home_blocked: str = ""  # UserAccess: the same on the way to triton_home
    unsafe_paths: dict[str, UnsafePart] = field(default_factory=dict)  # UnsafeAncestors of the install paths
    server_account: AccountData | None = None  # Account of triton_user: None where there is no such user
    cpus: int | None = None  # CPUs online (pyinfra's hardware.Cpus)
    image: ImageConfigData | None = None  # triton_image's config, read before its layers (run/image_config.py)
    image_read: str = ""  # where image was read from, or why it could not be before the pull
    machine_id: str = ""  # MachineId: who the host is (its records' key on the controller, with its name)
    leftover_installs: list[str] = field(default_factory=list)  # versions/*.tmp: unpacks cut off before the end

    @property
    def machine(self) -> str:
        """The host's machine ("x86_64", "aarch64"), as its OS reports it; x86_64 where unknown."""
        return (self.os["arch"] if self.os else "") or "x86_64"


@dataclass(frozen=True)
class Artifact:
    """The Triton artifact the settings name, decided once: where it comes from and goes."""

    url: str
    sha256: str
    version: str  # "" for a tarball: known once unpacked
    archive: str  # its path in the download cache on the host (of an image: the folder of its blobs)
    strip_components: int
    image: bool = False  # a container image pinned to sha256 (its digest's hex), pulled from a registry
    backends: tuple[str, ...] = ()  # the backends unpacked (of an image: those the models use); () all


@dataclass(frozen=True)
class Decisions:
    """What provisioning will install on this host, composed from each chooser's result."""

    artifact: Artifact | None = None
    python: str | None = None  # "3.11"
    python_path: str | None = None
    libpython_dir: str | None = None  # to add to LD_LIBRARY_PATH (not in the linker cache)
    python_source: str = "host"  # "host"; "standalone": python_standalone_url's CPython; "uv": one uv installs
    script_python: str | None = None  # a host python3 that runs the installer's own host scripts
    machine: str = "x86_64"  # the host's machine, for what is fetched per machine (uv's wheel)
    python_passed_over: tuple[str, ...] = ()  # host interpreters the server's user cannot run, with why
    pip_cert: str = ""  # a CA bundle for pip (the host's, for a standalone Python's pip)
    stub_fixes: dict[str, str] = field(default_factory=dict)  # stub's Python minor -> fix on this host
    torch_variant: str | None = None  # "cpu", "cu124"
    torch_requirement: str | None = None  # "torch==2.8.0+cpu"
    torch_index: str | None = None  # full index URL, or None
    apt_packages: list[str] = field(default_factory=list)
    venv_pins: dict[str, str] = field(default_factory=dict)  # name -> exact version in the venv
    # model name -> the exact pins of its own Python environment (a Triton folder whose pins clash with the venv's)
    model_envs: dict[str, dict[str, str]] = field(default_factory=dict)
    # what to fix first that does not stop the run (a notebook's persist_dir a reset wipes), for the plan
    first_fixes: tuple[str, ...] = ()
    # model name -> its copies, threads and batch sizes on this host (tasks/models/serving.py)
    model_serving: dict[str, Serving] = field(default_factory=dict)

    @property
    def chosen_artifact(self) -> Artifact:
        """The Triton artifact of a host with no blocker (the rules decide one for every such host)."""
        if self.artifact is None:
            raise ValueError("no Triton artifact was decided: the host has a blocker (see the audit)")
        return self.artifact

    @property
    def chosen_python(self) -> str:
        """The Python minor the server's stub and venv use, on a host with no blocker."""
        if self.python is None:
            raise ValueError("no Python was decided: the host has a blocker (see the audit)")
        return self.python

    @property
    def chosen_script_python(self) -> str:
        """The host python3 that runs the installer's own host scripts, on a host with no blocker."""
        if self.script_python is None:
            raise ValueError("no python3 for the host scripts was decided: the host has a blocker (see the audit)")
        return self.script_python


@dataclass(frozen=True)
class Assessment:
    items: list[Item]
    decisions: Decisions

    @property
    def blockers(self) -> list[Item]:
        return [i for i in self.items if i.blocker]

    @property
    def problems(self) -> list[Item]:
        return [i for i in self.items if i.status != "ok"]

    @property
    def not_provisioned(self) -> list[Item]:
        """Parts of the install that are missing or wrong: serving needs a provision first."""
        return [i for i in self.problems if i.installed_part]

    def to_json(self) -> dict[str, Any]:
        return {"ok": not self.problems, "items": [i.__dict__ for i in self.items], "decisions": asdict(self.decisions)}
