"""The settings reference: every setting, its comment and default as group_data/all.py writes them (read
from that file, so it cannot drift from it), and each host's value where it differs; secrets masked.
Printed by deploy/settings.py."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from config.secrets import mask
from config.settings import DEFAULTS_FILE, SECRETS
from config.settings import defaults as settings_defaults

_SECTION = "# --- "


@dataclass(frozen=True)
class Entry:
    """One setting as group_data/all.py writes it."""

    section: str  # the "# --- Network ---" heading it stands under
    name: str
    comment: str  # the comment lines right above it, joined


def entries(text: str | None = None) -> list[Entry]:
    """Every setting of group_data/all.py (or of text written the same way), in its order."""
    text = DEFAULTS_FILE.read_text() if text is None else text
    lines = text.splitlines()
    out = []
    for node in ast.parse(text).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        comment: list[str] = []
        row = node.lineno - 2  # the line above, 0-based
        while row >= 0 and lines[row].startswith("#") and not lines[row].startswith(_SECTION):
            comment.insert(0, lines[row].lstrip("#").strip())
            row -= 1
        sections = [line for line in lines[: node.lineno - 1] if line.startswith(_SECTION)]
        section = sections[-1][len(_SECTION) :].rstrip("- ").strip() if sections else ""
        out.append(Entry(section, node.targets[0].id, " ".join(comment)))
    return out


def shown(name: str, value: Any) -> str:
    """A value as the reference prints it: a secret only as set or not, a URL's password masked."""
    if name in SECRETS:
        return "<set>" if value else '""'
    return mask(repr(value).replace("'", '"') if isinstance(value, str) else repr(value))


def render(hosts: Mapping[str, Mapping[str, Any]]) -> str:
    """The reference: per section, each setting with its default, the hosts whose value differs from it
    (host data: inventory, group data, --data), and its comment."""
    out: list[str] = [f"== settings ({DEFAULTS_FILE.parent.name}/{DEFAULTS_FILE.name}; {len(hosts)} host(s))"]
    section = None
    defaults = settings_defaults()
    for entry in entries():
        if entry.section != section:
            section = entry.section
            out.append(f"\n--- {section}")
        differing = {
            host: data[entry.name]
            for host, data in hosts.items()
            if entry.name in data and data[entry.name] != defaults.get(entry.name)
        }
        default = shown(entry.name, defaults.get(entry.name))
        where = "; ".join(f"{host}: {shown(entry.name, value)}" for host, value in differing.items())
        out.append(f"{entry.name} = {default}" + (f"    [{where}]" if where else ""))
        if entry.comment:
            out.append(f"    {entry.comment}")
    return "\n".join(out)
