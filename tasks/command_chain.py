"""Commands chained into one shell command: each after the one before succeeded, and a rollback that runs
where one failed (a change of the server and what brings back what served before)."""

from __future__ import annotations

from pyinfra.api import QuoteString, StringCommand


def all_of(*commands) -> list:
    """`{ A && B && ...; }` as bits of one StringCommand."""
    bits: list = ["{"]
    for i, c in enumerate(commands):
        bits += [*(["&&"] if i else []), c]
    return [*bits, ";", "}"]


def with_rollback(new: list, back: list, told: str, failed: str, rolling: str) -> StringCommand:
    """`{ NEW; } || { say rolling, BACK, then fail saying told (or failed, when the rollback failed too) }`."""
    return StringCommand(
        *all_of(*new), "||", "{",
        "echo", QuoteString(f"--- rolling back: {rolling}"), ">&2", ";",
        *all_of(*back), "&&", "{", "echo", QuoteString(told), ">&2", ";", "}",
        "||", "echo", QuoteString(failed), ">&2", ";", "exit", "1", ";", "}",
    )  # fmt: skip
