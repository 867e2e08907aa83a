"""run/batch.py on a real pyinfra host (@local, a temporary tree): the last run's facts answered from
one read, until the run's first change on the host; after that, and without a kept list, the host is
asked. A value answered after a change would be stale: that must never happen."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyinfra.api import Config, Inventory, State, StringCommand, operation
from pyinfra.api.connect import connect_all
from pyinfra.api.operation import add_op
from pyinfra.facts.files import File
from pyinfra.facts.server import Command, Date

from run import batch


@pytest.fixture
def local(tmp_path: Path):
    """A connected @local host of a fresh pyinfra state, and its batch reads forgotten afterwards."""
    inventory = Inventory((["@local"], {}))
    state = State(inventory, Config())
    connect_all(state)
    host = inventory.get_host("@local")
    batch._READS.pop(host.name, None)
    batch.one_round_trip()  # as this project's deploy files ask
    yield host
    batch.one_round_trip(False)
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


def test_only_the_host_read_is_routed_and_pyinfra_s_host_class_is_never_changed(local, tmp_path: Path) -> None:
    from pyinfra.api.host import Host

    from run.pyinfra_internals import ORIGINAL

    other = Inventory((["@local"], {})).get_host("@local")  # another state's host: no deploy of ours reads it
    assert batch.prefetch(local, kept_list(tmp_path, tmp_path / "f")) == 1
    assert vars(local)["get_fact"].__func__ is batch._get_fact and "get_fact" not in vars(other)
    assert (Host.get_fact, Host.run_shell_command, Host.put_file) == (
        ORIGINAL.get_fact,
        ORIGINAL.run_shell_command,
        ORIGINAL.put_file,
    )


def test_a_deploy_that_did_not_ask_reads_its_hosts_as_pyinfra_does(local, tmp_path: Path) -> None:
    """A user's own deploy calling tasks/deploys.py without batch.one_round_trip(): nothing read ahead, the
    host's methods pyinfra's own, no list kept."""
    batch.one_round_trip(False)
    target = tmp_path / "f"
    target.write_text("abc")
    kept = kept_list(tmp_path, target)
    before = kept.read_text()
    assert batch.prefetch(local, kept) == 0
    assert not {"get_fact", "run_shell_command", "put_file"} & set(vars(local)) and local.name not in batch._READS
    assert local.get_fact(File, path=str(target))["size"] == 3
    batch.keep(local, kept)
    assert kept.read_text() == before


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


@pytest.mark.parametrize(
    "kept",
    [
        {"fact": "pyinfra.facts.server.Command", "arguments": {"command": "touch {pwned}"}},
        {
            "fact": "pyinfra.facts.files.FindInFile",
            "arguments": {"path": "/etc/hostname", "pattern": "$(touch {pwned})", "interpolate_variables": True},
        },
        {"fact": "pyinfra.facts.server.Hostname", "arguments": {}},  # pyinfra's, but no deploy here reads it
        {"fact": "facts.files.Links", "arguments": {"paths": [{"nested": "$(touch {pwned})"}]}},
    ],
)
def test_a_kept_list_naming_a_fact_that_takes_shell_text_is_not_run(local, tmp_path: Path, kept: dict) -> None:
    """The review's line, appended to a kept list on a drive others write, ran as root at the next audit."""
    pwned = tmp_path / "pwned"
    listing = tmp_path / "host.audit.facts.json"
    listing.write_text(json.dumps([json.loads(json.dumps(kept).replace("{pwned}", str(pwned)))]))
    assert batch.prefetch(local, listing) == 0 and batch._READS[local.name].batches == 0
    assert not pwned.exists()


@pytest.fixture
def command_batched(monkeypatch):
    """pyinfra's Command let into the batch, for the tests of how a read is routed (which shell, which folder)."""
    monkeypatch.setattr(batch, "PYINFRA_BATCHED", batch.PYINFRA_BATCHED | {"pyinfra.facts.server.Command"})


def read_in_an_operation(host, fact: type, arguments: dict, **global_arguments) -> list:
    """What the fact read as pyinfra runs an operation (its generator, with these global arguments)."""
    seen: list = []

    @operation()
    def reads() -> Iterator:
        seen.append(host.get_fact(fact, **arguments))
        yield StringCommand("true")

    add_op(host.state, reads, **global_arguments)
    return seen


def command_list(tmp_path: Path, command: str) -> Path:
    kept = tmp_path / "host.provision.facts.json"
    kept.write_text(json.dumps([{"fact": "pyinfra.facts.server.Command", "arguments": {"command": command}}]))
    return kept


BASH_ONLY = 'if [ -n "${BASH_VERSION:-}" ]; then echo bash; else echo not-bash; fi'


def test_a_read_in_an_operation_with_another_shell_asks_the_host(local, tmp_path: Path, command_batched) -> None:
    if Path("/bin/sh").resolve().name == "bash":
        pytest.skip("/bin/sh is bash here: the shells cannot be told apart")
    assert batch.prefetch(local, command_list(tmp_path, BASH_ONLY)) == 1
    assert read_in_an_operation(local, Command, {"command": BASH_ONLY}) == ["not-bash"]  # the batch's (sh)
    assert read_in_an_operation(local, Command, {"command": BASH_ONLY}, _shell_executable="bash") == ["bash"]


def test_a_read_in_an_operation_with_a_working_directory_asks_the_host(local, tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "rel-file").write_text("abc")
    assert batch.prefetch(local, kept_list(tmp_path, Path("rel-file"))) == 1  # read in the login directory: absent
    assert read_in_an_operation(local, File, {"path": "rel-file"}) == [None]
    got = read_in_an_operation(local, File, {"path": "rel-file"}, _chdir=str(tmp_path / "here"))
    assert got[0] is not None and got[0]["size"] == 3


def test_facts_that_move_by_themselves_are_never_batched(local, tmp_path: Path) -> None:
    kept = tmp_path / "host.provision.facts.json"
    kept.write_text(json.dumps([{"fact": "pyinfra.facts.server.Date", "arguments": {}}]))
    assert batch.prefetch(local, kept) == 0
    first = local.get_fact(Date)
    assert local.get_fact(Date) >= first
    batch.keep(local, kept)
    assert batch._READS[local.name].asked == {}  # not kept for the next run's batch either
    for name in batch.READ_WHEN_ASKED:
        assert batch._class(name) is None, name


def waits_for_all(folder: Path, index: int, count: int) -> str:
    """A command that marks its start, then waits (3 s at most) until `count` commands have started: it
    prints its index where they all ran at once, 'alone' where it ran before the others started."""
    return (
        f"touch {folder}/{index}; n=0; while [ $(ls {folder} | wc -l) -lt {count} ] && [ $n -lt 300 ]; "
        f"do sleep 0.01; n=$((n+1)); done; [ $n -lt 300 ] && echo {index} || echo alone"
    )


def test_the_batch_runs_its_commands_in_lanes_at_once_and_prints_them_in_order(tmp_path: Path) -> None:
    import subprocess

    started = tmp_path / "started"
    started.mkdir()
    lanes = batch.Batch.LANES
    commands = [waits_for_all(started, i, lanes) for i in range(lanes)] + ["echo last"]
    text = batch.Batch().command(commands, "@@m@@").get_raw_value()
    out = subprocess.run(["sh", "-c", text], capture_output=True, text=True, timeout=60).stdout.splitlines()
    got = batch.Batch().process(out)
    assert got == [(0, [str(i)]) for i in range(lanes)] + [(0, ["last"])]  # in order, each with the others


def test_where_no_private_directory_can_be_made_they_run_in_turn_with_the_same_output(
    tmp_path: Path, monkeypatch
) -> None:
    import subprocess

    commands = ["echo one; echo two", "false", "cd /; pwd", "exit 3"]
    made = batch.Batch().command(commands, "@@m@@").get_raw_value()
    monkeypatch.setattr(batch.Batch, "SCRATCH", str(tmp_path / "none"))
    in_turn = batch.Batch().command(commands, "@@m@@").get_raw_value()
    outputs = [subprocess.run(["sh", "-c", text], capture_output=True, text=True).stdout for text in (made, in_turn)]
    assert outputs[0] == outputs[1]
    assert batch.Batch().process(outputs[1].splitlines()) == [(0, ["one", "two"]), (1, []), (0, ["/"]), (3, [])]


def test_the_lanes_leave_no_file_behind(tmp_path: Path, monkeypatch) -> None:
    import subprocess

    monkeypatch.setattr(batch.Batch, "SCRATCH", str(tmp_path))
    text = batch.Batch().command(["echo one", "echo two"], "@@m@@").get_raw_value()
    assert subprocess.run(["sh", "-c", text], capture_output=True, text=True).stdout.count("@@m@@") == 4
    assert list(tmp_path.iterdir()) == []
