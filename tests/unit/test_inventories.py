"""The shipped inventories: valid settings, and every SSH host checked strictly against known_hosts."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from config.settings import load

pytestmark = pytest.mark.unit

INVENTORIES = sorted((Path(__file__).parents[2] / "inventories").glob("*.py"))


@pytest.mark.parametrize("path", INVENTORIES, ids=[p.stem for p in INVENTORIES])
def test_each_inventory_host_has_valid_settings_and_ssh_hosts_are_checked_strictly(path: Path) -> None:
    groups = {k: v for k, v in runpy.run_path(str(path)).items() if isinstance(v, list) and not k.startswith("_")}
    assert groups, f"{path} defines no host group"
    for hosts in groups.values():
        for name, data in hosts:
            load(data, name)  # every name a setting or pyinfra's own, every value valid
            if not name.startswith("@"):  # reached over SSH
                assert data.get("ssh_strict_host_key_checking") == "yes", f"{path}: {name} accepts any new host key"
