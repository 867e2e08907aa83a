"""tasks/apt/lists_relay.py's reading of `apt-get -q --print-uris update` and of an InRelease, from real output:
tests/fixtures/apt/print-uris-update-bookworm.txt (a fresh Debian 12 test host with the provisioner's apt options,
2026-12-05) and InRelease-bookworm-trimmed (deb.debian.org's bookworm InRelease of that day, as the host's apt
fetched it, its MD5Sum lines and most SHA256 lines left out, the signature kept). What the controller sends is
only what apt itself would fetch, with the sha256 the InRelease names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.apt import lists_relay as apt_lists_relay
from tasks.apt.lists_relay import IndexFile

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parents[1] / "fixtures/apt"
PRINTED = (FIXTURES / "print-uris-update-bookworm.txt").read_text().splitlines()
INRELEASE = (FIXTURES / "InRelease-bookworm-trimmed").read_text()
SUITE = "http://deb.debian.org/debian/dists/bookworm/"
NAME = "deb.debian.org_debian_dists_bookworm_"


def test_the_inrelease_gives_each_files_sha256_and_its_switches() -> None:
    release = apt_lists_relay.release(INRELEASE)
    assert release.by_hash and release.no_arch_all_packages
    assert release.sums["main/binary-amd64/Packages.gz"] == (
        "6777ea16514725f9427f48c240d92e0a6b8496138e37a1491d8597e66774e309",
        12084798,
    )
    assert "main/i18n/Translation-en.gz" not in release.sums  # Debian publishes it as .xz only
    assert len(release.sums) == 13  # the SHA256 section's lines, none of the MD5Sum section's


def test_each_index_apt_fetches_is_sent_by_its_hash_in_the_compression_apt_takes() -> None:
    uris = apt_lists_relay.printed(PRINTED)
    assert uris[0] == (f"{SUITE}InRelease", f"{NAME}InRelease")
    files = apt_lists_relay.index_files(uris, {SUITE: apt_lists_relay.release(INRELEASE)})
    assert files == [
        IndexFile(  # gz: the compression the provisioner's apt options put first
            f"{SUITE}main/binary-amd64/by-hash/SHA256/6777ea16514725f9427f48c240d92e0a6b8496138e37a1491d8597e66774e309",
            "6777ea16514725f9427f48c240d92e0a6b8496138e37a1491d8597e66774e309",
            12084798,
            f"{NAME}main_binary-amd64_Packages.gz",
        ),
        IndexFile(  # no .gz: apt's next compression, xz (the one apt took on the test host)
            f"{SUITE}main/i18n/by-hash/SHA256/a3d4a0bfd8e9242810b0885eda7c1a6e05dac15b333ddbaab03ba56f2dfa4bf0",
            "a3d4a0bfd8e9242810b0885eda7c1a6e05dac15b333ddbaab03ba56f2dfa4bf0",
            6107304,
            f"{NAME}main_i18n_Translation-en.xz",
        ),
    ]  # the InRelease is never sent; binary-all's Packages is not either: apt skips it (No-Support-for-...)


def test_without_by_hash_the_plain_url_and_with_arch_all_its_packages_too() -> None:
    text = INRELEASE.replace("Acquire-By-Hash: yes\n", "").replace("No-Support-for-Architecture-all: Packages\n", "")
    files = apt_lists_relay.index_files(apt_lists_relay.printed(PRINTED), {SUITE: apt_lists_relay.release(text)})
    assert [f.url for f in files] == [
        f"{SUITE}main/binary-amd64/Packages.gz",
        f"{SUITE}main/binary-all/Packages.gz",
        f"{SUITE}main/i18n/Translation-en.xz",
    ]


@pytest.mark.parametrize(
    "line",
    [
        PRINTED[1].replace(f"' {NAME}main_binary-amd64_Packages ", "' ../../etc/cron.d/x "),  # a name that climbs
        PRINTED[1].replace("'http://", "'file:///"),  # not a download the controller makes
        PRINTED[1].replace("main/binary-amd64/Packages.gz", "main/../../../../etc/Packages.gz"),
        PRINTED[1].replace(SUITE, "http://169.254.169.254/latest/"),  # in no suite the controller read
    ],
)
def test_a_line_that_is_not_plainly_an_index_of_a_read_suite_is_left_to_apt(line: str) -> None:
    release = {SUITE: apt_lists_relay.release(INRELEASE)}
    assert apt_lists_relay.index_files(apt_lists_relay.printed([PRINTED[0], line]), release) == []


def test_an_index_the_inrelease_does_not_name_or_one_too_large_is_left_to_apt(monkeypatch) -> None:
    release = apt_lists_relay.release(INRELEASE)
    assert apt_lists_relay.index_files(apt_lists_relay.printed(PRINTED), {}) == []  # no InRelease read
    monkeypatch.setattr(apt_lists_relay, "INDEX_MAX_BYTES", 10_000_000)
    files = apt_lists_relay.index_files(apt_lists_relay.printed(PRINTED), {SUITE: release})
    assert [f.partial_name for f in files] == [f"{NAME}main_i18n_Translation-en.xz"]  # 12 MB Packages.gz: too large
