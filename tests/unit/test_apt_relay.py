"""tasks/apt/relay.py's reading of `apt-get --print-uris` (tests/fixtures/apt/print-uris-bookworm.txt: a fresh
Debian 12 test host asked for libpython3.11 and libb64-0d with Acquire::ForceHash=SHA256, 2026-12-04): what the
controller fetches and sends is only what the line says plainly; anything else is left to apt."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.apt import relay as apt_relay

pytestmark = pytest.mark.unit

REAL = (Path(__file__).parents[1] / "fixtures/apt/print-uris-bookworm.txt").read_text().splitlines()
AUTO = apt_relay.origins("auto")


def test_each_deb_apt_would_download_is_read_with_its_sha256() -> None:
    debs = apt_relay.debs(REAL, AUTO)
    assert [(d.file, d.size) for d in debs] == [
        ("libb64-0d_1.2-5+b1_amd64.deb", 10116),
        ("libpython3.11_3.11.2-6+deb12u8_amd64.deb", 1988456),
    ]
    assert (
        debs[1].url == "http://deb.debian.org/debian/pool/main/p/python3.11/libpython3.11_3.11.2-6%2bdeb12u8_amd64.deb"
    )
    assert debs[1].sha256 == "63845d53d5f64d2362cfb6007ec175ad1c6044cebe60a1885eff76d2ce637c35"


@pytest.mark.parametrize(
    "line",
    [
        REAL[0].replace("libb64-0d_1.2-5+b1_amd64.deb", "../../etc/cron.d/x.deb"),  # a name that climbs
        REAL[0].replace(" libb64-0d_1.2-5+b1_amd64.deb ", " .hidden.deb "),
        REAL[0].replace("SHA256:b0e1d6fde8bdccc18c3884144aede064dc82464dd4777275fa80e74c05583e82", "MD5Sum:c5e6d7fa"),
        REAL[0].replace("'http://", "'file:///"),  # not a download the controller makes
        REAL[0].replace(" 10116 ", " -1 "),
        REAL[0].replace("http://deb.debian.org/debian/pool/main/libb/libb64/", "http://169.254.169.254/latest/"),
        REAL[0].replace("libb64-0d_1.2-5%2bb1_amd64.deb'", "other_1.0_amd64.deb'"),  # another package's file
        # what a compromised host printed: another origin with apt's shape, loopback admin paths, a query
        REAL[0].replace("http://deb.debian.org/", "http://169.254.169.254/"),
        REAL[0].replace("http://deb.debian.org/debian/", "http://127.0.0.1:9090/admin/"),
        REAL[0].replace("_amd64.deb'", "_amd64.deb?x=/pool/libb64-0d_1.deb'"),
        REAL[0].replace("_amd64.deb'", "_amd64.deb#frag'"),
        REAL[0].replace("http://deb.debian.org/", "http://user@deb.debian.org/"),
        REAL[0].replace("/debian/pool/main/libb/", "/debian/pool/main/libb/../../../"),
        REAL[0].replace("http://deb.debian.org/", "http://deb.debian.org:99999/"),
    ],
    ids=[
        "climbs",
        "hidden",
        "md5",
        "file-url",
        "size",
        "not-a-pool",
        "another-file",
        "another-origin",
        "loopback-admin",
        "query",
        "fragment",
        "user",
        "dot-dot",
        "bad-port",
    ],
)
def test_a_line_that_is_not_plainly_a_deb_with_its_sha256_is_left_to_apt(line: str) -> None:
    assert apt_relay.debs([line, REAL[1]], AUTO) == apt_relay.debs([REAL[1]], AUTO)


def test_a_package_with_an_epoch_is_read_though_apt_names_its_file_with_it() -> None:
    """apt's archive name carries the epoch (1%3a), the pool's file does not."""
    line = (
        "'http://deb.debian.org/debian/pool/main/z/zlib/zlib1g_1.2.13.dfsg-1_amd64.deb' "
        "zlib1g_1%3a1.2.13.dfsg-1_amd64.deb 88848 SHA256:" + "a" * 64
    )
    assert [d.file for d in apt_relay.debs([line], AUTO)] == ["zlib1g_1%3a1.2.13.dfsg-1_amd64.deb"]


def test_the_controller_fetches_only_from_the_origins_its_settings_name() -> None:
    assert apt_relay.debs(REAL, frozenset()) == []  # none named: apt fetches every one itself
    mirror = REAL[1].replace("http://deb.debian.org/", "https://mirror.corp:3142/")
    assert apt_relay.debs([mirror], AUTO) == []
    assert [d.file for d in apt_relay.debs([mirror], apt_relay.origins("auto,https://mirror.corp:3142"))] == [
        "libpython3.11_3.11.2-6+deb12u8_amd64.deb"
    ]
    assert apt_relay.fetchable("http://deb.debian.org/debian/dists/bookworm/InRelease", AUTO)
    assert not apt_relay.fetchable("http://deb.debian.org/debian/dists/bookworm/InRelease?x", AUTO)
    assert not apt_relay.fetchable("http://deb.debian.org/debian/secret", AUTO)
