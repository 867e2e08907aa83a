"""The log rotation root runs beside the server (remote/actions/log_rotate.py), on this machine's files:
copies kept and dropped, and no link or extra name followed (the run directory's names are not trusted)."""

from __future__ import annotations

import os
from pathlib import Path

import remote

log_rotate = remote.load("log_rotate.py")


def test_rotates_past_the_cap_keeping_n_copies(tmp_path: Path) -> None:
    log = tmp_path / "tritonserver.log"
    for n in range(4):
        log.write_text(f"round {n}\n" * 200)
        assert log_rotate.rotate(str(log), 1000, 2) is True
        assert log.read_bytes() == b""
    assert (tmp_path / "tritonserver.log.1").read_text().startswith("round 3")
    assert (tmp_path / "tritonserver.log.2").read_text().startswith("round 2")
    assert not (tmp_path / "tritonserver.log.3").exists()
    assert oct((tmp_path / "tritonserver.log.1").stat().st_mode & 0o777) == "0o640"
    log.write_text("small\n")
    assert log_rotate.rotate(str(log), 1000, 2) is False and log.read_text() == "small\n"


def test_a_link_or_a_second_name_is_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("secret\n" * 500)
    log = tmp_path / "tritonserver.log"
    log.symlink_to(victim)
    assert log_rotate.rotate(str(log), 10, 2) is False
    log.unlink()
    os.link(victim, log)  # a hard link: the same file under another name
    assert log_rotate.rotate(str(log), 10, 2) is False
    assert victim.read_text() == "secret\n" * 500  # not truncated
    log.unlink()
    log.write_text("x" * 100)
    (tmp_path / "tritonserver.log.1.tmp").symlink_to(victim)  # a planted copy target
    assert log_rotate.rotate(str(log), 10, 2) is True
    assert victim.read_text() == "secret\n" * 500 and (tmp_path / "tritonserver.log.1").read_text() == "x" * 100
