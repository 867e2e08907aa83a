"""Lines the server's user wrote (Triton's log, the proof's lines) reach the operator's terminal with their
control characters escaped: an escape sequence in a log cannot clear the screen or rewrite a line."""

from __future__ import annotations

import pytest

import remote
from run import host_log

pytestmark = pytest.mark.unit

wait_ready = remote.load("wait_ready.py")
HOSTILE = "E1202 12:00:00.000 model.py:1] error\x1b[2J\x1b[1A\x1b[2Kall models OK\x9b31m"


def test_a_server_log_line_with_escape_sequences_is_shown_escaped(tmp_path) -> None:
    log = tmp_path / "tritonserver.log"
    log.write_text(f"--- start\n{HOSTILE}\n")
    shown = wait_ready.explain(str(log))
    assert "\x1b" not in shown and "\r" not in shown and "\x9b" not in shown
    assert "error\\x1b[2J\\x1b[1A\\x1b[2Kall models OK\\x9b31m" in shown


class _Host:
    def __init__(self, lines: list[str]) -> None:
        self.lines, self.logged = lines, []

    def get_fact(self, fact, path: str):
        return self.lines

    def log(self, line: str) -> None:
        self.logged.append(line)


def test_the_proofs_lines_are_shown_escaped() -> None:
    host = _Host(["ready: smoke", HOSTILE])
    assert host_log._show(None, host, "/opt/triton/run/proof.txt")
    assert host.logged[0] == "ready: smoke" and "\x1b" not in host.logged[1] and "\\x1b[2J" in host.logged[1]
