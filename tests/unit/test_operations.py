"""Each operation on fixtures, as pyinfra tests its own: facts in, commands (or a noop) out.

One file per case in tests/fixtures/operations/<module>.<operation>/<case>.json:

    {"args": {...}, "facts": {"FactClass": value, "FactWithArgs": {"arg1 arg2": value}},
     "commands": ["..."]}            or "noop": "why"     or "error": "part of the message"

`s`/`settings` args are settings overrides (validated by config.settings.load); `layout: true`
passes the Layout of those settings; `server` is settings overrides for a server plan (tasks.server.unit.server_plan),
`plan` the fields of a venv plan; `files` maps dest -> [text, mode]; `folders` are retention.Kept
fields. Scripts from remote/ appear as <script NAME>, uploads as <upload CONTENT to DEST>.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyinfra.api import FileUploadCommand, FunctionCommand, StringCommand
from pyinfra.api.exceptions import OperationError
from pyinfra.context import ctx_host

import remote
from config.hub_folders import HubAccess
from config.layout import Layout
from config.settings import load
from tasks.apt import lists_relay as apt_lists_relay
from tasks.apt import relay as apt_relay
from tasks.downloads import private_upload
from tasks.downloads import relay as controller_downloads
from tasks.models import hub_relay
from tasks.retention import Kept
from tasks.server.front_plan import upgrade_mode
from tasks.server.unit import server_plan
from tasks.venv.plan import VenvPlan

FIXTURES = Path(__file__).parents[1] / "fixtures" / "operations"
CASES = sorted(FIXTURES.glob("*/*.json"))
TASKS = Path(__file__).parents[2] / "tasks"
SCRIPTS = {shlex.quote(remote.source(p.name)): f"<script {p.name}>" for p in remote.scripts()}


class FixtureHost:
    """Stands in for pyinfra's host inside an operation: facts from the fixture, noops recorded."""

    name = "fixture-host"

    def __init__(self, facts: dict[str, Any]):
        self.facts = facts
        self.noops: list[str] = []

    def get_fact(self, cls: type, *args: Any, **kwargs: Any) -> Any:
        if cls.__name__ not in self.facts:
            raise AssertionError(f"the fixture has no fact {cls.__name__}")
        value = self.facts[cls.__name__]
        key = " ".join(" ".join(a) if isinstance(a, list | tuple) else str(a) for a in [*args, *kwargs.values()])
        if key:
            if key not in value:
                raise AssertionError(f"the fixture has no {cls.__name__} for {key!r}")
            value = value[key]
        if cls.__name__ == "Date":
            return datetime.fromisoformat(value)
        if cls.__name__ == "File" and value and value.get("mtime"):
            return {**value, "mtime": datetime.fromisoformat(value["mtime"])}
        if cls.__name__ == "ListeningPorts":  # JSON keys are strings; the fact's are port numbers
            return {int(port): holders for port, holders in value.items()}
        return value

    def noop(self, description: str) -> None:
        self.noops.append(description)

    def get_temp_filename(self, name: str, **kwargs: Any) -> str:
        return f"/tmp/fixture-temp-{len(name)}"


def _operation(dirname: str):
    module, name = dirname.rsplit(".", 1)
    return getattr(importlib.import_module(f"tasks.{module}"), name)


def _args(spec_args: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    args = dict(spec_args)
    systemd = bool(facts.get("InitSystem", {}).get("systemd"))  # triton_upgrade "auto" as read_host resolves it
    if "plan" in args:  # the venv operations' plan (tasks.venv.VenvPlan)
        args["plan"] = VenvPlan(**args["plan"])
    if "server" in args:  # the server operations' plan, from these settings overrides
        s = upgrade_mode(load(args.pop("server")), systemd)
        args["plan"] = server_plan(s, Layout(s))
    if "front" in args:  # front.running's plan, from these settings overrides (triton_upgrade = "front")
        s = load({"triton_upgrade": "front", **args.pop("front")})
        args["front"] = server_plan(s, Layout(s)).front
    if "folders" in args:  # retention.pruned's folders
        args["folders"] = [
            Kept(**{k: tuple(v) if isinstance(v, list) else v for k, v in f.items()}) for f in args["folders"]
        ]
    if isinstance(args.get("relay"), dict):  # models.hub_snapshot's relay (config.hub_folders.HubAccess)
        args["relay"] = HubAccess(**{**args["relay"], "cache": Path(args["relay"]["cache"])})
    if "links" in args:  # (link, target) pairs
        args["links"] = tuple(tuple(pair) for pair in args["links"])
    if "files" in args:  # small_files.written: dest -> [text, mode] in JSON, (bytes, mode) for the operation
        args["files"] = {dest: (text.encode(), mode) for dest, (text, mode) in args["files"].items()}
    for key in ("s", "settings"):
        if key in args:
            args[key] = upgrade_mode(load(args[key]), systemd)
            if args.pop("layout", False):
                args["layout"] = Layout(args[key])
    return args


def _text(command: Any) -> str:
    if isinstance(command, private_upload._PrivateUpload):  # its content, destination and mode
        dest, src, mode = command.args
        shown = (
            "<secret>"
            if isinstance(src, private_upload.Secret)
            else repr(src.decode())
            if isinstance(src, bytes)
            else f"file {src}"
        )
        return f"<private upload {shown} to {dest} mode {mode}>"
    if isinstance(command, private_upload._PrivateRead):  # what it reads, and what keeps it on the controller
        src, keep, remove = command.args
        then = ", then removed" if remove else ""
        return f"<private read {src} -> {getattr(keep, 'func', keep).__name__}{then}>"
    if isinstance(command, controller_downloads._Sent):  # what the controller sends, from where, to which name
        url, sha256, dest, cache_dir = command.args
        shown = url if isinstance(url, str) else "<the URL the index pages list>"
        return f"<from the controller's cache {cache_dir}: {shown} sha256 {sha256[:12]}... to {dest}, checked there>"
    if isinstance(command, hub_relay._SentSnapshot):  # what the controller fetches once and sends, where to
        access, repo, revision, stage = command.args
        return (
            f"<from the controller's hub cache {access.cache} ({access.endpoint}): {repo}@{revision} to {stage}/DIGEST>"
        )
    if isinstance(command, apt_relay._SentDebs):  # what the host is asked, where the .debs go, through which cache
        asked, archives, cache_dir, _allowed = command.args
        return f"<from the controller's cache {cache_dir}: the .debs of `{asked.get_raw_value()}` to {archives}>"
    if isinstance(command, apt_lists_relay._SentLists):  # what the host is asked, where the lists go, then what
        asked, partial, cache_dir, update, _allowed = command.args
        return (
            f"<from the controller's cache {cache_dir}: the lists of `{asked.get_raw_value()}` to {partial}, "
            f"then `{update.get_raw_value()}`>"
        )
    if isinstance(command, FunctionCommand):
        return f"<function {command.function.__name__}>"
    if isinstance(command, FileUploadCommand):
        data = command.src.getvalue() if hasattr(command.src, "getvalue") else Path(command.src).read_bytes()
        return f"<upload {data if isinstance(data, str) else data.decode()!r} to {command.dest}>"
    text = command.get_raw_value() if isinstance(command, StringCommand) else str(command)
    for quoted, label in SCRIPTS.items():
        text = text.replace(quoted, label)
    return f"<live> {text}" if isinstance(command, remote.Live) else text  # output shown as it comes


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_operation_fixture(case: Path) -> None:
    spec = json.loads(case.read_text())
    fake = FixtureHost(spec.get("facts", {}))
    op = _operation(case.parent.name)
    with ctx_host.use(fake):
        if "error" in spec:
            with pytest.raises(OperationError, match=re.escape(spec["error"])):
                list(op._inner(**_args(spec["args"], spec.get("facts", {}))))
            return
        commands = [_text(c) for c in op._inner(**_args(spec["args"], spec.get("facts", {})))]
    assert commands == spec.get("commands", [])
    if "noop" in spec:
        assert fake.noops == [spec["noop"]]
    else:
        assert fake.noops == []


def test_every_operation_has_a_change_and_a_noop_case() -> None:
    """pyinfra's rule: an operation is tested doing its work and doing nothing when there is nothing to do."""
    kinds: dict[str, set[str]] = {}
    for case in CASES:
        spec = json.loads(case.read_text())
        kind = "noop" if "noop" in spec and not spec.get("commands") else "change"
        kinds.setdefault(case.parent.name, set()).add(kind)
    for path in sorted(TASKS.glob("[!_]*.py")):
        module = importlib.import_module(f"tasks.{path.stem}")
        for name, obj in inspect.getmembers(module, callable):
            inner = getattr(obj, "_inner", None)
            if inner and inspect.isgeneratorfunction(inner) and obj.__module__ == module.__name__:
                assert kinds.get(f"{path.stem}.{name}") == {"noop", "change"}, f"tasks.{path.stem}.{name}"
