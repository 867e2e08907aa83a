"""apt's cache on the persistent path (tasks/apt/scripts/apt_cache.py), on this machine's file system: recorded
after apt ran, checked before it runs; what changed or was planted since is named and removed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import remote
from tasks.apt import packages as apt_packages

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


# --- after a reset: the recorded .debs installed with dpkg alone (no package list read)

BASE_STATUS = """Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.36-9+deb12u10
Description: GNU C Library
 continued line: Package: not-a-field

Package: python3
Status: install ok installed
Architecture: amd64
Version: 3.11.2-1+b1
"""
LIBPYTHON = """
Package: libpython3.11
Status: install ok installed
Architecture: amd64
Version: 3.11.2-6+deb12u6
"""
LIBFOO = """
Package: libfoo
Status: install ok installed
Architecture: all
Version: 1:2.0-1
"""


def dpkg_host(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path]:
    """A host's dpkg status file and a dpkg that records its arguments and each .deb's bytes (the real one
    would install into this machine); the cache holds the two .debs an install of libpython3.11 took."""
    status = tmp_path / "status"
    status.write_text(BASE_STATUS)
    calls = tmp_path / "dpkg-calls"
    fake = tmp_path / "dpkg"
    fake.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\nfor f in "$@"; do [ ! -f "$f" ] || {{ cat "$f"; echo; }} >> {calls}; done\n'
    )
    fake.chmod(0o755)
    monkeypatch.setattr(apt_cache, "DPKG_STATUS", str(status))
    monkeypatch.setattr(apt_cache, "DPKG", str(fake))
    c = cache(tmp_path)
    (c / "archives" / "libfoo_1%3a2.0-1_all.deb").write_bytes(b"foo deb")
    return c, status, calls


def install_and_record(c: Path, status: Path, packages: list[str]) -> str:
    """What one apt run does to the cache: checked, the packages installed (the status file), recorded."""
    check(c, record(c))
    status.write_text(BASE_STATUS + LIBPYTHON + LIBFOO)
    apt_cache.record(str(c), str(c.parent / "state"), packages)
    return (c.parent / "state" / "manifest.sha256").read_text().strip()


def test_an_install_is_recorded_with_the_debs_it_added_and_the_package_set_it_was_made_on(
    tmp_path: Path, monkeypatch
) -> None:
    c, status, _ = dpkg_host(tmp_path, monkeypatch)
    install_and_record(c, status, ["libpython3.11"])
    entry = json.loads((c / apt_cache.INSTALLED_DEBS).read_text())
    # an epoch's colon is %3a in apt's file names; the packages the host had are not named
    assert entry["debs"] == ["libfoo_1%3a2.0-1_all.deb", "libpython3.11_3.11.2-6+deb12u6_amd64.deb"]
    assert entry["packages"] == ["libpython3.11"]
    status.write_text(BASE_STATUS)
    assert entry["image"] == apt_cache._digest(apt_cache.package_set())
    assert f"  {apt_cache.INSTALLED_DEBS}\n" in (c / "manifest.sha256").read_text()  # guarded like the rest


def test_a_reset_host_gets_exactly_the_recorded_debs_from_dpkg_checked_on_roots_disk(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    c, status, calls = dpkg_host(tmp_path, monkeypatch)
    kept = install_and_record(c, status, ["libpython3.11"])
    status.write_text(BASE_STATUS)  # the reset: the image's packages again
    state = c.parent / "state"
    assert apt_cache.dpkg(str(c), str(state), kept, ["libpython3.11"]) == 0
    args, *contents = calls.read_text().splitlines()
    copies = args.split()[1:]
    assert (
        args.split()[0] == "-i"
        and [Path(p).name for p in copies] == json.loads((c / apt_cache.INSTALLED_DEBS).read_text())["debs"]
    )
    assert all(Path(p).parent.parent == state for p in copies)  # copies on root's disk, not the drive's files
    assert contents == ["foo deb", "deb"] and not list(state.glob("debs.*"))  # and gone after
    assert "2 recorded .deb(s) installed with dpkg" in (state / apt_cache.INSTALL_LOG).read_text()


def test_another_package_set_or_an_unrecorded_package_is_left_to_apt(tmp_path: Path, monkeypatch, capsys) -> None:
    c, status, calls = dpkg_host(tmp_path, monkeypatch)
    kept = install_and_record(c, status, ["libpython3.11"])
    state = str(c.parent / "state")
    # the packages still installed (not a fresh image), or one more package than recorded
    assert apt_cache.dpkg(str(c), state, kept, ["libpython3.11"]) == apt_cache.NOT_HERE
    assert "this host's packages are not those the .debs were recorded on" in capsys.readouterr().err
    status.write_text(BASE_STATUS)
    assert apt_cache.dpkg(str(c), state, kept, ["libpython3.11", "libb64-0d"]) == apt_cache.NOT_HERE
    assert "the record does not cover libb64-0d" in capsys.readouterr().err
    # no digest kept on the controller: nothing on the drive is trusted
    assert apt_cache.dpkg(str(c), state, "", ["libpython3.11"]) == apt_cache.NOT_HERE
    assert not calls.exists() and not (Path(state) / apt_cache.INSTALL_LOG).exists()
    # the operation sends the install to apt on exactly that status
    assert apt_packages.APT_CACHE_NOT_HERE == apt_cache.NOT_HERE


def test_a_record_or_deb_altered_on_the_drive_is_never_given_to_dpkg(tmp_path: Path, monkeypatch, capsys) -> None:
    c, status, calls = dpkg_host(tmp_path, monkeypatch)
    kept = install_and_record(c, status, ["libpython3.11"])
    status.write_text(BASE_STATUS)
    state = str(c.parent / "state")
    record_file = c / apt_cache.INSTALLED_DEBS
    good = record_file.read_text()
    record_file.write_text(good.replace("libfoo_1%3a2.0-1_all.deb", "../../evil.deb"))
    assert apt_cache.dpkg(str(c), state, kept, ["libpython3.11"]) == apt_cache.NOT_HERE
    assert "does not match its recorded sha256" in capsys.readouterr().err
    record_file.write_text(good)
    # a .deb changed after the check read it: refused outright, not handed to apt either
    (c / "archives" / "libfoo_1%3a2.0-1_all.deb").write_bytes(b"evil deb")
    assert apt_cache.dpkg(str(c), state, kept, ["libpython3.11"]) == 1
    assert "archives/libfoo_1%3a2.0-1_all.deb changed since the check" in capsys.readouterr().err
    assert not calls.exists() and not list(Path(state).glob("debs.*"))


def test_an_install_that_removed_a_package_leaves_no_record(tmp_path: Path, monkeypatch) -> None:
    c, status, _ = dpkg_host(tmp_path, monkeypatch)
    install_and_record(c, status, ["libpython3.11"])
    assert (c / apt_cache.INSTALLED_DEBS).exists()
    check(c, record(c))
    status.write_text(BASE_STATUS.split("\n\n")[0] + "\n" + LIBPYTHON)  # python3 went
    apt_cache.record(str(c), str(c.parent / "state"), ["libpython3.11"])
    assert not (c / apt_cache.INSTALLED_DEBS).exists()


def test_a_deb_the_check_removed_is_fetched_by_apt(tmp_path: Path, monkeypatch, capsys) -> None:
    c, status, calls = dpkg_host(tmp_path, monkeypatch)
    kept = install_and_record(c, status, ["libpython3.11"])
    status.write_text(BASE_STATUS)
    deb = c / "archives" / "libpython3.11_3.11.2-6+deb12u6_amd64.deb"
    deb.write_bytes(b"altered")
    check(c, kept)  # named and removed
    assert apt_cache.dpkg(str(c), str(c.parent / "state"), kept, ["libpython3.11"]) == apt_cache.NOT_HERE
    assert f"archives/{deb.name} is not in the cache" in capsys.readouterr().err and not calls.exists()
