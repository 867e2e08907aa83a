"""Code that runs on the target host, in one place: shell scripts (`*.sh`) and Python scripts
(`*.py`, for the host's python3 3.8+), and the one command builder facts and operations use.

- `probes/`: what facts run: they read the host and change nothing; each named after its fact
  (`server_state.sh` for facts.server.ServerState).
- `actions/`: what operations run: they change the host (`unpack_triton.py` installs a build).
- `tasks/<concern>/scripts/`: what a concern's operations run, beside them (`tasks/venv/scripts/`).
- here: the shared pieces both inline (`lib.sh`, `as_user.sh`, `uv_binary.sh`, `_common.py` ...).

A script is named by its file name alone (`shell("server_state.sh")`): names are unique across the folders.

A script travels inside the command (`sh -c SOURCE NAME ARGS...`, `python3 -c SOURCE ARGS...`);
host data only ever reaches it as quoted arguments, never pasted into its text. Shared pieces are
written once and inlined on sending: a shell line `. ./lib.sh` becomes lib.sh's text, a Python line
`from _common import ...` becomes _common.py's text (both also work as written, for shellcheck and
for the unit tests that import a script).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from types import ModuleType

from pyinfra.api import QuoteString, StringCommand

REMOTE = Path(__file__).resolve().parent
# A concern's own host scripts sit beside the code that sends them (tasks/venv/scripts/: the venv's), as a
# packaged pyinfra deploy keeps its scripts; the rest here until their concern has a folder (issue 57).
CONCERN_SCRIPTS = tuple(sorted((REMOTE.parent / "tasks").glob("*/scripts")))
FOLDERS = (REMOTE / "probes", REMOTE / "actions", *CONCERN_SCRIPTS, REMOTE)
_SHELL_INCLUDE = re.compile(r"^\. \./(?P<name>[a-z_]+\.sh)$", re.MULTILINE)
_PYTHON_INCLUDE = re.compile(
    r"^from (?P<name>_[a-z][a-z_]*) import (?:[A-Za-z0-9_, ]+|\([A-Za-z0-9_,\s]+\))$", re.MULTILINE
)


@cache
def path(name: str) -> Path:
    """Where the script `name` is: in probes/, actions/ or (a shared piece) remote/ itself."""
    for folder in FOLDERS:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"no host script {name} in remote/ (probes/, actions/ or shared) or tasks/*/scripts/")


@cache
def source(name: str) -> str:
    """A script's text as sent to the host, its shared pieces inlined."""
    text = path(name).read_text()
    if name.endswith(".sh"):
        return _SHELL_INCLUDE.sub(lambda m: source(m["name"]).rstrip("\n"), text)
    return _PYTHON_INCLUDE.sub(lambda m: (REMOTE / f"{m['name']}.py").read_text().rstrip("\n"), text)


def shell(name: str, *args: str | int) -> StringCommand:
    """`sh -c SCRIPT NAME ARG...`: the script reads its arguments as "$1", "$2" ... or "$@"."""
    return StringCommand("sh", "-c", QuoteString(source(name)), name, *(QuoteString(str(a)) for a in args))


def python(
    interpreter: str, name: str, *args: str, via: str | None = None, env: dict[str, str] | None = None
) -> StringCommand:
    """`[env K=V] [VIA] PYTHON -c SCRIPT ARG...`. via is a launcher that sets the environment first
    (the interpreter is then found on its PATH)."""
    prefix: list = ["env", *(QuoteString(f"{k}={v}") for k, v in (env or {}).items())] if env else []
    if via:
        prefix.append(QuoteString(via))
    return StringCommand(
        *prefix, QuoteString(interpreter), "-c", QuoteString(source(name)), *(QuoteString(a) for a in args)
    )


def as_user(user: str) -> list:
    """The bits that run what follows as user: setpriv to its uid, gid and groups, no new privileges, no
    capabilities (what root runs on behalf of the server's user: hub fetches, in-process checks)."""
    return [
        "setpriv", QuoteString(f"--reuid={user}"), QuoteString(f"--regid={user}"), "--init-groups",
        "--no-new-privs", "--inh-caps=-all", "--",
    ]  # fmt: skip


class Live(StringCommand):
    """A command whose output a run shows as it comes, without -v: a long step's progress lines (pyinfra
    otherwise holds a command's output until it ends, and shows it only on failure)."""

    def execute(self, state, host, connector_arguments):
        connector_arguments.update(self.connector_arguments)
        return host.run_shell_command(self, print_output=True, print_input=state.print_input, **connector_arguments)


def live(command: StringCommand) -> Live:
    """The same command, its output shown live (for scripts that print their own progress lines)."""
    return Live(*command.bits, _separator=command.separator)


def watched(label: str, command: StringCommand) -> Live:
    """COMMAND run by live.py, which shows every few seconds how far its downloads are (LABEL: bytes,
    rate, the file and its time left) and its output only if it fails; shown live."""
    return Live("python3", "-c", QuoteString(source("live.py")), QuoteString(label), "sh", "-c", QuoteString(command))


def hex_name(name: str) -> str:
    """A file name as prune.py takes it: its raw bytes in hex (TreeEntries keeps undecodable bytes as
    surrogates), so that no byte of it can be misread on the way."""
    return name.encode("utf-8", "surrogateescape").hex()


def load(name: str) -> ModuleType:
    """Import a Python host script here, as sent (its shared pieces inlined): for the unit tests."""
    module = ModuleType(name.removesuffix(".py"))
    module.__file__ = str(path(name))
    exec(compile(source(name), str(path(name)), "exec"), module.__dict__)
    return module


def scripts() -> list[Path]:
    """Every script of the folders (for the tests: shellcheck, fixtures' <script NAME> labels)."""
    found = [
        p for folder in FOLDERS for p in folder.iterdir() if p.suffix in (".sh", ".py") and p.name != "__init__.py"
    ]
    return sorted(found, key=lambda p: p.name)
