"""Offline runs (offline = True): what the caches on the persistent path must hold, read from the host
before any change. Each gap is named with what to fetch; provision refuses the host while any is left."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyinfra import host
from pyinfra.facts.deb import DebPackages
from pyinfra.facts.files import Sha256File

from config.layout import Layout
from config.secrets import mask
from config.settings import Settings
from facts.apt import AptDownloads
from facts.files import TreeEntries
from facts.hub import HubSnapshot
from planner.assessment import Decisions
from planner.tables import UV_VERSION, UV_WHEELS
from tasks.triton.build import cache_proof
from tasks.venv.plan import VenvPlan
from tasks.venv.state import wheels_at_hand


@dataclass(frozen=True)
class Gap:
    """One thing an offline provision would need the network for."""

    what: str
    detail: str
    fetch: str

    def line(self) -> str:
        return f"{self.what}: {self.detail} (fetch: {self.fetch})"


def gaps(
    settings: Settings,
    layout: Layout,
    decisions: Decisions,
    venv_plan: VenvPlan,
    artifact_cached: bool,
    uv_pythons: list[str],
    env_plans: Mapping[str, VenvPlan] | None = None,
) -> list[Gap]:
    """Every gap of this host's caches for this provision; [] where it can run without the network.
    uv_pythons: the minor versions of the CPythons uv already installed here; env_plans: the models' own
    environments (model name -> plan)."""
    env_plans = env_plans or {}
    out: list[Gap] = []
    artifact = decisions.chosen_artifact
    if not artifact_cached:
        out.append(
            Gap(
                "Triton artifact",
                f"{cache_proof(artifact)} is not in the cache",
                f"{mask(artifact.url)} (sha256 {artifact.sha256})",
            )
        )
    if decisions.python_source == "standalone":
        archive = layout.python_standalone_archive
        if host.get_fact(Sha256File, path=archive) != settings.python_standalone_sha256:
            out.append(
                Gap(
                    "standalone Python",
                    f"{archive} is not in the cache",
                    f"{mask(settings.python_standalone_url)} (sha256 {settings.python_standalone_sha256})",
                )
            )
    if decisions.python_source == "uv" and decisions.python not in uv_pythons:
        out.extend(_uv_gaps(settings, layout, decisions))
    have = host.get_fact(DebPackages)
    to_add = [p for p in decisions.apt_packages if p not in have]
    if to_add:
        needs = host.get_fact(AptDownloads, layout.apt_cache, to_add)
        online = "run provision once with the network (offline = False), which fills the cache"
        if not needs["lists"]:
            out.append(Gap("apt", f"{layout.apt_cache} holds no package lists for {', '.join(to_add)}", online))
        elif needs["unknown"] or needs["errors"]:
            why = "; ".join([*(f"unknown package {p}" for p in needs["unknown"]), *needs["errors"]])
            out.append(Gap("apt", f"the cached lists cannot install {', '.join(to_add)}: {why}", online))
        elif needs["debs"]:
            out.append(
                Gap(
                    "apt",
                    f"{len(needs['debs'])} .deb(s) missing from {layout.apt_cache}/archives",
                    f"{', '.join(needs['debs'])} (apt-get download on a host of this release), or {online}",
                )
            )
    for what, plan in [("wheels", venv_plan), *((f"model {m} environment", p) for m, p in sorted(env_plans.items()))]:
        if not wheels_at_hand(plan):
            fetch = (
                f"the files that {plan.lock_store} names (pip download --no-deps --require-hashes -r LOCK -d DIR)"
                if plan.lock
                else "run provision once with the network (offline = False), which fills it and keeps a lock"
            )
            out.append(Gap(what, f"the wheelhouse {plan.wheelhouse} is not complete and no venv snapshot fits", fetch))
    for m in settings.models:
        if m.kind == "hub" and not host.get_fact(HubSnapshot, layout.hub_markers, m.repo, m.revision):
            out.append(
                Gap(
                    f"model {m.name}",
                    f"{m.repo}@{m.revision} is not in the HuggingFace cache {layout.hf_home}",
                    f"run provision once with the network (offline = False), which fetches {m.repo}",
                )
            )
    return out


def _uv_gaps(settings: Settings, layout: Layout, decisions: Decisions) -> list[Gap]:
    """uv's wheel and a CPython archive of the minor wanted, in the caches (uv checks its sha256 when it
    installs it, offline too)."""
    out = []
    arch = decisions.machine
    url, sha = UV_WHEELS.get(arch, ("", ""))
    if host.get_fact(Sha256File, path=layout.uv_wheel(UV_VERSION, arch)) != sha:
        out.append(
            Gap(
                "uv",
                f"{layout.uv_wheel(UV_VERSION, arch)} is not in the cache",
                f"{settings.uv_wheel_url or url} (sha256 {sha})",
            )
        )
    archives = host.get_fact(TreeEntries, layout.uv_python_cache, "children")
    if not any(f"cpython-{decisions.python}." in name for name in archives):
        where = (
            settings.python_downloads_json_url or settings.python_install_mirror or "python-build-standalone's releases"
        )
        out.append(
            Gap(
                "standalone Python",
                f"{layout.uv_python_cache} holds no CPython {decisions.python} archive for uv",
                f"run provision once with the network (offline = False): uv fetches it from {where}",
            )
        )
    return out
