"""The network settings' shell (tasks/network.py) on a real @local host: a command run with it sees the
settings from the root-only file, the command line holds only the file's name, and where the file is
absent or unreadable the command runs without them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pyinfra.api import Config, Inventory, State, StringCommand
from pyinfra.api.connect import connect_all

from tasks import network

pytestmark = pytest.mark.unit

PROXY = "http://ops:s3cr'et$x@proxy.internal:3128"  # a quote and a $: kept as they are


@pytest.fixture(scope="module")
def local_host():
    inventory = Inventory((["@local"], {}))
    state = State(inventory, Config())
    connect_all(state)
    return inventory.get_host("@local")


def run(host, path: Path, command: str) -> tuple[bool, str]:
    ok, out = host.run_shell_command(StringCommand(command), _shell_executable=network.shell(str(path)))
    return ok, "\n".join(out.stdout_lines)


def test_a_step_sees_the_settings_and_its_command_line_holds_only_the_files_name(local_host, tmp_path) -> None:
    path = tmp_path / "network.env"
    path.write_text(network.env_text({"http_proxy": PROXY, "HF_ENDPOINT": "https://hub.internal"}))
    path.chmod(0o600)
    ok, out = run(
        local_host, path, 'printf "%s|%s" "$http_proxy" "$HF_ENDPOINT"; echo; cat /proc/$$/cmdline | tr "\\0" " "'
    )
    assert ok
    seen, cmdline = out.splitlines()
    assert seen == f"{PROXY}|https://hub.internal"
    assert "s3cr" not in cmdline and "hub.internal" not in cmdline
    assert str(path) in network.shell(str(path))


def test_without_the_file_a_step_runs_without_the_settings(local_host, tmp_path) -> None:
    ok, out = run(local_host, tmp_path / "absent.env", 'printf "[%s]" "${http_proxy:-}"')
    assert ok and out == "[]"


def test_a_user_who_cannot_read_the_file_runs_without_it(tmp_path) -> None:
    if os.geteuid() != 0:
        pytest.fail("the test bed runs as root (it checks a file root alone may read)")
    path = tmp_path / "network.env"
    path.write_text(network.env_text({"http_proxy": PROXY}))
    path.chmod(0o600)
    tmp_path.chmod(0o755)
    shell = network.shell(str(path))
    res = subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sh",
            "-c",
            f'{shell} -c \'printf "[%s]" "${{http_proxy:-}}"\'',
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 0 and res.stdout == "[]", res.stderr


def test_a_path_with_a_quote_is_refused() -> None:
    with pytest.raises(ValueError, match="holds a quote"):
        network.shell("/etc/it's/network.env")
