"""Host scripts that carry safety or state, run for real on temporary trees (a stand-in `tritonserver`
process where one is needed): their effect is asserted (modes, links, processes, exit status), not
their text. The operation fixtures pin the commands; these prove what the commands do."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import remote

pytestmark = pytest.mark.unit


def sh(name: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sh", "-c", remote.source(name), name, *args], capture_output=True, text=True, timeout=timeout
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- staged_install.py: every upload and relayed file placed without following a link, unreadable by others


def install(staged: Path, dest: Path, mode: str, sha256: str = "") -> int:
    """staged_install.py as the host runs it (python3 -c SOURCE ARGS...)."""
    args = [str(staged), str(dest), mode, *([sha256] if sha256 else [])]
    return subprocess.run([sys.executable, "-c", remote.source("staged_install.py"), *args], timeout=60).returncode


@pytest.fixture
def root_only() -> Iterator[Path]:
    """A folder that only root may change, whose every folder above is too (not under /tmp: 1777)."""
    base = Path(tempfile.mkdtemp(dir="/var/cache", prefix="staged-install-"))
    try:
        yield base
    finally:
        shutil.rmtree(base)


def _others_folder(base: Path, name: str) -> Path:
    """A folder of nobody's (65534), 0755: apt's lists/partial/ is _apt's so, a model folder the server user's."""
    folder = base / name
    folder.mkdir()
    os.chown(folder, 65534, 65534)
    return folder


def test_a_file_is_staged_0600_in_a_root_only_directory_and_given_its_mode_through_its_descriptor(
    root_only: Path, monkeypatch
) -> None:
    """In-process, the moment before its mode is set: the staged file is 0600, in a fresh 0700 directory of
    the deepest root-only folder (not in the other user's folder it goes to), and the mode is set by descriptor."""
    script = remote.load("staged_install.py")
    partial = _others_folder(root_only, "partial")
    seen: list[tuple[int, int, str]] = []
    real_fchmod = os.fchmod

    def fchmod(fd: int, mode: int) -> None:
        where = os.path.dirname(os.readlink(f"/proc/self/fd/{fd}"))
        seen.append((stat.S_IMODE(os.fstat(fd).st_mode), stat.S_IMODE(os.stat(where).st_mode), where))
        real_fchmod(fd, mode)

    monkeypatch.setattr(script.os, "fchmod", fchmod)
    staged = root_only / "staged"
    staged.write_text("signed list")
    script.install(str(staged), str(partial / "Packages.gz"), 0o644)
    ((file_mode, folder_mode, where),) = seen
    assert (file_mode, folder_mode) == (0o600, 0o700)
    assert Path(where).parent == root_only and Path(where).name.startswith(".triton-stage.")
    assert mode(partial / "Packages.gz") == 0o644 and (partial / "Packages.gz").read_text() == "signed list"
    assert sorted(p.name for p in root_only.iterdir()) == ["partial", "staged"]  # the stage is gone


def test_a_link_planted_where_the_file_goes_is_replaced_never_followed(root_only: Path) -> None:
    """The review's hole: `_apt` swapped the staged file in lists/partial/ for a link to a root-only file after
    the hash; root's `chmod 644` made that file world-readable. Now nothing is done through a path there."""
    partial = _others_folder(root_only, "partial")
    secret = root_only / "shadow"
    secret.write_text("root only")
    secret.chmod(0o600)
    (partial / "Packages.gz").symlink_to(secret)
    (partial / "Packages.gz.from-controller").symlink_to(secret)  # where the old scripts wrote and chmod'ed
    (partial / "Packages.gz.new").symlink_to(secret)
    staged = root_only / "staged"
    staged.write_text("signed list")
    assert install(staged, partial / "Packages.gz", "644") == 0
    assert mode(secret) == 0o600 and secret.read_text() == "root only"
    assert not (partial / "Packages.gz").is_symlink() and (partial / "Packages.gz").read_text() == "signed list"


def test_a_folder_on_the_way_that_is_a_link_another_user_planted_is_refused(root_only: Path, capsys) -> None:
    models = _others_folder(root_only, "models")
    etc = root_only / "etc"
    etc.mkdir()
    (models / "clf").symlink_to(etc)  # the server's user turns a model folder into a link to root's folder
    staged = root_only / "staged"
    staged.write_text("x")
    assert install(staged, models / "clf" / "config.pbtxt", "644") == 1
    assert list(etc.iterdir()) == []
    current = root_only / "current"  # a link in a root-only folder (the install's own): followed
    current.symlink_to(etc)
    assert install(staged, current / "TRITON_VERSION", "644") == 0 and (etc / "TRITON_VERSION").read_text() == "x"


def test_a_file_whose_sha256_is_not_the_one_asked_is_not_placed(root_only: Path) -> None:
    import hashlib

    dest = root_only / "archives" / "libb64-0d.deb"
    dest.parent.mkdir()
    dest.write_bytes(b"the old one")
    staged = root_only / "staged"
    staged.write_bytes(b"tampered on the way")
    assert install(staged, dest, "644", hashlib.sha256(b"the new one").hexdigest()) == 1
    assert dest.read_bytes() == b"the old one" and sorted(p.name for p in dest.parent.iterdir()) == [dest.name]
    assert not [p for p in root_only.iterdir() if p.name.startswith(".triton-stage.")]
    staged.write_bytes(b"the new one")
    assert install(staged, dest, "644", hashlib.sha256(b"the new one").hexdigest()) == 0
    assert dest.read_bytes() == b"the new one" and mode(dest) == 0o644


def test_where_no_root_only_folder_is_on_its_disk_a_file_swapped_while_it_is_placed_is_removed(
    tmp_path: Path, monkeypatch
) -> None:
    """Under /tmp (1777) the file is staged beside its place: what the rename put there must be that file."""
    script = remote.load("staged_install.py")
    real_rename = os.rename

    def swapped(src, dst, *, src_dir_fd, dst_dir_fd):
        os.unlink(src, dir_fd=src_dir_fd)
        os.symlink("/etc/shadow", src, dir_fd=src_dir_fd)
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(script.os, "rename", swapped)
    staged = tmp_path / "staged"
    staged.write_text("x")
    with pytest.raises(script.Refused, match="swapped while it was placed"):
        script.install(str(staged), str(tmp_path / "out" / "f"), 0o644)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_secret_replaces_an_old_world_readable_file(tmp_path: Path) -> None:
    staged, dest = tmp_path / "staged", tmp_path / "token"
    staged.write_text("new")
    dest.write_text("old")
    dest.chmod(0o644)
    assert install(staged, dest, "600") == 0
    assert dest.read_text() == "new" and mode(dest) == 0o600


def test_the_secret_travels_through_a_fresh_private_directory_each_time(tmp_path: Path) -> None:
    """tasks/downloads/private_upload.py on a real @local host: the staging path is mktemp's (never a fixed /tmp name
    another user could plant), 0700 while the secret is in it, and gone after."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.connect import connect_all

    from tasks.downloads import private_upload

    inventory = Inventory((["@local"], {}))
    state = State(inventory, Config())
    connect_all(state)
    host = inventory.get_host("@local")
    staged: list[tuple[str, int]] = []
    put = host.put_file

    def watched_put(src, dest, *args, **kwargs):
        staged.append((dest, mode(Path(dest).parent)))
        return put(src, dest, *args, **kwargs)

    host.put_file = watched_put  # type: ignore[method-assign]
    dest = tmp_path / "hf" / "token"
    for _ in range(2):
        assert private_upload._put_private(host, str(dest), private_upload.Secret("hf_tok"), "600", {})
    assert len(staged) == 2 and staged[0][0] != staged[1][0]  # a fresh directory each time
    for path, parent_mode in staged:
        assert private_upload._MKTEMP_DIR.match(str(Path(path).parent)) and parent_mode == 0o700
        assert not Path(path).parent.exists()  # removed after
    assert dest.read_text() == "hf_tok" and mode(dest) == 0o600


def test_a_file_is_read_back_without_a_copy_in_tmp_and_with_the_plain_shell(tmp_path: Path) -> None:
    """tasks/downloads/private_upload.read on a real @local host, inside an operation that runs in a shell the login
    user may not run: the file's text reaches the controller through the command's
    output, the shell is the plain one, and no copy of it is made under /tmp."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.connect import connect_all

    from tasks.downloads import private_upload

    inventory = Inventory((["@local"], {}))
    state = State(inventory, Config())
    connect_all(state)
    host = inventory.get_host("@local")
    src = tmp_path / "requirements.lock"
    marker = f"six==1.17.0 --hash=sha256:{os.getpid()}"  # this run's own text
    src.write_text(f"{marker}  # six.whl\ntorch==2.13.0\n")
    kept: list[str] = []
    read = private_upload.read(str(src), lambda host, text: kept.append(text) or True)
    assert read.execute(state, host, {"_shell_executable": str(tmp_path / "no-such-shell")})
    assert kept == [src.read_text()]

    def holds_it(path: Path) -> bool:
        with path.open("rb") as f:
            return marker.encode() in f.read(4096)

    assert [p for p in Path("/tmp").iterdir() if p.is_file() and not p.is_symlink() and holds_it(p)] == []
    gone = private_upload.read(str(src), lambda host, text: kept.append(text) or True, remove=True)
    assert gone.execute(state, host, {}) and kept[-1] == kept[0] and not src.exists()  # its home: the controller
    kept.pop()
    missing = private_upload.read(str(tmp_path / "absent"), lambda host, text: kept.append(text) or True)
    assert not missing.execute(state, host, {}) and len(kept) == 1


def test_an_upload_in_a_step_run_by_another_shell_uses_the_plain_shell(tmp_path: Path) -> None:
    """A private upload inside an operation whose shell is another (one the login user may not run): its
    commands, the login user's mktemp among them, run in sh."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.connect import connect_all

    from tasks.downloads import private_upload

    inventory = Inventory((["@local"], {}))
    state = State(inventory, Config())
    connect_all(state)
    host = inventory.get_host("@local")
    dest = tmp_path / "etc" / "file"
    args = {"_shell_executable": str(tmp_path / "no-such-shell")}
    assert private_upload._put_private(host, str(dest), b"data", "644", args)
    assert dest.read_bytes() == b"data"


# --- links_switch.sh / links_adopt.sh: links switched as one, never none


def test_a_link_to_a_directory_is_switched_to_the_new_target(tmp_path: Path) -> None:
    old, new, link = tmp_path / "v1", tmp_path / "v2", tmp_path / "current"
    old.mkdir()
    new.mkdir()
    link.symlink_to(old)
    os.utime(old, (1, 1))
    res = sh("links_switch.sh", str(link), str(new))
    assert res.returncode == 0, res.stderr
    assert os.readlink(link) == str(new)  # the link itself moved (mv -T), not a link made inside v1
    assert not (old / "current.new").exists() and not (old / "current").exists()
    assert old.stat().st_mtime > 1  # the target it left is touched: the one to roll back to


def test_several_links_switch_and_a_missing_target_or_a_real_directory_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    l1, l2 = tmp_path / "l1", tmp_path / "l2"
    assert sh("links_switch.sh", str(l1), str(a), str(l2), str(b)).returncode == 0
    assert (os.readlink(l1), os.readlink(l2)) == (str(a), str(b))
    res = sh("links_switch.sh", str(l1), str(tmp_path / "gone"))
    assert res.returncode != 0 and "is missing" in res.stderr and os.readlink(l1) == str(a)
    real = tmp_path / "venv"
    real.mkdir()
    res = sh("links_switch.sh", str(real), str(a))
    assert res.returncode != 0 and "is not a link" in res.stderr and real.is_dir() and not real.is_symlink()


def test_an_older_install_s_real_directory_is_adopted_behind_a_link(tmp_path: Path) -> None:
    venv, aside = tmp_path / "venv", tmp_path / "venv.versions" / "adopted"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").write_text("x")
    res = sh("links_adopt.sh", str(venv), str(aside))
    assert res.returncode == 0 and venv.is_symlink() and os.readlink(venv) == str(aside)
    assert (venv / "bin" / "python3").read_text() == "x"  # every path into it still resolves
    assert sh("links_adopt.sh", str(venv), str(aside)).returncode == 0 and os.readlink(venv) == str(aside)


# --- server_start.sh / server_stop.sh with a stand-in tritonserver


# The stand-in server's interpreter: the distribution's (another user can run it; a pyenv one under /root
# could not), else this one.
SERVER_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


@pytest.fixture
def launcher() -> Iterator[Path]:
    """What the server's launcher does: runs tritonserver with its arguments; here a Python that sleeps
    with "tritonserver" in its command line (what lib.sh looks for). In a directory any user can enter
    (the server may run as another)."""
    folder = Path(tempfile.mkdtemp(prefix="launcher-"))
    folder.chmod(0o755)
    script = folder / "triton-server"
    script.write_text(f'#!/bin/sh\nexec {SERVER_PYTHON} -c "import time; time.sleep(600)" tritonserver "$@"\n')
    script.chmod(0o755)
    yield script
    shutil.rmtree(folder)


def start(run: Path, launcher: Path, user: str = "root") -> subprocess.CompletedProcess:
    return sh("server_start.sh", str(run), str(launcher), "hash1", "", user, "", "", "", "", "", "", "--http-port", "1")


def server(run: Path) -> int:
    """The recorded server's pid once its process has become the server (setsid, setpriv and the launcher
    exec into it: until then its /proc entry is theirs); fails past 10 s."""
    pid = int((run / "tritonserver.pid").read_text())
    deadline = time.monotonic() + 10
    while not _is_server(pid):
        assert time.monotonic() < deadline, f"pid {pid} never became the server"
        time.sleep(0.01)
    return pid


def _is_server(pid: int) -> bool:
    """pid runs the stand-in server: its interpreter, "tritonserver" in its command line."""
    try:
        exe = os.path.realpath(f"/proc/{pid}/exe", strict=True)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return exe == os.path.realpath(SERVER_PYTHON) and b"tritonserver" in cmdline


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_start_records_the_server_and_a_second_start_stops_the_first(tmp_path: Path, launcher: Path) -> None:
    run = tmp_path / "run"
    try:
        assert start(run, launcher).returncode == 0
        first = server(run)
        assert alive(first)
        assert (run / "config.hash").read_text() == "hash1\n"
        assert (run / "tritonserver.log").read_text().startswith("--- start ")
        assert os.getpgid(first) == first  # detached: it leads its own process group
        assert start(run, launcher).returncode == 0
        second = server(run)
        assert second != first and alive(second) and not alive(first)
        assert (run / "tritonserver.log").read_text().count("--- start ") == 2
        res = sh("server_stop.sh", str(run), "")
        assert res.returncode == 0 and not alive(second)
        assert not (run / "tritonserver.pid").exists() and not (run / "config.hash").exists()
    finally:
        sh("server_stop.sh", str(run), "")


def test_the_log_watcher_starts_with_the_server_and_a_stop_ends_it_at_once(tmp_path: Path, launcher: Path) -> None:
    """The watcher (tasks/server_unit.LOG_WATCH, an hour between checks) is stopped with the server, not
    left to run until its next check; a restart replaces it rather than adding a second one."""
    from tasks.server.unit import LOG_WATCH

    run = tmp_path / "run"
    rotate = tmp_path / "rotate"
    rotate.write_text(f"#!/bin/sh\necho rotated >> {tmp_path}/rotations\n")
    rotate.chmod(0o755)
    watch = [LOG_WATCH, str(rotate), str(run / "tritonserver.log"), "1048576", "2", "3600"]

    def started() -> int:
        assert (
            sh("server_start.sh", str(run), str(launcher), "h", "", "root", *watch, "--http-port", "1").returncode == 0
        )
        server(run)
        return int((run / "log-watch.pid").read_text())

    try:
        first = started()
        deadline = time.monotonic() + 10
        while os.getpgid(first) != first:  # setsid, between the start's fork and the loop's exec
            assert time.monotonic() < deadline, "the watcher never led a group of its own"
            time.sleep(0.01)
        assert alive(first)  # its own group: the loop and its sleep
        while not (tmp_path / "rotations").exists():  # its first check ran
            assert time.monotonic() < deadline, "the watcher never checked the log"
            time.sleep(0.01)
        second = started()
        assert second != first and alive(second)
        # TERM is sent to the group at once; it is gone within moments (an hour before the fix, at its next check)
        assert gone_within(5, [first]), "a restart left the first watcher running"
        assert sh("server_stop.sh", str(run), "").returncode == 0
        assert not (run / "log-watch.pid").exists()
        assert gone_within(5, [second, *_group(second)]), "the stop left the watcher or its sleep running"
    finally:
        sh("server_stop.sh", str(run), "")


def gone_within(seconds: float, pids: list[int]) -> bool:
    """Every one of pids has ended (or is a zombie) before seconds pass."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _group(pgid: int) -> list[int]:
    """The live processes of a process group, from /proc."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat_file.parent.name))
    return found


def test_a_pid_file_naming_another_process_kills_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (run / "tritonserver.pid").write_text(f"{other.pid}\n")
        assert sh("server_stop.sh", str(run), "").returncode == 0
        assert other.poll() is None  # not a tritonserver: left alone
        assert not (run / "tritonserver.pid").exists()
    finally:
        other.kill()
        other.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root (CI runs as root)")
def test_a_server_started_as_another_user_runs_without_privileges(tmp_path: Path, launcher: Path) -> None:
    run = tmp_path / "run"
    try:
        assert start(run, launcher, user="daemon").returncode == 0
        pid = server(run)
        status = Path(f"/proc/{pid}/status").read_text()
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        assert set(uid_line.split()[1:]) == {str(__import__("pwd").getpwnam("daemon").pw_uid)}
        assert "NoNewPrivs:\t1" in status and "CapEff:\t0000000000000000" in status
    finally:
        sh("server_stop.sh", str(run), "")


# --- wait_ready.py: a server that dies while starting is a failure


def test_the_wait_fails_when_the_server_died_while_starting(tmp_path: Path) -> None:
    wait_ready = remote.load("wait_ready.py")
    gone = subprocess.Popen(["true"])
    gone.wait()
    pid_file, log = tmp_path / "pid", tmp_path / "log"
    pid_file.write_text(f"{gone.pid}\n")
    log.write_text('--- start x\nE1201 10:00:00.000000 1 main.cc:1] "failed to start: Socket already in use"\n')
    assert wait_ready.main("127.0.0.1", "1", str(pid_file), str(log), "30") == 1


def test_the_wait_fails_at_a_fatal_log_line_while_the_server_still_runs(tmp_path: Path) -> None:
    wait_ready = remote.load("wait_ready.py")
    pid_file, log = tmp_path / "pid", tmp_path / "log"
    pid_file.write_text(f"{os.getpid()}\n")  # alive
    log.write_text("--- start x\nE1201 10:00:00.000000 1 x.cc:1] \"failed to load 'smoke' version 1: Internal\"\n")
    started = time.monotonic()
    assert wait_ready.main("127.0.0.1", "1", str(pid_file), str(log), "60") == 1
    assert time.monotonic() - started < 30  # at the line, not at the timeout


# --- venv_create.sh and lock_split.sh


def test_a_venv_that_cannot_be_made_leaves_the_old_one_in_place(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "marker").write_text("old")
    res = sh("venv_create.sh", "/bin/false", str(venv))
    assert res.returncode != 0 and (venv / "marker").read_text() == "old" and not Path(f"{venv}.old").exists()
    res = sh("venv_create.sh", sys.executable, str(venv))
    assert res.returncode == 0 and (venv / "pyvenv.cfg").exists() and not (venv / "marker").exists()


def test_the_lock_is_split_into_torch_and_the_rest(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        "numpy==1.26.4 --hash=sha256:aa\ntorch==2.13.0+cpu --hash=sha256:bb\ntorchvision==1 --hash=sha256:cc\n"
    )
    assert sh("lock_split.sh", str(lock)).returncode == 0
    assert Path(f"{lock}.torch").read_text() == "torch==2.13.0+cpu --hash=sha256:bb\n"
    assert Path(f"{lock}.rest").read_text() == "numpy==1.26.4 --hash=sha256:aa\ntorchvision==1 --hash=sha256:cc\n"


def test_the_rest_of_the_lock_is_split_into_parts_downloaded_at_once_a_line_each_in_turn(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.lock"
    rest = [f"p{i}==1 --hash=sha256:{i:02x}\n" for i in range(7)]
    lock.write_text("".join(rest[:3]) + "torch==2.13.0+cpu --hash=sha256:bb\n" + "".join(rest[3:]))
    assert sh("lock_split.sh", str(lock), "3").returncode == 0
    parts = [Path(f"{lock}.rest.{i}").read_text() for i in range(3)]
    assert parts == ["".join(rest[2::3]), "".join(rest[0::3]), "".join(rest[1::3])]
    assert Path(f"{lock}.torch").read_text() == "torch==2.13.0+cpu --hash=sha256:bb\n"
    assert not Path(f"{lock}.rest.3").exists()


# --- triton_install.sh (TritonInstall's probe): what an install holds, a writable file named


def test_the_install_probe_names_what_it_holds_and_a_file_others_may_write(tmp_path: Path) -> None:
    home = tmp_path / "triton"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "tritonserver").write_text("#!/bin/sh\n")
    (home / "bin" / "tritonserver").chmod(0o755)
    (home / "backends" / "python").mkdir(parents=True)
    (home / "TRITON_VERSION").write_text("2.51.0\n")
    out = sh("triton_install.sh", str(home), "libpython3\\.[0-9]+").stdout.splitlines()
    assert "SERVER" in out and "VERSION=2.51.0" in out and "BACKEND=python" in out
    assert not any(line.startswith("WRITABLE=") for line in out)
    (home / "backends" / "python" / "libtriton_python.so").write_text("")
    (home / "backends" / "python" / "libtriton_python.so").chmod(0o666)
    out = sh("triton_install.sh", str(home), "x").stdout.splitlines()
    assert f"WRITABLE={home}/backends/python/libtriton_python.so" in out


# --- unsafe_ancestors.sh: the part on the way to an install path another user could change


@pytest.mark.skipif(os.geteuid() != 0, reason="a tree only root can write needs root (CI runs as root)")
def test_the_first_part_another_user_may_change_is_named() -> None:
    base = Path(tempfile.mkdtemp(prefix="unsafe-", dir="/opt"))  # /opt: root's, 0755
    try:
        base.chmod(0o755)
        (base / "owned").mkdir()
        os.chown(base / "owned", 65534, 65534)
        (base / "group").mkdir(mode=0o775)
        (base / "group").chmod(0o775)
        (base / "safe").mkdir()
        out = sh(
            "unsafe_ancestors.sh",
            f"{base}/owned/triton",
            f"{base}/group/x/y",
            f"{base}/safe/triton",
            f"{base}/safe/not/made",
            "/tmp/triton",
        ).stdout.splitlines()
        assert out == [
            f"UNSAFE\t{base}/owned/triton\t{base}/owned\t65534\t755\tdirectory",
            f"UNSAFE\t{base}/group/x/y\t{base}/group\t0\t775\tdirectory",
            "UNSAFE\t/tmp/triton\t/tmp\t0\t1777\tdirectory",
        ]
    finally:
        shutil.rmtree(base)


def test_an_upload_s_new_folders_are_readable_and_its_file_has_its_mode(tmp_path: Path) -> None:
    staged = tmp_path / "staged"
    staged.write_text("model weights")
    dest = tmp_path / "persist" / "models" / "clf" / "model.safetensors"
    os.umask(0o077)  # sudo's may be so: the folders made are 0755 all the same
    try:
        assert install(staged, dest, "644") == 0
    finally:
        os.umask(0o022)
    assert mode(dest) == 0o644 and dest.read_text() == "model weights"
    assert mode(dest.parent) == 0o755 and mode(dest.parent.parent) == 0o755  # the server's user reads them


def test_a_stop_right_after_a_start_ends_the_watcher_that_has_not_led_its_group_yet(tmp_path: Path) -> None:
    """stop_watcher (lib.sh) on a watcher caught before its setsid: it waits for it to lead its group and
    ends the group, loop and sleep, instead of passing it over (it would run until its next check)."""
    run = tmp_path / "run"
    run.mkdir()
    # a stand-in caught where a real start can be caught: its command line names the loop, its group is not
    # yet its own, and it becomes so a moment later (setsid), then sleeps as the loop does
    script = "sleep 0.3; exec setsid sh -c 'while kill -0 1; do sleep 3600; done'"
    proc = subprocess.Popen(["sh", "-c", script, "while kill -0"], start_new_session=False)
    try:
        (run / "log-watch.pid").write_text(f"{proc.pid}\n")
        assert os.getpgid(proc.pid) != proc.pid
        stop = f". {remote.path('lib.sh')}; stop_watcher {run}"
        assert subprocess.run(["sh", "-c", stop], cwd=remote.REMOTE, timeout=30).returncode == 0
        proc.wait(timeout=10)  # ended, with the group it led by then
        assert not (run / "log-watch.pid").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
