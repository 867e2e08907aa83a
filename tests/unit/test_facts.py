"""Each fact's process() on fixtures of command output: one file per case, output in, fact out."""

from __future__ import annotations

import importlib
import json
import shlex
from pathlib import Path

import pytest
from pyinfra.api import StringCommand

import remote

FIXTURES = Path(__file__).parents[1] / "fixtures" / "facts"
CASES = sorted(FIXTURES.glob("*/*.json"))


SCRIPTS = {shlex.quote(remote.source(p.name)): f"<script {p.name}>" for p in remote.scripts()}


def command_text(command) -> str:
    """The command as it goes to the host, each script of remote/ shown as <script NAME>."""
    text = command.get_raw_value() if isinstance(command, StringCommand) else command
    for quoted, label in SCRIPTS.items():
        text = text.replace(quoted, label)
    return text


def _fact_class(dirname: str) -> type:
    """facts.MODULE.CLASS from "MODULE.CLASS"; a fact class outside facts/ by its whole path ("run.batch.Batch")."""
    module, cls = dirname.rsplit(".", 1)
    return getattr(importlib.import_module(module if "." in module else f"facts.{module}"), cls)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_fact_fixture(case: Path) -> None:
    spec = json.loads(case.read_text())
    fact = _fact_class(case.parent.name)()
    # pyinfra returns default() without calling process() when a command prints nothing.
    got = fact.process(spec["output"]) if spec["output"] else fact.default()
    assert json.loads(json.dumps(got)) == spec["fact"]
    command = fact.command(*spec["args"])
    assert isinstance(command, str | StringCommand)
    assert command_text(command) == spec["command"]  # pinned, as pyinfra's own fixtures do


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_every_fixture_names_where_its_output_came_from(case: Path) -> None:
    """Real output, or a case made by hand, said so: python -m tests.capture_fixture writes it."""
    spec = json.loads(case.read_text())
    assert len(spec.get("source", "")) > 20, f"{case}: no source (host kind, release, date, or how it was made)"


def test_every_fact_has_a_fixture() -> None:
    covered = {c.parent.name for c in CASES}
    for path in sorted((Path(__file__).parents[2] / "facts").glob("[!_]*.py")):
        module = importlib.import_module(f"facts.{path.stem}")
        for name, obj in vars(module).items():
            if isinstance(obj, type) and obj.__module__ == module.__name__ and hasattr(obj, "process"):
                assert f"{path.stem}.{name}" in covered, f"no fixture for facts.{path.stem}.{name}"


def test_host_data_is_passed_as_arguments_not_pasted() -> None:
    from facts.disk import FreeSpace

    evil = "/tmp/x'; touch /pwned; '"
    raw = FreeSpace().command(evil).get_raw_value()
    script, arg = raw.split(" free_space.sh ", 1)
    assert "pwned" not in script
    assert shlex.split(arg) == [evil]
