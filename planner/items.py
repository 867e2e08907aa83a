"""One line of the audit (an Item) and its one-line makers: what every rule module returns, kept
apart from the assessment so that the rules and the assessment need not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "missing", "incompatible"]


@dataclass(frozen=True)
class Item:
    """One line of the audit: a thing checked, its status, why, and the fix."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    blocker: bool = False  # provisioning cannot fix it: provision refuses to start
    installed_part: bool = False  # a part of the install the server runs from (Triton, stub, venv, env)


def ok(name: str, detail: str) -> Item:
    return Item(name, "ok", detail)


def missing(name: str, detail: str, fix: str) -> Item:
    """Absent, and provisioning installs it."""
    return Item(name, "missing", detail, fix)


def incompatible(name: str, detail: str, fix: str) -> Item:
    """Wrong, and provisioning replaces it (not a blocker)."""
    return Item(name, "incompatible", detail, fix)


def blocker(name: str, detail: str, fix: str) -> Item:
    """Wrong, and provisioning cannot fix it: provision refuses before any change."""
    return Item(name, "incompatible", detail, fix, blocker=True)
