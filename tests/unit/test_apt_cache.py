"""apt's cache on the persistent path (remote/apt_cache.py), on this machine's file system: recorded
after apt ran, checked before it runs; what changed or was planted since is named and removed."""

from __future__ import annotations

from pathlib import Path

import remote

apt_cache = remote.load("apt_cache.py")


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
    apt_cache.record(str(c))
    apt_cache.check(str(c))
    assert len(apt_cache.entries(str(c))) == 3 and (c / "update-stamp").exists()


def test_a_changed_deb_is_named_and_removed_and_the_lists_stay(tmp_path: Path, capsys) -> None:
    c = cache(tmp_path)
    apt_cache.record(str(c))
    (c / "archives" / "libpython3.11_3.11.2-6+deb12u6_amd64.deb").write_bytes(b"DEB")
    apt_cache.check(str(c))
    assert "archives/libpython3.11_3.11.2-6+deb12u6_amd64.deb does not match its recorded sha256" in (
        capsys.readouterr().err
    )
    assert apt_cache.entries(str(c)) == [
        "lists/deb.debian.org_debian_dists_bookworm_InRelease",
        "lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4",
    ]


def test_a_changed_or_planted_list_takes_every_list_and_the_update_stamp_with_it(tmp_path: Path, capsys) -> None:
    c = cache(tmp_path)
    apt_cache.record(str(c))
    (c / "lists" / "evil.example_dists_x_Packages").write_text("planted")
    apt_cache.check(str(c))
    err = capsys.readouterr().err
    assert "lists/evil.example_dists_x_Packages is not recorded" in err
    assert "will be fetched and verified again" in err
    assert apt_cache.entries(str(c)) == ["archives/libpython3.11_3.11.2-6+deb12u6_amd64.deb"]
    assert not (c / "update-stamp").exists()


def test_the_record_after_apt_hashes_only_what_apt_wrote_since_the_check(tmp_path: Path, monkeypatch) -> None:
    c = cache(tmp_path)
    apt_cache.record(str(c))
    apt_cache.check(str(c))  # reads every file once, notes what it found intact
    hashed: list[str] = []
    real = apt_cache.sha256
    monkeypatch.setattr(apt_cache, "sha256", lambda path: hashed.append(Path(path).name) or real(path))
    new_deb = c / "archives" / "libb64-0d_1.2-5+b1_amd64.deb"
    new_deb.write_bytes(b"new deb")  # what apt downloaded
    apt_cache.record(str(c))
    assert hashed == [new_deb.name]
    manifest = (c / "manifest.sha256").read_text()
    assert f"{real(str(new_deb))}  archives/{new_deb.name}" in manifest and manifest.count("\n") == 4
    # without a check before it (or with the file rewritten since), everything is hashed again
    hashed.clear()
    apt_cache.record(str(c))
    assert len(hashed) == 4
