"""One round trip to read a host. pyinfra runs one command per fact it is asked (about 50 for a
provision), each a round trip, and asks an operation's facts when it runs it. Here the facts a
deploy asked of a host in its last run (kept on the controller) are read together in one command
at the start, and answer those asks for as long as nothing has changed on the host in this run:
until the first command of an operation or upload runs there, they are what a read at that moment
would return. After that, and for a fact not read that way (a first run, changed settings), the
host is asked as usual; the list is kept for the next run.

An ask is answered only where pyinfra would run its command exactly as the batch ran: with the
same connector arguments (`_sudo`, `_env`, `_shell_executable` ...), whether the ask names them or
the operation it runs in does (pyinfra hands a running operation's global arguments to its fact
reads). Facts whose value moves by itself (the date, our server's state) are never batched: they
are read when asked. A fact read in the batch is processed by its own class, exactly as pyinfra would.

Why not a wrapping connector (pyinfra's public seam for how commands reach a host): a connector sees
a fact read only as one more `run_shell_command` of plain text, after pyinfra has made the command
and before it processes the output; it cannot tell a read from a change, nor which fact and
arguments a command is, without parsing command text. It would also have to be named in every
inventory (`@batch/host`), where users keep `@ssh` and `@local`. Routing a host's get_fact keeps the
batching out of users' inventories and answers by fact class and arguments (run/pyinfra_internals.py
registers and checks that seam).

A run reads this way only where its deploy file asks, at its top (`batch.one_round_trip()`: this project's
deploy/ files do), and then only the hosts it reads through planner/reading.read_host, each on its own host
object: pyinfra's Host class is never changed, and a user's own deploy that calls tasks/deploys.py without
asking reads its hosts exactly as pyinfra does.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import secrets
from inspect import getcallargs
from pathlib import Path
from typing import Any

from pyinfra.api import FactBase, StringCommand
from pyinfra.api.host import Host
from pyinfra.api.state import BaseStateCallback

from run.pyinfra_internals import ORIGINAL, connector_arguments, route_host_io

# Fact classes a kept list may name: ours (facts/: each quotes its arguments into a script's argv), and the
# pyinfra facts this project's deploys read, by name. Never one that takes shell text (pyinfra's
# server.Command, FindInFile with interpolate_variables): the list may lie on a drive others write (a
# notebook's persist_dir), and the batch runs as the deploy's user, root there.
_OURS = "facts."
PYINFRA_BATCHED = frozenset(
    {
        "pyinfra.facts.files.File",
        "pyinfra.facts.files.Directory",
        "pyinfra.facts.files.Sha256File",
        "pyinfra.facts.files.FileContents",
        "pyinfra.facts.files.FindInFile",
        "pyinfra.facts.hardware.Cpus",
        "pyinfra.facts.deb.DebPackages",
        "pyinfra.facts.server.Which",
    }
)
# Arguments that make a fact's argument shell text (FindInFile's pattern, unquoted): a list naming one is not read.
_SHELL_TEXT_ARGUMENTS = ("interpolate_variables",)
_MISSING = "##PYINFRA_NOCMD##"  # what pyinfra's own guard prints where a fact's required command is absent
# Facts whose value moves by itself between the run's start and their ask: read when asked, never
# from the batch (a server can die or become ready; the date advances). And facts that ask the network
# (UrlSize: a HEAD request to the artifact's server), which a run asks only where its plan needs them: read
# ahead from the last run's list, a re-provision whose artifact is cached asked the server again (seen
# after a notebook reset, tests/e2e/test_notebook_inside.py).
READ_WHEN_ASKED = frozenset(
    {"pyinfra.facts.server.Date", "facts.server.ServerState", "facts.server.ServerStatus", "facts.http.UrlSize"}
)
# One batch command stays below Linux's limit on one argument (MAX_ARG_STRLEN, 128 KiB): sshd hands
# the whole command to the shell as one; larger lists go in several batches.
_BATCH_BYTES = 96 << 10


class Batch(FactBase[list]):
    """Several facts' commands run in one: for each, its exit status and output lines, between marks
    that carry its index (a random mark per batch: no fact's output can hold it by chance). They run in
    LANES lanes at once (each lane one after another), each lane into a file of a private directory on
    /dev/shm (a memory file system: the host's disks see no write, its /tmp no new entry: an audit
    changes nothing), printed lane after lane once all have ended: the host's cores share the reading,
    no more than LANES processes of it run at a time, and it costs the host a `cat` per lane. Where
    /dev/shm takes no such directory, they run one after another, printing as they go."""

    LANES = 4
    SCRATCH = "/dev/shm"  # where the lanes' files go: a memory file system on every Linux

    def command(self, commands: list[str], mark: str) -> StringCommand:
        if not commands:
            return StringCommand("true")
        # each command once, as a function run in a subshell (its own exit, cd, variables), for both ways
        functions = " ".join(f"_f{i}() ( {command}\n);" for i, command in enumerate(commands))

        def marked(i: int) -> str:
            return f"echo {mark}.{i}; _f{i} 2>/dev/null; echo {mark}.{i}:$?;"

        lanes = range(min(self.LANES, len(commands)))
        ran = [" ".join(marked(i) for i in range(lane, len(commands), self.LANES)) for lane in lanes]
        return StringCommand(
            functions,
            f"if d=$(mktemp -d -p {self.SCRATCH} 2>/dev/null); then trap 'rm -rf \"$d\"' EXIT;",
            *(f'{{ {lane} }} >"$d/{n}" &' for n, lane in enumerate(ran)),
            "wait; cat",
            *(f'"$d/{n}"' for n in lanes),
            f"; else {' '.join(marked(i) for i in range(len(commands)))} fi",
        )

    @staticmethod
    def default() -> list:
        return []

    def process(self, output: list[str]) -> list:
        """[(status, lines)] in command order, from the marks each one's output sits between (MARK.N and
        MARK.N:STATUS); a command whose end mark is missing is left out, and those after it with it."""
        if not output or "." not in output[0]:
            return []
        mark = output[0].rsplit(".", 1)[0]  # the first line is always a command's opening mark
        found: dict[int, tuple[int, list[str]]] = {}
        index: int | None = None
        lines: list[str] | None = None
        for line in output:
            head, _, status = line.partition(":")
            if line.startswith(f"{mark}.") and head[len(mark) + 1 :].isdigit():
                number = int(head[len(mark) + 1 :])
                if not status and line == head:
                    index, lines = number, []
                elif index == number and lines is not None:
                    found[number] = (int(status) if status.isdigit() else 1, lines)
                    index, lines = None, None
                continue
            if lines is not None:
                lines.append(line)
        results = []
        for number in range(len(found)):
            if number not in found:
                break
            results.append(found[number])
        return results


def _class(name: str) -> type[FactBase] | None:
    """The fact class of a kept name ("facts.files.Links", "pyinfra.facts.files.File"), if it may be
    batched: ours or pyinfra's, its value still when nothing changes, run by the default shell with no
    preconditions (those pyinfra checks by reading other facts first)."""
    module, _, cls = name.rpartition(".")
    if not (module.startswith(_OURS) or name in PYINFRA_BATCHED) or name in READ_WHEN_ASKED:
        return None
    try:
        found = getattr(importlib.import_module(module), cls, None)
    except ImportError:
        return None
    if not isinstance(found, type) or not issubclass(found, FactBase) or found is Batch:
        return None
    if found.shell_executable is not None or found.check_preconditions is not FactBase.check_preconditions:
        return None
    return found


def _plain(arguments: dict) -> bool:
    """Arguments a kept list may give a fact: names to strings, numbers, false flags or lists of strings, and no
    argument that turns a value into shell text."""
    for name, value in arguments.items():
        if name in _SHELL_TEXT_ARGUMENTS and value:
            return False
        items = value if isinstance(value, list) else [value]
        if not all(item is None or isinstance(item, str | int | bool) for item in items):
            return False
    return True


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _arguments(cls: type[FactBase], args: tuple, kwargs: dict) -> dict[str, Any]:
    """The fact's arguments by name, as pyinfra binds them (positional or not, the same key)."""
    if not args and not kwargs:
        return {}
    bound = getcallargs(cls().command, *args, **kwargs)
    bound.pop("self", None)
    return bound


def _key(cls: type, arguments: dict[str, Any]) -> str:
    return json.dumps([_name(cls), arguments], sort_keys=True, default=str)


class _Reads:
    """Per host: the values the batch read, and what this run asked (kept for the next one)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.asked: dict[str, dict] = {}
        self.answered = 0  # asks the batch answered
        self.single = 0  # asks that went to the host one by one
        self.batches = 0  # batch commands run (one round trip each)
        self.reading = 0  # inside a fact read: its command changes nothing
        self.runs_as: dict[str, Any] = {}  # the connector arguments the batch ran with


_READS: dict[str, _Reads] = {}
_ASKED = {"one_round_trip": False}  # set by the deploy file that asks (one_round_trip); no one else sets it


def one_round_trip(on: bool = True) -> None:
    """This run's deploy reads its hosts in one round trip (prefetch): called by a deploy file, at its top."""
    _ASKED["one_round_trip"] = on


def _read(reads: _Reads, host: Host, name_or_cls, *args, **kwargs):
    """The host asked, its command marked as a read (not a change)."""
    reads.reading += 1
    try:
        return ORIGINAL.get_fact(host, name_or_cls, *args, **kwargs)
    finally:
        reads.reading -= 1


def _changing(host: Host) -> None:
    """A command or upload that is not a fact read: from now on the batch's values may be stale."""
    reads = _READS.get(host.name)
    if reads is not None and not reads.reading:
        reads.values.clear()


def _run_shell_command(self: Host, *args, **kwargs):
    _changing(self)
    return ORIGINAL.run_shell_command(self, *args, **kwargs)


def _put_file(self: Host, *args, **kwargs):
    _changing(self)
    return ORIGINAL.put_file(self, *args, **kwargs)


def _get_fact(self: Host, name_or_cls, *args, **kwargs):
    """Host.get_fact, answered from the batch where it read this fact and nothing changed since."""
    reads = _READS.get(self.name)
    if reads is None:
        return ORIGINAL.get_fact(self, name_or_cls, *args, **kwargs)
    if name_or_cls is not Batch:
        reads.single += 1  # until the batch answers it below
    if not isinstance(name_or_cls, type) or _name(name_or_cls) in READ_WHEN_ASKED:
        return _read(reads, self, name_or_cls, *args, **kwargs)
    if reads.values and connector_arguments(self, kwargs) != reads.runs_as:
        return _read(reads, self, name_or_cls, *args, **kwargs)  # pyinfra would run it otherwise: ask the host
    try:
        arguments = _arguments(name_or_cls, args, kwargs)
        key = _key(name_or_cls, arguments)
        json.dumps(arguments)  # only what a JSON list can keep is kept
    except (TypeError, ValueError):
        return _read(reads, self, name_or_cls, *args, **kwargs)
    reads.asked.setdefault(key, {"fact": _name(name_or_cls), "arguments": arguments})
    if key in reads.values:
        reads.answered += 1
        reads.single -= 1
        return copy.deepcopy(reads.values[key])
    return _read(reads, self, name_or_cls, *args, **kwargs)


def _install(host: Host) -> None:
    """Route the host's get_fact through the batch, and see its every other command and upload (once)."""
    route_host_io(host, _get_fact, _run_shell_command, _put_file)


class _Keeper(BaseStateCallback):
    """Keeps each host's list when the run is done with it (its operations run at execution)."""

    def __init__(self) -> None:
        self.lists: dict[str, Path] = {}

    def host_disconnect(self, state, host) -> None:
        if host.name in self.lists:
            keep(host, self.lists.pop(host.name))


def prefetch(host: Host, kept: Path | None) -> int:
    """Read in one command every fact the list at `kept` names (the last run's asks of this host)
    and answer those asks from it until something changes on the host; returns how many were read.
    With no list (a first run) nothing is read ahead. This run's asks are kept there at its end. Where the
    run's deploy did not ask for it (one_round_trip), nothing: the host is read as pyinfra reads it."""
    if not _ASKED["one_round_trip"]:
        return 0
    _install(host)
    reads = _READS.setdefault(host.name, _Reads())
    if kept is not None:
        keeper = next((h for h in host.state.callback_handlers if isinstance(h, _Keeper)), None)
        if keeper is None:
            keeper = _Keeper()
            host.state.add_callback_handler(keeper)
        keeper.lists[host.name] = kept
    if kept is None or not kept.is_file():
        return 0
    try:
        wanted = json.loads(kept.read_text())
    except (OSError, ValueError):
        return 0
    facts: list[tuple[str, FactBase]] = []
    commands: list[str] = []
    for item in wanted if isinstance(wanted, list) else []:
        cls = _class(str(item.get("fact", ""))) if isinstance(item, dict) else None
        arguments = item.get("arguments") if cls else None
        if cls is None or not isinstance(arguments, dict) or not _plain(arguments):
            continue
        fact = cls()
        try:
            command = fact.command(**arguments)
            needs = fact.requires_command(**arguments)
        except TypeError:  # the class changed since the list was kept
            continue
        text = command.get_raw_value() if isinstance(command, StringCommand) else str(command)
        if needs:
            text = f"if command -v {needs} >/dev/null 2>&1; then ( {text} ); else echo '{_MISSING}'; fi"
        facts.append((_key(cls, arguments), fact))
        commands.append(text)
    reads.runs_as = connector_arguments(host, {})
    results: list = []
    start = 0
    while start < len(commands):
        end, size = start, 0
        while end < len(commands) and (end == start or size + len(commands[end]) < _BATCH_BYTES):
            size += len(commands[end]) + 64
            end += 1
        got = _read(reads, host, Batch, commands[start:end], f"@@batch-{secrets.token_hex(8)}@@")
        reads.batches += 1
        results.extend(got + [(1, [])] * (end - start - len(got)))  # a cut-short batch: the rest asked as usual
        start = end
    for (key, fact), (status, lines) in zip(facts, results, strict=True):
        if status != 0 or lines == [_MISSING]:
            continue  # asked as usual: pyinfra decides what a failed fact means
        try:
            reads.values[key] = fact.process(lines) if lines else fact.default()
        except Exception:
            continue
    return len(reads.values)


def keep(host: Host, kept: Path | None) -> None:
    """Keep the list of facts this run asked of the host, for the next run's prefetch (written aside,
    then renamed), and say how the host was read."""
    reads = _READS.get(host.name)
    if kept is None or reads is None or not reads.asked:
        return
    host.log(f"read the host: {reads.answered} facts in {reads.batches} round trip(s), {reads.single} more one by one")
    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(list(reads.asked.values()), indent=1, sort_keys=True) + "\n")
    os.replace(tmp, kept)
