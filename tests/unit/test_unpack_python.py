"""The standalone-Python unpacker refuses hostile archives before anything is installed."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

import remote

unpack_python = remote.load("unpack_python.py")


def _archive(path: Path, *members: tarfile.TarInfo) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            data = io.BytesIO(b"x" * m.size) if m.isfile() else None
            tar.addfile(m, data)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    m = tarfile.TarInfo(name)
    m.type, m.linkname, m.mode = kind, linkname, mode
    m.size = 1 if kind == tarfile.REGTYPE else 0
    return m


@pytest.mark.parametrize(
    ("members", "words"),
    [
        ([_member("python/../../etc/cron.d/x")], "outside the install directory"),
        ([_member("etc/passwd")], "outside python/"),
        ([_member("python/lib", tarfile.SYMTYPE, "/etc"), _member("python/lib/x")], "links to '/etc'"),
        ([_member("python/a", tarfile.SYMTYPE, "../../../root")], "links to '../../../root'"),
        ([_member("python/b", tarfile.LNKTYPE, "etc/shadow")], "hard-links"),
        ([_member("python/dev", tarfile.CHRTYPE)], "special file"),
    ],
)
def test_hostile_archives_are_refused_and_nothing_is_installed(tmp_path: Path, members, words, capsys) -> None:
    archive = _archive(tmp_path / "p.tar.gz", _member("python/", tarfile.DIRTYPE, mode=0o755), *members)
    dest = tmp_path / "opt" / "python"
    assert unpack_python.main(str(archive), str(dest), "3.12") == 5
    assert words in capsys.readouterr().err
    assert not dest.exists() and not Path(str(dest) + ".tmp").exists()
    assert not (tmp_path / "etc").exists()


def test_set_id_bits_are_dropped(tmp_path: Path) -> None:
    with tarfile.open(_archive(tmp_path / "p.tar.gz", _member("python/bin/x", mode=0o6755))) as tar:
        members = unpack_python._checked_members(tar, str(tmp_path / "d.tmp"))
    assert [oct(m.mode) for m in members] == ["0o755"]


def test_an_archive_without_the_interpreter_is_not_installed(tmp_path: Path, capsys) -> None:
    archive = _archive(tmp_path / "p.tar.gz", _member("python/lib/python3.12/os.py"))
    dest = tmp_path / "python"
    assert unpack_python.main(str(archive), str(dest), "3.12") == 6
    assert "is not a working CPython 3.12: it has no bin/python3.12" in capsys.readouterr().err
    assert not dest.exists()
