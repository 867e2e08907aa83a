"""Read one host for a deploy: its settings, every fact the rules need, and the rules' assessment."""

from __future__ import annotations

from dataclasses import dataclass

from pyinfra.api.host import Host
from pyinfra.facts.files import Directory, File

from compat.rules import Assessment, HostFacts, assess
from compat.tables import SYSTEM_CA_BUNDLE
from config.layout import Layout
from config.settings import Settings, load, load_inventory
from facts.disk import FreeSpace
from facts.libraries import LinkerCache, MissingLibraries
from facts.nvidia import Nvidia
from facts.ports import ListeningPorts
from facts.python import PythonInterpreters
from facts.system import CRuntime, InitSystem, OsRelease
from facts.triton import TritonInstall
from facts.venv import VenvPackages


def triton_elf_files(home: str, backends: list[str]) -> list[str]:
    """The ELF files of an install that must load: server, backends, python stub, cache."""
    files = [
        f"{home}/bin/tritonserver",
        f"{home}/caches/local/libtritoncache_local.so",
        f"{home}/backends/python/triton_python_backend_stub",
    ]
    files.extend(f"{home}/backends/{b}/libtriton_{b}.so" for b in backends)
    return files


def gather(host: Host, settings: Settings) -> HostFacts:
    """Read the host (changing nothing) and return the facts the rules need."""
    layout = Layout(settings)
    pythons = host.get_fact(PythonInterpreters)
    cache = host.get_fact(LinkerCache)
    triton = host.get_fact(TritonInstall, layout.current)
    missing: dict[str, list[str]] = {}
    if triton and triton["server"]:
        libpythons = [py["libpython"] for py in pythons.values() if py["libpython"]]
        if settings.python_standalone_url:  # the server runs with the standalone's lib/ too
            libpythons.append(layout.python_standalone_libpython)
        lib_path = layout.library_path(libpythons, cache)
        missing = {
            path: libs
            for path, libs in host.get_fact(
                MissingLibraries, triton_elf_files(layout.current, triton["backends"]), lib_path
            ).items()
            if libs
        }
    env_files = [host.get_fact(File, layout.profile), host.get_fact(File, layout.launcher)]
    standalone = settings.python_standalone_url and host.get_fact(File, f"{layout.python_standalone_home}/.provisioner")
    return HostFacts(
        os=host.get_fact(OsRelease),
        c_runtime=host.get_fact(CRuntime),
        pythons=pythons,
        nvidia=host.get_fact(Nvidia),
        linker_cache=cache,
        free_install=host.get_fact(FreeSpace, settings.triton_home),
        free_venv=host.get_fact(FreeSpace, settings.venv_dir),
        free_persist=host.get_fact(FreeSpace, settings.persist_dir),
        triton=triton,
        triton_missing_libs=missing,
        venv=host.get_fact(VenvPackages, settings.venv_dir),
        ports=host.get_fact(ListeningPorts),
        init=host.get_fact(InitSystem),
        hf_home_exists=bool(host.get_fact(Directory, layout.hf_home)),
        env_files_exist=all(env_files),
        standalone_python_exists=bool(standalone),
        system_ca_bundle=bool(host.get_fact(File, SYSTEM_CA_BUNDLE)),
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


def read_host(host: Host, inventory) -> HostReading:
    """Validate every host's settings (a bad one stops the run before any host is read), then read this one."""
    load_inventory(inventory)
    settings = load(host.data.dict(), host.name)
    facts = gather(host, settings)
    return HostReading(settings, Layout(settings), facts, assess(facts, settings))
