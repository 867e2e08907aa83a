"""config/versions.py: versions ordered as pip orders them (packaging, PEP 440), and specifiers that count a
pre-release as the release it leads to."""

from __future__ import annotations

import pytest

from config.versions import satisfies, version_key

pytestmark = pytest.mark.unit


def test_versions_are_ordered_as_pip_orders_them() -> None:
    ordered = ["1.26.4", "2.0.0rc1", "2.0.0", "2.0.0+cpu", "2.0.1", "2.10", "12.4"]
    assert sorted(reversed(ordered), key=version_key) == ordered  # "2.0rc1" is not (2, 0, 1): before 2.0
    assert version_key("3.4.30") > version_key("3.4.9")  # glibcxx, by number, not by text
    assert version_key("550.54.15") > version_key("535.183.01")  # a driver's


def test_a_version_pep_440_cannot_read_is_taken_by_its_digits() -> None:
    assert version_key("3.4.30-debian") == version_key("3.4.30")  # a distro's suffix
    assert version_key("?") == version_key("0")  # a tool that said nothing useful


def test_a_pre_release_of_2_is_not_below_2() -> None:
    """The stub's numpy<2: a 2.0 release candidate carries numpy 2's ABI (PEP 440 leaves it out of <2)."""
    assert not satisfies("2.0.0rc1", "<2") and not satisfies("2.1.0", "<2") and satisfies("1.26.4", "<2")
    assert satisfies("2.0.0rc1", ">=2.0.0rc1,<3") and not satisfies("2.0.0rc1", ">=2")  # before 2.0 itself
