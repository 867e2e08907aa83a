"""bench/fleet_model.py: the model of a fleet's cold provision by route, its check against this machine's
measured runs, and downloads_via_controller's default as the model's fastest route where hosts have internet."""

from __future__ import annotations

import math

import pytest

from bench import fleet_model as fm
from config.settings import defaults

pytestmark = pytest.mark.unit


def test_bytes_from_outside_grow_with_the_hosts_only_for_each_on_its_own() -> None:
    p, links = fm.PROFILES["gpu"], fm.PRESETS["bastion"]
    one, eight = fm.own(p, links, 1), fm.own(p, links, 8)
    assert math.isclose(eight.outside_bytes, 8 * one.outside_bytes)
    for route in (fm.controller, fm.cache_host):
        assert route(p, links, 8).outside_bytes == p.relayable + 8 * p.own_only  # the big files once
    assert fm.controller(p, links, 32).seconds > fm.controller(p, links, 8).seconds  # its uplink carries them all


def test_air_gapped_hosts_cannot_fetch_on_their_own() -> None:
    p, links = fm.PROFILES["gpu"], fm.PRESETS["airgap"]
    assert fm.own(p, links, 8).seconds == float("inf")
    assert fm.controller(p, links, 8).seconds < float("inf") and fm.cache_host(p, links, 8).seconds < float("inf")
    assert "impossible" in fm.table(p, links, [8], "airgap")


def test_the_model_is_within_15_percent_of_each_run_measured_here() -> None:
    for hosts, route, measured in fm.MEASURED:
        assert 0.85 <= fm.here(hosts, route) / measured <= 1.15, (hosts, route)


@pytest.mark.parametrize("preset", ["home", "bastion"])
def test_the_default_is_the_fastest_route_where_the_hosts_reach_the_internet(preset: str) -> None:
    """downloads_via_controller's default ("no": each host on its own) beats the controller's relay."""
    assert defaults()["downloads_via_controller"] == "no"
    p, links = fm.PROFILES["gpu"], fm.PRESETS[preset]
    for hosts in (8, 32, 128):
        assert fm.own(p, links, hosts).seconds < fm.controller(p, links, hosts).seconds
