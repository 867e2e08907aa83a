"""Hostile archives are refused before anything is installed: the shared extractor (remote/_archive.py)
through both unpackers, on this machine's file system, with tar and zip archives built here."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

import remote

unpack_python = remote.load("unpack_python.py")
unpack_triton = remote.load("unpack_triton.py")


def _archive(path: Path, *members: tarfile.TarInfo) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            data = io.BytesIO(b"x" * m.size) if m.isfile() else None
            tar.addfile(m, data)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    m = tarfile.TarInfo(name)
    m.type, m.linkname, m.mode = kind, linkname, mode
    m.size = 1 if kind == tarfile.REGTYPE else 0
    return m


HOSTILE = [
    ([_member("python/../../etc/cron.d/x")], "climbs out of the archive with '..'"),
    ([_member("/python/etc/x")], "absolute"),
    ([_member("etc/passwd")], "outside python/"),
    ([_member("python/lib", tarfile.SYMTYPE, "/etc"), _member("python/lib/x")], "links to '/etc'"),
    ([_member("python/a", tarfile.SYMTYPE, "../../../root")], "links to '../../../root'"),
    # a relative link inside, then a member under it: written through the link
    (
        [
            _member("python/d", tarfile.DIRTYPE, mode=0o755),
            _member("python/l", tarfile.SYMTYPE, "d"),
            _member("python/l/x"),
        ],
        "written through the link",
    ),
    # two links, each inside when written, that end outside together: s2 -> s1/.. and then s1 -> .
    ([_member("python/s2", tarfile.SYMTYPE, "s1/.."), _member("python/s1", tarfile.SYMTYPE, ".")], "resolves to"),
    ([_member("python/b", tarfile.LNKTYPE, "etc/shadow")], "hard-links to 'etc/shadow'"),
    ([_member("python/b", tarfile.LNKTYPE, "python/../../etc/shadow")], "hard-links"),
    ([_member("python/dev", tarfile.CHRTYPE)], "special file"),
    ([_member("python/fifo", tarfile.FIFOTYPE)], "special file"),
    ([_member("python/bin/su", mode=0o4755)], "setuid or setgid"),
    ([_member("python/bin/sg", mode=0o2755)], "setuid or setgid"),
]


@pytest.mark.parametrize(("members", "words"), HOSTILE, ids=[w for _, w in HOSTILE])
def test_hostile_python_archives_are_refused_and_nothing_is_installed(tmp_path: Path, members, words, capsys) -> None:
    archive = _archive(tmp_path / "p.tar.gz", _member("python/", tarfile.DIRTYPE, mode=0o755), *members)
    dest = tmp_path / "opt" / "python"
    assert unpack_python.main(str(archive), str(dest), "3.12") == 5
    assert words in capsys.readouterr().err
    assert not dest.exists() and not Path(str(dest) + ".tmp").exists()
    assert not (tmp_path / "etc").exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize(("members", "words"), HOSTILE[:2] + HOSTILE[3:], ids=[w for _, w in HOSTILE[:2] + HOSTILE[3:]])
def test_hostile_triton_tarballs_are_refused_and_nothing_is_switched(tmp_path: Path, members, words, capsys) -> None:
    archive = _archive(tmp_path / "t.tar.gz", *members)  # strip 1: "python/" stands for the top directory
    dest = tmp_path / "versions" / "2.51.0"
    assert unpack_triton.main("tarball", str(archive), str(dest), "3.12", _sha(archive), "1", "") == 8
    err = capsys.readouterr().err
    assert "is refused" in err and "Nothing was installed or switched" in err
    assert not dest.exists() and not Path(str(dest) + ".tmp").exists()


def test_an_archive_that_unpacks_past_the_free_disk_is_stopped_there(tmp_path: Path, monkeypatch, capsys) -> None:
    """A gzip stream unpacks to any size: the unpack stops once its files pass the disk's free bytes."""
    archive = _archive(tmp_path / "t.tar.gz", *(_member(f"top/f{i}") for i in range(5)))  # 1 byte each
    dest = tmp_path / "versions" / "2.51.0"
    monkeypatch.setattr(unpack_triton, "free_bytes", lambda path: 3)
    assert unpack_triton.main("tarball", str(archive), str(dest), "3.12", _sha(archive), "1", "") == 8
    assert "it unpacks to more than the 3 bytes free at" in capsys.readouterr().err
    assert list(dest.parent.iterdir()) == []


def test_a_folder_member_over_a_link_replaces_the_link_and_never_changes_what_it_points_to(tmp_path: Path) -> None:
    """In one archive: `lnk -> d1/d2/../../victim` (inside while d1 and d2 do not exist), then d1 and d2 each a
    link to `.`, which turns lnk two folders above the destination, then a folder member `lnk` (0700): root
    chmod'ed, chowned and touched the folder outside through the link."""
    extract = remote.load("_archive.py").extract_tar
    victim = tmp_path / "a" / "victim"
    victim.mkdir(parents=True)
    victim.chmod(0o755)
    dest = tmp_path / "a" / "b" / "dest"
    dest.mkdir(parents=True)
    archive = _archive(
        tmp_path / "t.tar.gz",
        _member("top/lnk", tarfile.SYMTYPE, "d1/d2/../../victim"),
        _member("top/d1", tarfile.SYMTYPE, "."),
        _member("top/d2", tarfile.SYMTYPE, "."),
        _member("top/lnk", tarfile.DIRTYPE, mode=0o700),
    )
    extract(str(archive), str(dest), strip=1)
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755
    assert (dest / "lnk").is_dir() and not (dest / "lnk").is_symlink()


def test_hard_links_are_rewritten_for_strip_components(tmp_path: Path) -> None:
    extract = remote.load("_archive.py").extract_tar
    archive = _archive(
        tmp_path / "t.tar.gz",
        _member("tritonserver/lib", tarfile.DIRTYPE, mode=0o755),
        _member("tritonserver/lib/libx.so.1"),
        _member("tritonserver/lib/libx.so", tarfile.LNKTYPE, "tritonserver/lib/libx.so.1"),
    )
    dest = tmp_path / "d"
    dest.mkdir()
    extract(str(archive), str(dest), strip=1)
    assert os.stat(dest / "lib" / "libx.so").st_ino == os.stat(dest / "lib" / "libx.so.1").st_ino


def _wheel(path: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(name, b"x")
    return path


@pytest.mark.parametrize(
    "name",
    [
        "pytriton/tritonserver/../../../etc/cron.d/x",
        "nvidia_pytriton.libs/../../../../etc/x",
        "pytriton/tritonserver/a\\..\\..\\x",
    ],
)
def test_hostile_wheels_are_refused(tmp_path: Path, name: str, capsys) -> None:
    wheel = _wheel(tmp_path / "w.whl", ["pytriton/tritonserver/bin/tritonserver", name])
    dest = tmp_path / "versions" / "2.51.0"
    assert unpack_triton.main("pytriton", str(wheel), str(dest), "3.12", _sha(wheel), "0", "2.51.0") == 8
    assert "is refused" in capsys.readouterr().err
    assert not dest.exists() and not (tmp_path / "etc").exists()


def test_an_archive_without_the_interpreter_is_not_installed(tmp_path: Path, capsys) -> None:
    archive = _archive(tmp_path / "p.tar.gz", _member("python/lib/python3.12/os.py"))
    dest = tmp_path / "python"
    assert unpack_python.main(str(archive), str(dest), "3.12") == 6
    assert "is not a working CPython 3.12: it has no bin/python3.12" in capsys.readouterr().err
    assert not dest.exists()


def test_nothing_installed_is_writable_by_group_or_others(tmp_path: Path) -> None:
    extract = remote.load("_archive.py").extract_tar
    archive = _archive(
        tmp_path / "t.tar.gz", _member("top/lib", tarfile.DIRTYPE, mode=0o777), _member("top/lib/x.so", mode=0o666)
    )
    dest = tmp_path / "d"
    dest.mkdir()
    extract(str(archive), str(dest), strip=1)
    assert oct((dest / "lib").stat().st_mode & 0o777) == "0o755"
    assert oct((dest / "lib" / "x.so").stat().st_mode & 0o777) == "0o644"
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, mode in (
            ("pytriton/tritonserver/bin/tritonserver", 0o755),
            ("pytriton/tritonserver/backends/python/libtriton_python.so", 0o666),
        ):
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            z.writestr(info, b"x")
        z.writestr("pytriton/tritonserver/backends/python/triton_python_backend_stub", b"x")
        z.writestr("nvidia_pytriton.libs/libx.so", b"x")
    out = tmp_path / "w"
    out.mkdir()
    unpack_triton.unpack_pytriton(str(wheel), str(out))
    assert oct((out / "backends" / "python" / "libtriton_python.so").stat().st_mode & 0o777) == "0o644"


def _good_wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name in ("pytriton/tritonserver/bin/tritonserver", "pytriton/tritonserver/backends/python/x.so"):
            z.writestr(name, b"\x7fELF")
        stub = "pytriton/tritonserver/python_backend_stubs/3.12/triton_python_backend_stub"
        z.writestr(stub, b"libpython3.12.so.1.0")
        z.writestr("nvidia_pytriton.libs/libx.so", b"x")
    return path


def test_an_archive_changed_since_it_was_checked_is_refused_at_unpack(tmp_path: Path, capsys) -> None:
    """The sha256 the run checked at planning is checked again at unpack, on the bytes unpacked: an
    artifact swapped on the persistent path in between is refused, nothing installed; a good one records
    the sha256 it was checked against."""
    wheel = _good_wheel(tmp_path / "w.whl")
    checked = _sha(wheel)
    (tmp_path / "versions").mkdir()
    dest = tmp_path / "versions" / "2.51.0"
    with zipfile.ZipFile(wheel, "a") as z:  # a writer of the drive adds a file after the check
        z.writestr("pytriton/tritonserver/bin/planted", b"x")
    assert unpack_triton.main("pytriton", str(wheel), str(dest), "3.12", checked, "0", "2.51.0") == 9
    err = capsys.readouterr().err
    assert f"its sha256 is {_sha(wheel)}, not the {checked}" in err and "Nothing was installed" in err
    assert not dest.exists() and not Path(f"{dest}.tmp").exists()
    assert os.listdir(tmp_path / "versions") == []  # the private copy is gone too
    assert unpack_triton.main("pytriton", str(wheel), str(dest), "3.12", _sha(wheel), "0", "2.51.0") == 0
    assert (dest / "bin" / "planted").exists()
    assert f"sha256={_sha(wheel)}\n" in (dest / ".provisioner").read_text()
