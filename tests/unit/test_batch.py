"""facts/batch.py on a real pyinfra host (@local, a temporary tree): the last run's facts answered from
one read, until the run's first change on the host; after that, and without a kept list, the host is
asked. A value answered after a change would be stale: that must never happen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyinfra.api import Config, Inventory, State
from pyinfra.api.connect import connect_all
from pyinfra.facts.files import File

from facts import batch, pyinfra_internals


@pytest.fixture
def local(tmp_path: Path):
    """A connected @local host of a fresh pyinfra state, and its batch reads forgotten afterwards."""
    inventory = Inventory((["@local"], {}))
    state = State(inventory, Config())
    connect_all(state)
    host = inventory.get_host("@local")
    batch._READS.pop(host.name, None)
    yield host
    batch._READS.pop(host.name, None)


def kept_list(tmp_path: Path, path: Path) -> Path:
    """A facts list as a run keeps it: one File fact of `path`."""
    kept = tmp_path / "host.provision.facts.json"
    kept.write_text(json.dumps([{"fact": "pyinfra.facts.files.File", "arguments": {"path": str(path)}}]))
    return kept


def test_the_kept_facts_are_read_in_one_round_trip_and_answer_the_run(local, tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("one")
    assert batch.prefetch(local, kept_list(tmp_path, target)) == 1
    reads = batch._READS[local.name]
    assert reads.batches == 1
    target.write_text("longer than before")  # changed behind pyinfra's back: the batch's value stands
    assert local.get_fact(File, path=str(target))["size"] == 3
    assert (reads.answered, reads.single) == (1, 0)


def test_after_a_change_on_the_host_a_later_ask_gets_the_new_value(local, tmp_path: Path) -> None:
    target = tmp_path / "f"
    assert batch.prefetch(local, kept_list(tmp_path, target)) == 1  # read: absent
    ok, _ = local.run_shell_command(f"echo now-here > {target}")  # an operation's command: a change
    assert ok
    got = local.get_fact(File, path=str(target))
    assert got is not None and got["size"] == len("now-here\n")  # asked again, not the stale "absent"
    reads = batch._READS[local.name]
    assert (reads.answered, reads.single) == (0, 1)


def test_an_upload_is_a_change_too(local, tmp_path: Path) -> None:
    from io import StringIO

    target = tmp_path / "up"
    assert batch.prefetch(local, kept_list(tmp_path, target)) == 1
    assert local.put_file(StringIO("x"), str(target))
    assert local.get_fact(File, path=str(target))["size"] == 1


def test_without_a_kept_list_nothing_is_read_ahead_and_the_run_s_asks_are_kept(local, tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("abc")
    kept = tmp_path / "none-yet.json"
    assert batch.prefetch(local, kept) == 0
    assert local.get_fact(File, path=str(target))["size"] == 3
    reads = batch._READS[local.name]
    assert (reads.batches, reads.answered, reads.single) == (0, 0, 1)
    batch.keep(local, kept)
    assert json.loads(kept.read_text()) == [{"arguments": {"path": str(target)}, "fact": "pyinfra.facts.files.File"}]


def test_a_kept_list_naming_a_class_outside_the_facts_is_not_run(local, tmp_path: Path) -> None:
    kept = tmp_path / "hostile.json"
    kept.write_text(json.dumps([{"fact": "os.system", "arguments": {"command": "touch /tmp/pwned"}}]))
    assert batch.prefetch(local, kept) == 0 and batch._READS[local.name].batches == 0


def test_every_pyinfra_internal_relied_on_holds_in_the_installed_pyinfra() -> None:
    assert pyinfra_internals.changed() == []


def test_a_changed_internal_is_named_with_who_relies_on_it(monkeypatch) -> None:
    monkeypatch.setattr(pyinfra_internals, "_make_command", lambda command, arguments, extra=None: None)
    changed = pyinfra_internals.changed()
    assert len(changed) == 1 and changed[0].startswith("pyinfra.api.facts._make_command(command, arguments)")
    assert "used by facts/batch.py" in changed[0]
