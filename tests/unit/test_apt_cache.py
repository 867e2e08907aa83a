"""apt's cache on the persistent path (remote/actions/apt_cache.py), on this machine's file system: recorded
after apt ran, checked before it runs; what changed or was planted since is named and removed."""

from __future__ import annotations

import os
from pathlib import Path

import remote

apt_cache = remote.load("apt_cache.py")


def record(c: Path) -> str:
    """record, and the manifest's digest it leaves for the controller (root's STATE beside the cache)."""
    apt_cache.record(str(c), str(c.parent / "state"))
    return (c.parent / "state" / "manifest.sha256").read_text().strip()


def check(c: Path, kept: str) -> None:
    apt_cache.check(str(c), str(c.parent / "state"), kept)


def cache(tmp_path: Path) -> Path:
    c = tmp_path / "apt"
    (c / "lists" / "partial").mkdir(parents=True)
    (c / "archives" / "partial").mkdir(parents=True)
    (c / "lists" / "deb.debian.org_debian_dists_bookworm_InRelease").write_text("signed release")
    (c / "lists" / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4").write_bytes(b"pkgs")
    (c / "archives" / "libpython3.11_3.11.2-6+deb12u6_amd64.deb").write_bytes(b"deb")
    (c / "update-stamp").write_text("")
    return c


def test_an_unchanged_cache_is_kept(tmp_path: Path) -> None:
    c = cache(tmp_path)
    check(c, record(c))
    assert len(apt_cache.entries(str(c))) == 3 and (c / "update-stamp").exists()


def test_a_changed_deb_is_named_and_removed_and_the_lists_stay(tmp_path: Path, capsys) -> None:
    c = cache(tmp_path)
    kept = record(c)
    (c / "archives" / "libpython3.11_3.11.2-6+deb12u6_amd64.deb").write_bytes(b"DEB")
    check(c, kept)
    assert "archives/libpython3.11_3.11.2-6+deb12u6_amd64.deb does not match its recorded sha256" in (
        capsys.readouterr().err
    )
    assert apt_cache.entries(str(c)) == [
        "lists/deb.debian.org_debian_dists_bookworm_InRelease",
        "lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4",
    ]


def test_a_changed_or_planted_list_takes_every_list_and_the_update_stamp_with_it(tmp_path: Path, capsys) -> None:
    c = cache(tmp_path)
    kept = record(c)
    (c / "lists" / "evil.example_dists_x_Packages").write_text("planted")
    check(c, kept)
    err = capsys.readouterr().err
    assert "lists/evil.example_dists_x_Packages is not recorded" in err
    assert "will be fetched and verified again" in err
    assert apt_cache.entries(str(c)) == ["archives/libpython3.11_3.11.2-6+deb12u6_amd64.deb"]
    assert not (c / "update-stamp").exists()


def test_the_record_after_apt_hashes_only_what_apt_wrote_since_the_check(tmp_path: Path, monkeypatch) -> None:
    c = cache(tmp_path)
    check(c, record(c))  # reads every file once, notes what it found intact (in root's STATE)
    hashed: list[str] = []
    real = apt_cache.sha256
    monkeypatch.setattr(apt_cache, "sha256", lambda path: hashed.append(Path(path).name) or real(path))
    new_deb = c / "archives" / "libb64-0d_1.2-5+b1_amd64.deb"
    new_deb.write_bytes(b"new deb")  # what apt downloaded
    record(c)
    assert hashed == [new_deb.name]
    manifest = (c / "manifest.sha256").read_text()
    assert f"{real(str(new_deb))}  archives/{new_deb.name}" in manifest and manifest.count("\n") == 4
    # without a check before it (or with the file rewritten since), everything is hashed again
    hashed.clear()
    record(c)
    assert len(hashed) == 4


def test_an_altered_deb_with_its_manifest_line_rewritten_is_refused(tmp_path: Path, capsys) -> None:
    """A writer of the drive alters a .deb and rewrites its manifest line to match: the manifest's digest is
    no longer the controller's, so nothing in it is trusted and every file goes (apt fetches them again)."""
    c = cache(tmp_path)
    kept = record(c)
    deb = c / "archives" / "libpython3.11_3.11.2-6+deb12u6_amd64.deb"
    deb.write_bytes(b"evil deb")
    manifest = c / "manifest.sha256"
    lines = [
        f"{apt_cache.sha256(str(deb))}  archives/{deb.name}" if line.endswith(deb.name) else line
        for line in manifest.read_text().splitlines()
    ]
    manifest.write_text("\n".join(lines) + "\n")
    check(c, kept)
    err = capsys.readouterr().err
    assert "its manifest is not the one the controller kept" in err
    assert f"archives/{deb.name} is not recorded" in err
    assert apt_cache.entries(str(c)) == [] and not (c / "update-stamp").exists()
    # no digest kept (another controller, venv_lock_dir = ""): the same
    c2 = cache(tmp_path / "second")
    record(c2)
    check(c2, "")
    assert "has no digest kept on the controller" in capsys.readouterr().err and apt_cache.entries(str(c2)) == []


def test_the_checks_record_of_what_was_intact_is_roots_not_the_drives(tmp_path: Path, monkeypatch) -> None:
    """A 'checked' file planted on the drive (an altered .deb's digest, its size and mtime) is not read by
    record: the .deb is hashed as it is."""
    c = cache(tmp_path)
    check(c, record(c))
    deb = c / "archives" / "libpython3.11_3.11.2-6+deb12u6_amd64.deb"
    st = deb.stat()
    deb.write_bytes(b"DEB")
    os.utime(deb, ns=(st.st_atime_ns, st.st_mtime_ns))
    (c / "checked").write_text(f"{st.st_size}:{st.st_mtime_ns} {'0' * 64} archives/{deb.name}\n")
    (c.parent / "state" / "checked").unlink()
    record(c)
    assert f"{apt_cache.sha256(str(deb))}  archives/{deb.name}" in (c / "manifest.sha256").read_text()
