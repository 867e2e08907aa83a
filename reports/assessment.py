"""Render an assessment: a readable table per host, and one JSON report for all hosts of a run."""

from __future__ import annotations

import json
from pathlib import Path

from config import state_seal
from config.secrets import mask, write_private
from config.settings import Settings
from planner.rules import Assessment, Decisions

_MARK = {"ok": "OK", "missing": "MISSING", "incompatible": "INCOMPATIBLE"}
# Reports of the hosts audited so far in this run (pyinfra loads the deploy file once per host).
_RUN: dict[str, dict] = {}


def table(host_name: str, assessment: Assessment) -> str:
    """Aligned lines: status, item, detail, and the fix under each item that is not OK."""
    rows = assessment.items
    width = max((len(i.name) for i in rows), default=4)
    problems = assessment.problems
    head = f"== audit of {host_name}: " + (
        "all OK" if not problems else f"{len(problems)} problem(s), {len(assessment.blockers)} blocker(s)"
    )
    lines = [head]
    for item in rows:
        lines.append(f"  {_MARK[item.status]:<12} {item.name:<{width}}  {item.detail}")
        if item.status != "ok" and item.fix:
            lines.append(f"  {'':<12} {'':<{width}}  fix: {item.fix}" + ("  [blocker]" if item.blocker else ""))
    return "\n".join(lines)


def record(host_name: str, assessment: Assessment, path: str) -> Path:
    """Add this host to the run's JSON report and rewrite it (masked, 0600, atomically)."""
    _RUN[host_name] = assessment.to_json()
    report = {"hosts": _RUN, "ok": all(h["ok"] for h in _RUN.values())}
    return write_private(Path(path), json.dumps(report, indent=2) + "\n")


def plan(
    host_name: str,
    settings: Settings,
    decisions: Decisions,
    artifact_cached: bool,
    server: str,
    artifact_size: int | None = None,
    artifact_installed: bool = False,
    relay: str = "",
) -> str:
    """What a provision will do on this host, printed before any change (and all that --dry prints);
    artifact_size: bytes to download, where the source said; relay: the controller's cache folder where the
    host's downloads go through it."""
    artifact = decisions.artifact
    python = {"standalone": "a standalone CPython", "uv": "a standalone CPython uv installs"}.get(
        decisions.python_source, "the host's"
    )
    torch_from = decisions.torch_index or " and ".join(
        x
        for x in (settings.pip_index_url or "PyPI", settings.pip_find_links and f"find-links {settings.pip_find_links}")
        if x
    )
    lines = [
        f"== plan for {host_name} (nothing is changed before this)",
        *(f"  FIX FIRST  {fix}" for fix in decisions.first_fixes),
        f"  python   {decisions.python} at {decisions.python_path} ({python}); "
        f"the python backend stub for {decisions.python}",
        *(f"           passed over {why}" for why in decisions.python_passed_over),
        f"  torch    {decisions.torch_requirement} from {mask(torch_from)}",
        "  lock     each file checked against the sha256 its index publishes; one with none is refused"
        + (f", but for {settings.lock_trust_on_first_use} (lock_trust_on_first_use)" if settings.lock_trusted else ""),
        f"  apt      {', '.join(decisions.apt_packages) + ' to add' if decisions.apt_packages else 'nothing to add'}",
    ]
    if artifact:
        size = f" ({_size(artifact_size)})" if artifact_size is not None else ""
        state = (
            "installed (its sha256 checked at the unpack; the cached copy is not read)"
            if artifact_installed
            else "cached, sha256 verified"
            if artifact_cached
            else f"to download{size} from {mask(artifact.url)}"
        )
        lines.append(
            f"  triton   {artifact.version or '(version from the tarball)'} sha256 {artifact.sha256[:12]}..., {state}"
        )
    for m in settings.models:
        pinned = not (m.kind == "hub" or m.from_hub) or _is_commit(m.revision)
        note = "" if pinned else " (revision not pinned: a branch or tag, it can move)"
        lines.append(f"  model    {m.name}: {m.source}{note}")
        if m.from_hub:
            lines.append(f"           fetched by the controller, each file checked: {m.model_folder}")
        if m.kind == "triton":
            lines.append("           as it is: its own config.pbtxt; proven with inputs made from that config")
            if m.name in decisions.model_envs:
                own = decisions.model_envs[m.name]
                differ = [f"{k}=={v}" for k, v in sorted(own.items()) if decisions.venv_pins.get(k) != v]
                shown = ", ".join(differ) or "no other"
                lines.append(f"           in a Python environment of its own: the venv's pins, and {shown}")
        elif m.name in decisions.model_serving:
            v = decisions.model_serving[m.name]
            batching = f"batches up to {v.max_batch_size}" if m.dynamic_batching and v.max_batch_size else "no batching"
            lines.append(f"           {v.instances} instance(s) x {v.threads} torch thread(s), {batching} ({v.why})")
    if relay and not settings.offline:
        lines.append(
            f"  fetch    through the controller's cache {relay} (downloads_via_controller): the artifact, a "
            "standalone Python or uv, and a kept lock's wheels, each checked again on the host"
        )
    if settings.offline:
        lines.append(f"  network  none (offline): everything from the caches on {settings.persist_dir}")
    if Path(settings.controller_state_dir).is_relative_to(settings.persist_dir):
        lines.append(_trust(settings.controller_state_dir))
    lines.append(f"  server   {server}")
    return "\n".join(lines)


def _trust(state_dir: str) -> str:
    """The plan's line for a controller whose state lies on the persistent path (a notebook's drive)."""
    found = state_seal.key()
    if found:
        return (
            f"  trust    the controller's locks and digests on the persistent path ({state_dir}) are sealed with "
            f"your key ({found[1]}): one altered on the drive is not trusted, its cache is checked anew; the "
            "models' files there (the hub's cache, hub folders) are read as they are"
        )
    return (
        f"  trust    the controller's state is on the persistent path ({state_dir}): whoever can write that drive "
        "is trusted as root here (its locks and digests decide what root installs); keep it a drive only you can "
        f"write, or seal it with a key of yours: {state_seal.KEY_NAME} (a Colab secret, or the environment)"
    )


def _size(n: int) -> str:
    """Bytes as people read them: MiB below a GiB, GiB with two decimals above."""
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB"


def _is_commit(revision: str) -> bool:
    return len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)
