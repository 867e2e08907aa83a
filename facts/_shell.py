"""Build a fact's remote command as a fixed script plus quoted arguments, never by pasting data."""

from __future__ import annotations

from pyinfra.api import QuoteString, StringCommand


def script_command(script: str, *args: str) -> StringCommand:
    """`sh -c SCRIPT _ ARG...`: the script reads its inputs as "$1", "$2", ... or "$@"."""
    return StringCommand("sh", "-c", QuoteString(script), "_", *(QuoteString(a) for a in args))
