"""What a provision decides after the rules and before any change, from what it read of the host: the
venv's place and sources, whether the host is refused (a zstd it lacks, offline caches with gaps) and
what to print then, and whether to ask the artifact's size. Pure: the deploy reads, this decides."""

from __future__ import annotations

from dataclasses import dataclass

from config.layout import Layout
from config.secrets import has_credentials
from config.settings import Settings
from planner.assessment import Decisions
from planner.offline import Gap
from tasks.venv.plan import VenvPlan, plan, snapshot_codec


@dataclass(frozen=True)
class Refusal:
    """A host refused before any change: the lines shown, and the one-line reason of the run's summary."""

    shown: list[str]
    reason: str


def venv_plan(
    settings: Settings,
    layout: Layout,
    decisions: Decisions,
    has_zstd: bool,
    restore_token: str,
    host_name: str = "",
    model: str = "",
) -> VenvPlan:
    """The venv plan of this host (or, with model, of that model's own environment): wheels from the
    uploaded wheelhouse where find-links is upload:, the snapshot compressed as this host can."""
    find_links = settings.pip_find_links
    if find_links.startswith("upload:"):  # air-gapped: wheels copied from the controller, changed files only
        find_links = layout.uploaded_wheels
    codec = snapshot_codec(settings.venv_snapshot_compression, has_zstd)
    token = "" if model else restore_token  # a model's environment is unpacked in its own step, not in the background
    return plan(settings, layout, decisions, find_links, token, codec=codec, host_name=host_name, model=model)


def wants_zstd(settings: Settings) -> bool:
    """Whether the host's zstd command matters (a snapshot that may be compressed with it)."""
    return settings.venv_snapshot and settings.venv_snapshot_compression in ("auto", "zstd")


def refusal(
    host_name: str,
    settings: Settings,
    has_zstd: bool,
    gaps: list[Gap],
    sdists: tuple[str, ...] = (),
    unsafe_lock: tuple[str, str] = ("", ""),
) -> Refusal | None:
    """Why this host is refused before any change, or None: zstd asked for and absent; offline and the
    caches lacking something (each named with what to fetch); pins the index has only source archives for
    (sdists: tasks/venv/lock_digests.sdist_only); a kept lock whose files, relayed by the controller, are named
    as no wheel is (unsafe_lock: the lock's path, those names)."""
    lock_store, unsafe_names = unsafe_lock
    if unsafe_names:
        reason = f"the kept lock {lock_store} names files that are no wheel's name: {unsafe_names}"
        fix = "remove that lock (a provision makes a new one) and run again"
        return Refusal([f"== {host_name}: refused, nothing changed: {reason}; {fix}"], f"{reason}; {fix}")
    if sdists:
        reason = (
            f"{', '.join(sdists)}: the index has only a source archive (no wheel) of that version, and its build "
            "would run its author's code as root: only wheels are installed"
        )
        fix = "pin a version that publishes a wheel, or build one and serve it from pip_find_links"
        return Refusal([f"== {host_name}: {reason} (fix: {fix})"], f"{reason} (fix: {fix})")
    if settings.venv_snapshot and settings.venv_snapshot_compression == "zstd" and not has_zstd:
        reason = "venv_snapshot_compression is zstd: the host has no zstd command"
        return Refusal(
            [f"== {host_name}: {reason} (fix: install zstd, or set it to auto)"],
            f"{reason} (fix: install zstd, or set venv_snapshot_compression = auto)",
        )
    if gaps:
        shown = [f"== offline: the caches of {host_name} lack {len(gaps)} thing(s)"]
        shown += [f"  MISSING  {g.what}: {g.detail}\n           fetch: {g.fetch}" for g in gaps]
        return Refusal(shown, "offline, the caches lack " + "; ".join(g.line() for g in gaps))
    return None


def asks_artifact_size(settings: Settings, decisions: Decisions, cached: bool) -> bool:
    """Whether the plan asks the host for the artifact's size (a HEAD request through its proxy): not when
    cached or offline, and never for a URL with credentials."""
    image = settings.triton_source == "image"  # a registry's API, not a file: the pull says its size
    return not (cached or image or settings.offline or has_credentials(decisions.chosen_artifact.url))
