"""deploy/provision.py's decisions after the rules, before any change (planner/preflight.py)."""

from __future__ import annotations

import pytest

from config.layout import Layout
from config.settings import load
from planner import preflight
from planner.assessment import Artifact, Decisions
from planner.offline import Gap

pytestmark = pytest.mark.unit

ARTIFACT = Artifact("https://mirror.example/t.whl", "ab" * 32, "2.51.0", "/persist/downloads/t.whl", 0)
DECISIONS = Decisions(
    artifact=ARTIFACT, python="3.11", python_path="/usr/bin/python3.11", venv_pins={"numpy": "1.26.4"}
)
GAP = Gap("Triton artifact", "/persist/downloads/t.whl is not in the cache", "https://mirror.example/t.whl")


def test_zstd_asked_for_and_absent_is_refused_first_naming_the_fix() -> None:
    s = load({"venv_snapshot_compression": "zstd"})
    refused = preflight.refusal("h1", s, has_zstd=False, gaps=[GAP])
    assert refused is not None and refused.shown == [
        "== h1: venv_snapshot_compression is zstd: the host has no zstd command (fix: install zstd, or set it to auto)"
    ]
    assert preflight.refusal("h1", load({"venv_snapshot_compression": "auto"}), has_zstd=False, gaps=[]) is None


def test_a_kept_lock_naming_no_wheel_is_refused_naming_the_lock_the_files_and_the_fix() -> None:
    store, names = "/ctl/venv-locks/venv-py3.11-cpu-k.lock", "../../etc/cron.d/x.whl, six$(id).whl"
    refused = preflight.refusal("h1", load({}), has_zstd=True, gaps=[], unsafe_lock=(store, names))
    assert refused is not None
    assert refused.reason == (
        f"the kept lock {store} names files that are no wheel's name: {names}; "
        "remove that lock (a provision makes a new one) and run again"
    )
    assert refused.shown == [f"== h1: refused, nothing changed: {refused.reason}"]
    assert preflight.refusal("h1", load({}), has_zstd=True, gaps=[], unsafe_lock=(store, "")) is None


def test_offline_gaps_are_each_named_with_what_to_fetch() -> None:
    refused = preflight.refusal("h1", load({"offline": True}), has_zstd=True, gaps=[GAP, GAP])
    assert refused is not None
    assert refused.shown[0] == "== offline: the caches of h1 lack 2 thing(s)"
    assert refused.shown[1] == (
        "  MISSING  Triton artifact: /persist/downloads/t.whl is not in the cache\n"
        "           fetch: https://mirror.example/t.whl"
    )
    assert refused.reason.startswith("offline, the caches lack Triton artifact: ")


def test_the_artifact_size_is_asked_only_when_it_is_to_download_and_the_url_has_no_credentials() -> None:
    s = load({})
    assert preflight.asks_artifact_size(s, DECISIONS, cached=False)
    assert not preflight.asks_artifact_size(s, DECISIONS, cached=True)
    assert not preflight.asks_artifact_size(load({"offline": True}), DECISIONS, cached=False)
    secret = Decisions(artifact=Artifact("https://u:pw@mirror.example/t.whl", "ab" * 32, "2.51.0", "/x", 0))
    assert not preflight.asks_artifact_size(s, secret, cached=False)


def test_the_venv_plan_takes_uploaded_wheels_and_the_codec_the_host_can() -> None:
    s = load({"pip_find_links": "upload:/tmp", "venv_snapshot_compression": "auto"})
    plan = preflight.venv_plan(s, Layout(s), DECISIONS, has_zstd=False, restore_token="t")
    assert plan.find_links == Layout(s).uploaded_wheels and plan.snapshot.endswith(".tar.gz")
    assert preflight.venv_plan(s, Layout(s), DECISIONS, has_zstd=True, restore_token="t").snapshot.endswith(".tar.zst")
    assert preflight.wants_zstd(s) and not preflight.wants_zstd(load({"venv_snapshot": False}))


def test_a_models_own_environment_is_planned_beside_the_venv_with_its_own_wheelhouse_and_snapshots() -> None:
    s = load({"venv_lock_dir": ""})
    decisions = Decisions(**{**DECISIONS.__dict__, "model_envs": {"clf": {"numpy": "1.26.3"}}})
    venv = preflight.venv_plan(s, Layout(s), decisions, has_zstd=True, restore_token="t")
    env = preflight.venv_plan(s, Layout(s), decisions, has_zstd=True, restore_token="t", model="clf")
    assert env.requirements == {"numpy": "1.26.3"} and venv.requirements == {"numpy": "1.26.4"}
    assert env.venv_dir.startswith(f"{Layout(s).model_envs}/clf-") and env.venv_dir.endswith("-py3.11")
    assert env.wheelhouse != venv.wheelhouse and env.wheelhouse.startswith(Layout(s).wheelhouse_root + "/")
    # its snapshots in a folder of their own: writing one removes the others in its folder
    assert env.snapshot.startswith(f"{Layout(s).venv_snapshots}/model-clf/") and env.snapshot.endswith(".tar.zst")
    assert env.restore_token == "" and venv.restore_token == "t"  # unpacked in its own step, not in the background
    moved = Decisions(**{**decisions.__dict__, "model_envs": {"clf": {"numpy": "1.26.2"}}})
    assert preflight.venv_plan(s, Layout(s), moved, True, "t", model="clf").venv_dir != env.venv_dir


def test_offline_names_a_models_environment_whose_wheelhouse_is_not_complete() -> None:
    """The venv's wheelhouse complete, a model environment's not: that one gap, named with what to do."""
    from pyinfra.context import ctx_host

    from planner import offline
    from tests.unit.test_operations import FixtureHost

    s = load({"offline": True, "venv_lock_dir": ""})
    decisions = Decisions(**{**DECISIONS.__dict__, "model_envs": {"clf": {"numpy": "1.26.3"}}})
    venv = preflight.venv_plan(s, Layout(s), decisions, has_zstd=True, restore_token="t")
    env = preflight.venv_plan(s, Layout(s), decisions, has_zstd=True, restore_token="t", model="clf")
    done = {"sha256": "0" * 64, "mode": "644"}
    complete = {f"{venv.wheelhouse}/.complete": done, venv.lock_file: done}
    facts = {
        "DebPackages": {},
        "FileDigests": {
            f"{venv.wheelhouse}/.complete {venv.lock_file}": complete,
            f"{env.wheelhouse}/.complete {env.lock_file}": {},
        },
        "VenvPackages": {env.venv_dir: None},
        "File": {env.snapshot: None},  # no snapshot of it either
    }
    with ctx_host.use(FixtureHost(facts)):
        gaps = offline.gaps(s, Layout(s), decisions, venv, True, [], {"clf": env})
    assert gaps == [
        Gap(
            "model clf environment",
            f"the wheelhouse {env.wheelhouse} is not complete and no venv snapshot fits",
            "run provision once with the network (offline = False), which fills it and keeps a lock",
        )
    ]
