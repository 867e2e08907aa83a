"""Render an assessment: a readable table per host, and one JSON report for all hosts of a run."""

from __future__ import annotations

import json
import os
from pathlib import Path

from compat.rules import Assessment

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
    """Add this host to the run's JSON report and rewrite it (mode 0644, atomically)."""
    _RUN[host_name] = assessment.to_json()
    dest = Path(path)
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_text(json.dumps({"hosts": _RUN, "ok": all(h["ok"] for h in _RUN.values())}, indent=2) + "\n")
    os.replace(tmp, dest)
    return dest
