"""The rules for a Triton from a container image, read from its config before any layer is pulled: its
Triton, the glibc and libstdc++ of the OS it is built on, the libraries that OS gave it (named with this
host's apt packages), its CUDA against the host's driver; and the pull of its config alone, which the
controller makes for the plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import remote
from config.settings import load
from planner import tables
from planner.rules import assess
from tasks.triton.build import wanted_build
from tasks.triton.image_config import image_config
from testbed.registry import Registry, ngc_config
from tests.unit import test_batch
from tests.unit.test_oci import BASE, IMAGE, TOP
from tests.unit.test_rules import GPU_OLD, GPU_T4, by_name, fixture, host, py

pytestmark = pytest.mark.unit

oci_pull = remote.load("oci_pull.py")
local = test_batch.local  # the fixture: a real @local host of a fresh pyinfra state
PULLED = fixture("image.ImageConfig/pulled")  # an NGC-like config as the host's cache gives it: 22.04, CUDA 12.6


def on_base(ubuntu: str, cuda: str = "12.6.2.004") -> dict:
    """The pulled config's summary as if the image were built on another Ubuntu, or with another CUDA."""
    return oci_pull.config_summary(ngc_config(ubuntu=ubuntu, cuda=cuda))


def assessed(facts, image: dict | None, read: str = "the host's cache"):
    return assess(replace(facts, image=image, image_read=read), load(IMAGE))


def test_the_pulled_config_fixture_is_what_the_registry_stand_in_serves() -> None:
    assert on_base("22.04") == PULLED


def test_the_plan_names_the_images_triton_and_the_libraries_its_os_gave_it_with_this_hosts_packages() -> None:
    a = assessed(host(), PULLED)
    item = by_name(a, "triton image")
    assert item.status == "ok"
    assert item.detail == "Triton 2.51.0 (NGC 24.10), built on Ubuntu 22.04, CUDA 12.6; read from the host's cache"
    assert by_name(a, "glibc").detail == "2.36 >= 2.35" and not a.blockers
    assert {"libb64-0d", "libre2-9", "libnuma1", "libarchive13"} <= set(a.decisions.apt_packages)
    assert by_name(a, "libre2.so.9").status == "missing" and by_name(a, "libre2.so.9").fix == "apt-get install libre2-9"


def test_an_image_built_on_a_newer_ubuntu_is_refused_on_debian_12_naming_its_glibc_and_the_fix() -> None:
    a = assessed(host(), on_base("24.04"))
    glibc = by_name(a, "glibc")
    assert glibc.blocker and glibc.detail == "glibc 2.36 is older than 2.39, which Triton 2.51.0 needs"
    assert "pin an image of an earlier NGC release" in glibc.fix
    assert by_name(a, "libstdc++").blocker  # gcc 12's GLIBCXX_3.4.30 < 3.4.33
    assert by_name(a, "libre2.so.10").blocker  # Debian 12 has no package with libre2.so.10
    noble = assessed(
        host(("ubuntu", "24.04", "noble"), glibc="2.39", glibcxx="3.4.33", pythons=py("3.12")), on_base("24.04")
    )
    assert not noble.blockers and "libre2-10" in noble.decisions.apt_packages


def test_a_gpu_whose_driver_runs_an_older_cuda_major_is_refused_and_an_older_minor_runs() -> None:
    old = by_name(assessed(host(nvidia=GPU_OLD), PULLED), "cuda")  # driver 470: CUDA 11.4
    assert (
        old.blocker
        and old.detail == "the image's Triton is built with CUDA 12.6; driver 470.182.03 runs CUDA 11.4 at most"
    )
    t4 = by_name(assessed(host(nvidia=GPU_T4), PULLED), "cuda")  # driver 550: CUDA 12.4, by minor-version compatibility
    assert t4.status == "ok" and not t4.blocker
    assert not [i for i in assessed(host(), PULLED).items if i.name == "cuda"]  # no GPU: its CPU models run
    assert not [i for i in assessed(host(nvidia=GPU_OLD), on_base("22.04", cuda="")).items if i.name == "cuda"]


def test_an_image_whose_config_was_not_read_is_checked_as_a_tarball_and_at_the_unpack() -> None:
    a = assessed(host(), None, "offline, and the host's cache lacks it")
    assert by_name(a, "triton image").detail.startswith("its config was not read before the pull (offline, and")
    assert not [i for i in a.items if i.name == "glibc"]
    assert {i.name for i in a.items} >= set(tables.CONTAINER_HOST_SONAMES) - tables.GLIBC_SONAMES


def test_an_images_text_is_taken_only_where_it_has_the_form_of_a_version() -> None:
    hostile = on_base("22.04")
    hostile["env"]["TRITON_SERVER_VERSION"] = "2.51.0\x1b[2J"
    hostile["env"]["CUDA_VERSION"] = "twelve"
    assert by_name(assessed(host(), hostile), "triton image").detail == (
        "its config names no Triton version (TRITON_SERVER_VERSION): its glibc is checked at the unpack, "
        "before anything is switched"
    )
    hostile["env"]["TRITON_SERVER_VERSION"] = "2.51.0"
    a = assessed(host(nvidia=GPU_OLD), hostile)  # no CUDA it can read: no CUDA check, and no crash
    assert "no CUDA" in by_name(a, "triton image").detail and not [i for i in a.items if i.name == "cuda"]


def test_an_image_on_an_os_the_table_lacks_says_so() -> None:
    debian = oci_pull.config_summary(ngc_config().replace(b'"ubuntu"', b'"debian"').replace(b'"22.04"', b'"12"'))
    item = by_name(assessed(host(), debian), "triton image")
    assert item.detail.startswith("it is built on debian 12, which the table of image bases (planner/tables.py) lacks")


def test_the_stub_of_an_images_triton_in_the_numpy_lt2_range_needs_numpy_below_2() -> None:
    build, _ = wanted_build(load(IMAGE), PULLED)
    assert build is not None and build.numpy_spec == "<2"  # 2.51: its stub fails on string tensors with numpy 2
    newer, _ = wanted_build(load(IMAGE), oci_pull.config_summary(ngc_config(triton="2.80.0", release="27.01")))
    assert newer is not None and newer.numpy_spec == ""
    assert wanted_build(load(IMAGE), None) == (None, None)  # not read: known once unpacked, as a tarball's


def test_the_controller_pulls_the_config_alone_for_the_plan_and_reads_it_from_its_cache_after(tmp_path: Path) -> None:
    with Registry() as registry:
        index, _ = registry.push("24.10-py3", ngc_config(), [BASE, TOP])
        cache = str(tmp_path / "images")
        assert oci_pull.cached_config(cache, index, "amd64") is None
        assert oci_pull.config_pulled(registry.url, registry.repository, index, cache, "", "amd64", 10) == (0, "")
        blobs = [path for _, path, _, _ in registry.log if path.startswith("/cdn/")]
        assert len(blobs) == 1  # the config, no layer
        assert oci_pull.cached_config(cache, index, "amd64") == on_base("22.04")
        before = len(registry.log)
        assert oci_pull.config_pulled(registry.url, registry.repository, index, cache, "", "amd64", 10) == (0, "")
        assert registry.log[before:] == []  # all cached: nothing asked
        code, message = oci_pull.config_pulled(
            registry.url, registry.repository, "sha256:" + "0" * 64, cache, "", "amd64", 10
        )
        assert code == 4 and "failed (HTTPError: HTTP Error 404" in message


def test_an_image_the_controllers_cache_refuses_for_a_host_is_named_not_raised(local, tmp_path: Path) -> None:
    """The controller's cache holds the index once one host's plan read it; for a host of an architecture
    the index has no entry for, the plan says so (as the host's probe does) instead of ending the run."""
    with Registry() as registry:
        index, _ = registry.push("24.10-py3", ngc_config(), [BASE, TOP])
        settings = load(
            {
                **IMAGE,
                "triton_image_digest": index,
                "triton_image_registry_url": registry.url,
                "controller_cache_dir": str(tmp_path / "controller"),
            }
        )
        host_cache = str(tmp_path / "host-images")
        assert image_config(local, settings, host_cache, "x86_64") == (
            on_base("22.04"),
            "the registry, through the controller",
        )
        summary, why = image_config(local, settings, host_cache, "aarch64")
        assert summary is None
        assert why == f"the controller's cache refuses it: the image {index} has no linux/arm64 entry: " + (
            "pin the digest of a tag built for arm64"
        )
