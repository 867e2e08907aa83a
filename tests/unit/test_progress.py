"""Progress lines of long host steps (remote/_progress.py, remote/actions/live.py), on real processes and files."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

import remote

pytestmark = pytest.mark.unit

live = remote.load("live.py")

# A stand-in for pip: says what it downloads, then writes it into $TMPDIR in 4 steps over ~0.8 s.
PIP_LIKE = """
import os, sys, tempfile, time
print("Collecting big")
print("Downloading http://127.0.0.1:1/wheels/big-1.0%2Bcpu-py3-none-any.whl (4.2 MB)", flush=True)
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "big-1.0+cpu-py3-none-any.whl"), "wb") as f:
    for _ in range(4):
        f.write(b"x" * 1_000_000); f.flush(); time.sleep(0.2)
sys.exit(int(sys.argv[1]))
"""


def test_a_long_download_says_the_file_its_size_rate_and_time_left(capsys) -> None:
    assert live.main("wheels (torch)", [sys.executable, "-c", PIP_LIKE, "0"], every=0.15) == 0
    err = capsys.readouterr().err.splitlines()
    steps = [
        line
        for line in err
        if re.fullmatch(
            r"wheels \(torch\): big-1\.0\+cpu-py3-none-any\.whl [\d.]+ MiB of 4\.0 MiB(, \d+ s left)?; "
            r"in all [\d.]+ MiB, [\d.]+ MiB/s",
            line,
        )
    ]
    assert len(steps) >= 2, err
    assert any(" s left;" in line for line in steps), err
    assert re.fullmatch(r"wheels \(torch\): 3\.8 MiB in [\d.]+ s \([\d.]+ MiB/s\)", err[-1]), err
    assert not any("Collecting" in line for line in err)  # a success stays quiet but for its progress


# pip rounds the size it announces: a 1.74 MB file is "(1.7 MB)", less than what is written at the end
PIP_ROUNDED = """
import os, sys, tempfile, time
print("Downloading http://127.0.0.1:1/wheels/python_rapidjson-1.20-cp311-none-any.whl (1.7 MB)", flush=True)
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "python_rapidjson-1.20-cp311-none-any.whl"), "wb") as f:
    for chunk in (1_000_000, 740_000):
        f.write(b"x" * chunk); f.flush(); time.sleep(0.5)
"""


def test_a_file_s_done_size_is_never_above_its_total(capsys) -> None:
    assert live.main("wheels (index)", [sys.executable, "-c", PIP_ROUNDED], every=0.15) == 0
    err = capsys.readouterr().err.splitlines()
    sizes = [re.search(r"whl ([\d.]+) MiB of ([\d.]+) MiB", line) for line in err]
    pairs = [(float(m[1]), float(m[2])) for m in sizes if m]
    assert any(done >= 1.6 for done, _ in pairs), err  # a line was printed once the file passed pip's figure
    assert all(done <= total for done, total in pairs), err


def test_downloads_at_once_name_the_file_being_written_though_another_pip_spoke_last(capsys) -> None:
    """Two pips at once (tasks/pip_commands.pip_at_once): the big file is named with its size while a small one
    announced after it comes and goes."""
    small = (
        "import time; time.sleep(0.1); print('Downloading http://127.0.0.1:1/wheels/small-1-py3-none-any.whl (1 kB)')"
    )
    python = shlex.quote(sys.executable)
    both = f"{python} -c {shlex.quote(PIP_LIKE)} 0 & {python} -c {shlex.quote(small)}; wait"
    assert live.main("wheels (torch, index1)", ["sh", "-c", both], every=0.15) == 0
    err = capsys.readouterr().err.splitlines()
    named = [line for line in err if "big-1.0+cpu-py3-none-any.whl" in line and "of 4.0 MiB" in line]
    assert len(named) >= 3, err


def test_a_failed_command_shows_its_output_and_exit_status(capsys) -> None:
    assert live.main("wheels (index)", [sys.executable, "-c", PIP_LIKE, "3"], every=10) == 3
    err = capsys.readouterr().err.splitlines()
    assert "Collecting big" in err and err[-1] == "wheels (index): failed (exit status 3)"


def test_a_quick_step_prints_no_progress(capsys) -> None:
    assert live.main("wheels (torch)", [sys.executable, "-c", "pass"]) == 0
    assert capsys.readouterr().err == ""


def test_progress_gives_bytes_of_total_rate_and_time_left() -> None:
    fetch = remote.load("fetch.py")  # the shared piece, as the download script carries it
    p = fetch.Progress("download t.tar", total=100 << 20)
    p.first, p.start = 0, 0.0
    assert p.line(25 << 20, 5.0) == "download t.tar: 25.0 MiB of 100.0 MiB (25%), 5.0 MiB/s, 15 s left"
    assert p.line(50 << 20, 5.0).endswith("10.0 MiB/s, 5 s left")
    resumed = fetch.Progress("hub org/m", total=0)
    resumed.first, resumed.start = 40 << 20, 0.0  # 40 MiB were there before: not in the rate
    assert resumed.line(60 << 20, 10.0) == "hub org/m: 60.0 MiB, 2.0 MiB/s"
    slow = fetch.Progress("x", total=10 << 30)
    slow.first, slow.start = 0, 0.0
    assert slow.line(1 << 30, 100.0).endswith(", 15 min 00 s left")


def _first_progress_line(wait: list[str], job: Path) -> tuple[str, int, str]:
    """Run the wait, take its first progress line as it comes, then finish the job it waits for (its rc
    file): no clock, no sleep; the wait exits with the job's status."""
    import subprocess

    proc = subprocess.Popen(wait, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline().rstrip("\n")
    # written aside and renamed, as the job does (venv_restore_start.sh): the wait may look at any moment,
    # and an rc file seen empty, half written, exits 2 ("Illegal number")
    job.with_name(job.name + ".rc.tmp").write_text("0\n")
    job.with_name(job.name + ".rc.tmp").rename(job.with_name(job.name + ".rc"))
    rest = proc.stderr.read()
    return line, proc.wait(timeout=30), rest


def test_the_venv_restore_wait_reports_what_is_read_then_unpacked(tmp_path: Path) -> None:
    import os
    import time

    venv, token = tmp_path / "venv", "abc"
    job = tmp_path / "venv.restore-abc"
    snapshot = tmp_path / "snap.tar.zst"
    snapshot.write_bytes(b"\0" * (8 << 20))
    (tmp_path / "venv.new").mkdir()
    begun = int(time.time()) - 4  # the job began 4 s ago: 2 MiB read since, of 8
    os.utime(tmp_path / "venv.new", (begun, begun))
    (tmp_path / "venv.snapshot").write_bytes(b"\1" * (2 << 20))
    job.with_name(job.name + ".log").write_text("unpacked by the job\n")
    wait = ["sh", "-c", remote.source("venv_restore_wait.sh"), "w", str(venv), token, str(snapshot), "1"]
    line, rc, rest = _first_progress_line(wait, job)
    waited = int(time.time()) - begun  # the seconds the script can have counted, at most
    assert rc == 0 and "unpacked by the job" in rest
    m = re.fullmatch(r"venv snapshot: 2 MiB of 8 MiB read from the persistent path, (\d+) KiB/s, (\d+) s left", line)
    assert m, line
    rate, left = int(m[1]), int(m[2])
    # 2 MiB in s seconds, 6 MiB to go at that rate: s is 4 when the line was made, or a little more
    seconds = [s for s in range(4, waited + 1) if (2 << 20) // s // 1024 == rate and 6 * s // 2 == left]
    assert seconds, (line, waited)
    # read in full, unpacking: what is unpacked so far
    (tmp_path / "venv.new" / "part").write_bytes(b"\2" * (3 << 20))
    job.with_name(job.name + ".log").write_text("")
    line, rc, _ = _first_progress_line(wait, job)
    assert rc == 0 and line == "venv snapshot: 3 MiB unpacked"
    assert not job.with_name(job.name + ".rc").exists()  # the wait removes the job's files


def test_a_fast_read_shows_mib_per_second(tmp_path: Path) -> None:
    import os
    import time

    venv, job = tmp_path / "venv", tmp_path / "venv.restore-t"
    snapshot = tmp_path / "snap"
    snapshot.write_bytes(b"\0" * (64 << 20))
    (tmp_path / "venv.new").mkdir()
    begun = int(time.time()) - 2
    os.utime(tmp_path / "venv.new", (begun, begun))
    (tmp_path / "venv.snapshot").write_bytes(b"\1" * (32 << 20))
    job.with_name(job.name + ".log").write_text("")
    wait = ["sh", "-c", remote.source("venv_restore_wait.sh"), "w", str(venv), "t", str(snapshot), "1"]
    line, rc, _ = _first_progress_line(wait, job)
    assert rc == 0 and re.fullmatch(
        r"venv snapshot: 32 MiB of 64 MiB read from the persistent path, \d+ MiB/s, \d+ s left", line
    ), line


def test_the_restore_wait_survives_the_unpacked_venv_being_swapped_in_between_two_lines(tmp_path) -> None:
    """The unpack renames VENV.new into place while the wait measures it: du then prints nothing. The wait
    goes on (it once failed there: "arithmetic expression: expecting primary"), and ends with the job."""
    import subprocess
    import threading

    (tmp_path / "snap").write_text("x")

    def job_ends() -> None:  # its rc written aside and renamed, as the job does
        (tmp_path / "v.restore-T.rc.tmp").write_text("0\n")
        (tmp_path / "v.restore-T.rc.tmp").rename(tmp_path / "v.restore-T.rc")

    done = threading.Timer(0.6, job_ends)
    done.start()
    res = subprocess.run(
        ["sh", "-c", remote.source("venv_restore_wait.sh"), "w", str(tmp_path / "v"), "T", str(tmp_path / "snap"), "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    done.join()
    assert res.returncode == 0 and "arithmetic" not in res.stderr, res.stderr
