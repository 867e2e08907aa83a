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


def _local_inventory(monkeypatch, **env: str) -> dict:
    """inventories/local.py's @local data, as pyinfra loads it with this environment."""
    for name in ("PIP_FIND_LINKS", "TRITON_PROVISIONER_DATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (name, data), *_ = runpy.run_path(str(Path(__file__).parents[2] / "inventories" / "local.py"))["local"]
    assert name == "@local"
    return data


def test_the_local_inventory_holds_nothing_of_a_machine_on_a_users_machine(monkeypatch) -> None:
    """No pip folder of wheels, no data file: torch from the official index, its variant from the driver."""
    assert _local_inventory(monkeypatch) == {}
    assert load({}).torch_index_url == "https://download.pytorch.org/whl"


def test_a_machine_whose_pip_finds_a_torch_wheel_takes_it(monkeypatch, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    (wheels / "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"")
    data = _local_inventory(monkeypatch, PIP_FIND_LINKS=f"/nonexistent file://{wheels}")
    assert data == {
        "torch_version": "2.13.0",
        "torch_index_url": "",
        "pip_find_links": str(wheels),
        "lock_trust_on_first_use": "torch",
    }
    load(data, "@local")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _local_inventory(monkeypatch, PIP_FIND_LINKS=str(empty)) == {}


def test_a_data_file_names_settings_for_this_machine_over_the_pip_ones(monkeypatch, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    data_file = tmp_path / "machine.json"
    data_file.write_text('{"torch_index_url": "http://127.0.0.1:9/whl", "offline": false}')
    data = _local_inventory(monkeypatch, PIP_FIND_LINKS=str(wheels), TRITON_PROVISIONER_DATA=str(data_file))
    assert data["torch_index_url"] == "http://127.0.0.1:9/whl" and data["pip_find_links"] == str(wheels)
    data_file.write_text('["not", "settings"]')
    with pytest.raises(ValueError, match="a JSON object of settings, not list"):
        _local_inventory(monkeypatch, TRITON_PROVISIONER_DATA=str(data_file))
