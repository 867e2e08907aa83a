"""The one place this project touches pyinfra beyond its documented API (facts, operations, deploys,
callbacks, StringCommand): what each internal is, who relies on it, and a check of its behaviour (not
only its signature) that fails loudly, naming the one that changed, when a pyinfra upgrade moves any of
them (tests/unit/test_pyinfra_internals.py).

Everything else goes through facts, operations and callbacks, as pyinfra's own code does.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MethodType
from typing import Any

from pyinfra.api import QuoteString, StringCommand
from pyinfra.api.arguments import CONNECTOR_ARGUMENT_KEYS, pop_global_arguments
from pyinfra.api.host import Host
from pyinfra.api.state import State


@dataclass(frozen=True)
class Internal:
    """One internal: where it lives, the shape relied on, and who relies on it."""

    name: str
    shape: str
    used_by: str
    check: Callable[[], bool]


def _params(func: Any) -> list[str]:
    return list(inspect.signature(func).parameters)


def _state_attribute(name: str) -> bool:
    """A State attribute assigned in State's code or declared on the class (read from its source)."""
    return hasattr(State, name) or f"self.{name}" in inspect.getsource(State)


def _module(name: str) -> Any:
    return importlib.import_module(name)


def _cli_parses() -> list:
    """What pyinfra's --data makes of "true", "8000", "3.10" and "x", asked in a process of its own:
    importing pyinfra_cli here would let gevent patch this process's threading."""
    code = (
        "import json; from pyinfra_cli.util import parse_cli_arg; "
        "print(json.dumps([parse_cli_arg(v) for v in ('true', '8000', '3.10', 'x')]))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return json.loads(res.stdout) if res.returncode == 0 else []


def _bits_rebuild() -> bool:
    """StringCommand(*c.bits, _separator=c.separator) is the same command as c (quoting, nesting, separator)."""
    inner = StringCommand("echo", QuoteString("a b"), _separator="")
    for command in (StringCommand("sh", "-c", QuoteString("x 'y'"), inner), StringCommand("a", "b", _separator="&&")):
        again = StringCommand(*command.bits, _separator=command.separator)
        if again.get_raw_value() != command.get_raw_value() or again.get_masked_value() != command.get_masked_value():
            return False
    return True


# Run by _in_a_run() in a process of its own: a real pyinfra state on @local runs one operation with
# `_chdir` that yields a StringCommand and a FunctionCommand subclass overriding execute, and reads what
# connector_arguments() says inside the operation and outside it.
_RUN_PROBE = """
import json, sys
from pyinfra import host
from pyinfra.api import Config, FunctionCommand, Inventory, State, StringCommand, operation
from pyinfra.api.connect import connect_all
from pyinfra.api.operation import add_op
from pyinfra.api.operations import run_ops
from run.pyinfra_internals import connector_arguments
seen = {}
class Shell(StringCommand):
    def execute(self, state, host, connector_arguments):
        seen["string"] = connector_arguments.get("_chdir")
        return super().execute(state, host, connector_arguments)
class Call(FunctionCommand):
    def execute(self, state, host, connector_arguments):
        seen["function"] = connector_arguments.get("_chdir")
        return True
@operation()
def probe():
    seen["inside"] = connector_arguments(host, {}).get("_chdir")
    seen["asked"] = connector_arguments(host, {"_chdir": "/"}).get("_chdir")
    yield Shell("true")
    yield Call(print, (), {})
inventory = Inventory((["@local"], {}))
state = State(inventory, Config())
connect_all(state)
local = inventory.get_host("@local")
seen["outside"] = connector_arguments(local, {}).get("_chdir")
add_op(state, probe, _chdir="/tmp")
run_ops(state)
print(json.dumps(seen))
"""


@cache
def _in_a_run() -> dict:
    """What _RUN_PROBE saw ({} where it failed)."""
    root = str(Path(__file__).resolve().parent.parent)
    res = subprocess.run([sys.executable, "-c", _RUN_PROBE], capture_output=True, text=True, timeout=120, cwd=root)
    try:
        return json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else {}
    except (ValueError, IndexError):
        return {}


def _inventory_loads() -> list:
    """What pyinfra_cli's make_inventory makes of a two-host inventory file with --data, asked in a process
    of its own (as _cli_parses): [[name, its x, its y], ...] in the file's order."""
    code = (
        "import json, sys, tempfile, pathlib; from pyinfra_cli.inventory import make_inventory; "
        "from pyinfra.api import State; from pyinfra.context import ctx_state; "
        "ctx_state.set(State(check_for_changes=False)); "
        "d = tempfile.mkdtemp(); f = pathlib.Path(d, 'inv.py'); "
        "f.write_text(\"web = [('web2', {'x': 1}), ('web1', {'x': 2})]\\n\"); "
        "inv = make_inventory(str(f), override_data={'y': 'z'}, cwd=d); "
        "print(json.dumps([[h.name, h.data.get('x'), h.data.get('y')] for h in inv]))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 and res.stdout.strip() else []


INTERNALS = (
    Internal(
        "PyinfraCommand.execute(state, host, connector_arguments), overridden",
        "pyinfra runs each yielded command by calling its execute with the operation's connector arguments",
        "remote.Live (output shown live), tasks/private_upload (_PrivateUpload, _PrivateRead)",
        lambda: _in_a_run().get("string") == "/tmp" and _in_a_run().get("function") == "/tmp",
    ),
    Internal(
        "StringCommand.bits and StringCommand.separator",
        "a command's parts and separator: StringCommand(*c.bits, _separator=c.separator) is c again",
        "remote.live (a command re-made as a Live)",
        _bits_rebuild,
    ),
    Internal(
        "Host.current_op_global_arguments, pyinfra.api.arguments.pop_global_arguments, CONNECTOR_ARGUMENT_KEYS",
        "the running operation's global arguments, which pyinfra hands to its fact reads, resolved as pyinfra does",
        "run/batch.py (connector_arguments: answered from the batch only where a read would run the same way)",
        lambda: (
            _in_a_run().get("inside") == "/tmp"
            and _in_a_run().get("asked") == "/"
            and _in_a_run().get("outside") in (None, "")
        ),
    ),
    Internal(
        "Host.get_fact(name_or_cls, *args, **kwargs)",
        "every fact read of a host goes through it; on a host this project's deploys read, the host's own is set to "
        "answer from the batch (pyinfra calls it on the host object: host.get_fact)",
        "run/batch.py (route_host_io)",
        lambda: _params(Host.get_fact) == ["self", "name_or_cls", "args", "kwargs"],
    ),
    Internal(
        "Host.run_shell_command(*args, **kwargs) and Host.put_file(*args, **kwargs)",
        "every command and upload of an operation, called on the host object; wrapped there to see the run's first "
        "change on a host",
        "run/batch.py (route_host_io), remote.Live",
        lambda: (
            _params(Host.run_shell_command) == ["self", "args", "kwargs"]
            and _params(Host.put_file) == ["self", "args", "kwargs"]
        ),
    ),
    Internal(
        "State.callback_handlers, State.add_callback_handler(handler)",
        "our callbacks are added once per run, found again by type",
        "run/batch.py, run/timings.py, run/run_summary.py",
        lambda: _state_attribute("callback_handlers") and _params(State.add_callback_handler) == ["self", "handler"],
    ),
    Internal(
        "State.current_deploy_filename",
        "the deploy file being run: names the facts list kept per deploy",
        "planner/reading.py",
        lambda: _state_attribute("current_deploy_filename"),
    ),
    Internal(
        "State.get_op_meta(op_hash).names, State.get_op_data_for_host(host, op_hash), State.activated_hosts",
        "an operation's names and a host's data for it, at the end of a run",
        "run/timings.py, run/run_summary.py",
        lambda: (
            _params(State.get_op_meta) == ["self", "op_hash"]
            and _params(State.get_op_data_for_host)[:3] == ["self", "host", "op_hash"]
            and _state_attribute("activated_hosts")
        ),
    ),
    Internal(
        "an operation's ._inner (the generator under @operation)",
        "the operation fixtures run it with a stand-in host, as pyinfra's own tests do",
        "tests/unit/test_operations.py, tests/regen_operation_fixtures.py",
        lambda: "decorated_func._inner = func" in inspect.getsource(_module("pyinfra.api.operation")),
    ),
    Internal(
        "pyinfra_cli.util.parse_cli_arg(arg)",
        "how --data values arrive: true/false as bools, digits as ints, JSON, else the string",
        "config/settings.py (_coerce: 3.10 arrives as 3.1), run/rolling.py (its --data options)",
        lambda: _cli_parses() == [True, 8000, 3.1, "x"],
    ),
    Internal(
        "pyinfra_cli.inventory.make_inventory(inventory, override_data=, cwd=) under pyinfra.context.ctx_state",
        "an inventory file loaded as pyinfra's CLI loads it: its hosts in the file's order, --data over their data",
        "run/rolling.py (the fleet's hosts, cut in batches)",
        lambda: _inventory_loads() == [["web2", 1, "z"], ["web1", 2, "z"]],
    ),
    Internal(
        "a connector class's data_meta (pyinfra.api.connectors.get_all_connectors())",
        "the host data names pyinfra's connectors read (ssh_port ...): allowed beside our settings",
        "config/settings.py (pyinfra_name)",
        lambda: "ssh_port" in _module("pyinfra.api.connectors").get_all_connectors()["ssh"].data_meta,
    ),
)


def changed() -> list[str]:
    """The internals whose shape differs in the installed pyinfra: [] where all hold."""
    out = []
    for internal in INTERNALS:
        try:
            holds = internal.check()
        except Exception as exc:  # gone, renamed, moved: all the same to us
            holds, internal = (
                False,
                Internal(f"{internal.name} ({exc!r})", internal.shape, internal.used_by, internal.check),
            )
        if not holds:
            out.append(f"{internal.name}: {internal.shape}; used by {internal.used_by}")
    return out


def connector_arguments(host: Host, asked: dict[str, Any]) -> dict[str, Any]:
    """The connector arguments (`_sudo`, `_env`, `_shell_executable` ...) that a fact read asked now
    with `asked` would run with, resolved as pyinfra's own fact reads do (pyinfra.api.facts
    `_handle_fact_kwargs`): the running operation's global arguments, overridden by the ask's, over the
    deploy's, the host data's and the config's defaults."""
    arguments = dict(host.current_op_global_arguments or {})
    arguments.update(asked)
    resolved, _ = pop_global_arguments(host.state, host, arguments)
    return {key: resolved.get(key) for key in CONNECTOR_ARGUMENT_KEYS}  # type: ignore[misc]


@dataclass(frozen=True)
class HostIO:
    """Host's own get_fact, run_shell_command and put_file, as they were before route_host_io."""

    get_fact: Callable
    run_shell_command: Callable
    put_file: Callable


ORIGINAL = HostIO(Host.get_fact, Host.run_shell_command, Host.put_file)


def route_host_io(host: Host, get_fact: Callable, run_shell_command: Callable, put_file: Callable) -> None:
    """Send this host's fact reads, commands and uploads through these (once; they call ORIGINAL's): set on
    the host object alone, so pyinfra's Host class, and every host no deploy of ours reads, stay as they are."""
    if vars(host).get("get_fact") is None:
        host.get_fact = MethodType(get_fact, host)  # type: ignore[method-assign]
        host.run_shell_command = MethodType(run_shell_command, host)  # type: ignore[method-assign]
        host.put_file = MethodType(put_file, host)  # type: ignore[method-assign]
