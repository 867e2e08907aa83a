"""Read one host for a deploy: its settings, every fact the rules need, and the rules' assessment."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pyinfra.api.host import Host
from pyinfra.facts.files import Directory, File
from pyinfra.facts.hardware import Cpus

from config.layout import Layout
from config.settings import Settings, load, load_inventory, record_name
from facts.disk import FreeSpace
from facts.files import TreeEntries, UnsafeAncestors, UserAccess
from facts.front import FrontState
from facts.libraries import LinkerCache, MissingLibraries
from facts.nvidia import Nvidia
from facts.ports import ListeningPorts
from facts.python import PythonInterpreters
from facts.system import Account, CRuntime, InitSystem, MachineId, OsRelease
from facts.triton import TritonInstall
from facts.venv import VenvPackages
from planner.rules import Assessment, HostFacts, assess
from planner.tables import SYSTEM_CA_BUNDLE
from run import batch, timings
from tasks.server.front_plan import upgrade_mode
from tasks.triton.image_config import image_config
from tasks.venv.plan import model_env_targets


def triton_elf_files(home: str, backends: list[str]) -> list[str]:
    """The ELF files of an install that must load: server, backends, python stub, cache."""
    files = [
        f"{home}/bin/tritonserver",
        f"{home}/caches/local/libtritoncache_local.so",
        f"{home}/backends/python/triton_python_backend_stub",
    ]
    files.extend(f"{home}/backends/{b}/libtriton_{b}.so" for b in backends)
    return files


def install_paths(settings: Settings) -> list[str]:
    """Where root installs, runs from and keeps caches: no other user may be able to change them."""
    return [settings.triton_home, settings.venv_dir, settings.persist_dir]


def gather(host: Host, settings: Settings) -> HostFacts:
    """Read the host (changing nothing) and return the facts the rules need."""
    layout = Layout(settings)
    access = host.get_fact(UserAccess, settings.triton_user, [layout.persist, settings.triton_home])
    pythons = host.get_fact(PythonInterpreters, settings.triton_user)
    cache = host.get_fact(LinkerCache)
    triton = host.get_fact(TritonInstall, layout.current)
    env_files = [host.get_fact(File, layout.profile), host.get_fact(File, layout.launcher)]
    if settings.python_standalone_url:
        standalone = bool(host.get_fact(File, f"{layout.python_standalone_home}/.provisioner"))
        uv_minors: list[str] = []
    else:  # uv's CPythons: a marker per minor version, written once one is installed and checked
        standalone = False
        marked = host.get_fact(TreeEntries, layout.uv_pythons, "children")
        uv_minors = [name.removeprefix(".provisioner-") for name in marked if name.startswith(".provisioner-")]
    os_release = host.get_fact(OsRelease)
    image, image_read = None, ""
    if settings.triton_source == "image":  # its config before its layers: the plan checks it first
        image, image_read = image_config(host, settings, layout.images, os_release["arch"] if os_release else "")
    return HostFacts(
        os=os_release,
        machine_id=host.get_fact(MachineId),
        c_runtime=host.get_fact(CRuntime),
        pythons=pythons,
        nvidia=host.get_fact(Nvidia),
        linker_cache=cache,
        free_install=host.get_fact(FreeSpace, settings.triton_home),
        free_venv=host.get_fact(FreeSpace, settings.venv_dir),
        free_persist=host.get_fact(FreeSpace, settings.persist_dir),
        triton=triton,
        venv=host.get_fact(VenvPackages, settings.venv_dir),
        ports=host.get_fact(ListeningPorts),
        front_pid=host.get_fact(FrontState, layout.run)["pid"],
        init=host.get_fact(InitSystem),
        hf_home_exists=bool(host.get_fact(Directory, layout.hf_home)),
        persist_dir=host.get_fact(Directory, layout.persist) or None,
        persist_blocked=access.get(layout.persist, ""),
        home_blocked=access.get(settings.triton_home, ""),
        unsafe_paths=host.get_fact(UnsafeAncestors, install_paths(settings)),
        server_account=host.get_fact(Account, settings.triton_user, layout.made_users),
        env_files_exist=all(env_files),
        standalone_python_exists=standalone,
        uv_pythons=uv_minors,
        leftover_installs=[n for n in host.get_fact(TreeEntries, layout.versions, "children") if n.endswith(".tmp")],
        system_ca_bundle=bool(host.get_fact(File, SYSTEM_CA_BUNDLE)),
        cpus=host.get_fact(Cpus),
        image=image,
        image_read=image_read,
    )


@dataclass(frozen=True)
class HostReading:
    """One host as every deploy starts from it: its settings, layout, facts and their assessment."""

    settings: Settings
    layout: Layout
    facts: HostFacts
    assessment: Assessment

    @property
    def gpu_ids(self) -> list[int]:
        return [g["index"] for g in (self.facts.nvidia or {}).get("gpus", [])]


def missing_libraries(host: Host, layout: Layout, facts: HostFacts, libpython_dir: str | None) -> dict[str, list[str]]:
    """The install's ELF files and what the loader cannot find for each, with the LD_LIBRARY_PATH the
    server runs with (which depends on the Python the rules chose)."""
    triton = facts.triton
    if not (triton and triton["server"]):
        return {}
    files = triton_elf_files(layout.current, triton["backends"])
    lib_path = ":".join(layout.library_dirs(libpython_dir))
    return {path: libs for path, libs in host.get_fact(MissingLibraries, files, lib_path).items() if libs}


def read_host(host: Host, inventory, overrides: Mapping[str, Any] | None = None) -> HostReading:
    """Validate every host's settings (a bad one stops the run before any host is read), then read this one:
    its facts, the rules' choices, the install's libraries as the chosen Python's server loads them.
    overrides: settings over the host's data (a packaged deploy's arguments), validated alike."""
    load_inventory(inventory)
    settings = load({**host.data.dict(), **(overrides or {})}, host.name)
    state_dir = Path(settings.controller_state_dir)
    if state_dir.is_relative_to(settings.persist_dir):  # a notebook's (pip's cache may have made it): root's alone
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        state_dir.chmod(0o700)
    layout = Layout(settings)
    records = settings.on_controller(settings.provision_records_dir)
    deploy = Path(host.state.current_deploy_filename or "deploy").stem
    facts_list = records / f"{record_name(host.name)}.{deploy}.facts.json" if records else None
    batch.prefetch(host, facts_list)  # what the last run asked, in one round trip; kept again at its end
    facts = gather(host, settings)
    settings = upgrade_mode(settings, bool(facts.init and facts.init["systemd"]))  # "auto" as this host has it
    decisions = assess(facts, settings).decisions
    # what depends on the rules' choices: the libraries as the chosen Python's server loads them, and the
    # models' own environments, whose folders are named by the Python and pins chosen
    envs = model_env_targets(settings, layout, decisions) if decisions.python_path else {}
    facts = replace(
        facts,
        triton_missing_libs=missing_libraries(host, layout, facts, decisions.libpython_dir),
        model_envs={where: host.get_fact(VenvPackages, where) for where in envs.values()},
    )
    return HostReading(settings, layout, facts, assess(facts, settings))


def read_host_timed(host: Host, overrides: Mapping[str, Any] | None = None) -> HostReading:
    """read_host for a provision or serve run, its seconds recorded as the run's `facts and rules` step."""
    started = time.monotonic()
    reading = read_host(host, host.state.inventory, overrides)
    timings.record(host.state, host.name, time.monotonic() - started, reading.settings.step_timings_path)
    return reading
