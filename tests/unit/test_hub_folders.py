"""Triton model folders a hub repository holds (`triton:hub:<repo>@<revision>`, config/hub_folders.py):
fetched to the controller by the hosts' own hub_fetch.py against the hub stand-in over HTTP, each file
checked, then checked and served like a folder the user has; read from the cache after, offline."""

from __future__ import annotations

from pathlib import Path

import pytest

import remote
from config import hub_folders
from config.layout import Layout
from config.settings import SettingsError, load
from tasks.models import repository as models
from testbed.hub import Hub

pytestmark = pytest.mark.unit

hub_fetch = remote.load("hub_fetch.py")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "triton_models"
SEED_CONFIG = (FIXTURES / "seed-config.pbtxt").read_text()
MODEL_PY = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"


def seed_folder(root: Path, config_in_version: bool = False) -> Path:
    """The seeds' text_classifier as a folder: config.pbtxt, 1/model.py, a weights subfolder."""
    (root / "1" / "weights").mkdir(parents=True)
    (root / ("1/config.pbtxt" if config_in_version else "config.pbtxt")).write_text(SEED_CONFIG)
    (root / "1" / "model.py").write_text(MODEL_PY)
    (root / "1" / "weights" / "model.safetensors").write_bytes(b"\x00weights" * 100)
    return root


def access(tmp_path: Path, hub: Hub | None, offline: bool = False) -> hub_folders.HubAccess:
    return hub_folders.HubAccess(hub.url if hub else "http://127.0.0.1:9", "", tmp_path / "cache", offline)


def settings(tmp_path: Path, hub: Hub | None, source: str, offline: bool = False):
    return load(
        {
            "models": [{"name": "text_classifier", "source": source}],
            "hf_endpoint": hub.url if hub else "http://127.0.0.1:9",
            "hub_folder_cache": str(tmp_path / "cache"),
            "offline": offline,
        }
    )


@pytest.mark.parametrize("layout", ["top", "folder"])
def test_a_repository_holding_a_model_folder_is_fetched_as_it_is_and_served_from_it(tmp_path, layout) -> None:
    """At the repository's top, or as a folder named as the model beside other files: every file of the
    folder fetched (each checked), nothing else; the folder's files go into the repository unchanged."""
    repo = tmp_path / "repo"
    model = seed_folder(repo if layout == "top" else repo / "text_classifier")
    (repo / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    if layout == "folder":
        (repo / "README.md").write_text("# a model repository\n")
        seed_folder(repo / "other")
    with Hub() as hub:
        commit = hub.add("seeds/text-classifier", repo)
        spec = settings(tmp_path, hub, "triton:hub:seeds/text-classifier@main").models[0]
        fetched = sorted(r.file for r in hub.fetched("seeds/text-classifier"))
    prefix = "" if layout == "top" else "text_classifier/"
    want = ["1/model.py", "1/weights/model.safetensors", "config.pbtxt"]
    assert fetched == [prefix + f for f in want]
    assert (
        spec.model_folder
        == tmp_path / "cache" / "hub" / "models--seeds--text-classifier" / "snapshots" / commit / prefix
    )
    served = models.repository_files((spec,), Layout(load({})), [])
    assert {k: v for k, v in served.items() if k.startswith("text_classifier/")} == {
        f"text_classifier/{f}": (model / f).read_bytes() for f in want
    }
    weights = spec.model_folder / "1" / "weights" / "model.safetensors"
    assert (
        weights.is_symlink()
        and weights.resolve().parent == tmp_path / "cache" / "hub" / "models--seeds--text-classifier" / "blobs"
    )


def test_a_folder_fetched_once_is_read_from_the_cache_without_the_hub_and_offline(tmp_path) -> None:
    seed_folder(tmp_path / "repo")
    with Hub() as hub:
        hub.add("seeds/text-classifier", tmp_path / "repo")
        first = settings(tmp_path, hub, "triton:hub:seeds/text-classifier@main").models[0]
    again = settings(tmp_path, None, "triton:hub:seeds/text-classifier@main", offline=True).models[0]
    assert again.model_folder == first.model_folder
    (first.model_folder / "1" / "model.py").unlink()  # a file gone from the cache: fetched again, so refused offline
    with pytest.raises(SettingsError, match=r"not in the controller's cache .* run once with offline = False"):
        settings(tmp_path, None, "triton:hub:seeds/text-classifier@main", offline=True)


def test_the_seeds_mistake_in_a_hub_repository_is_refused_with_the_fix_before_any_change(tmp_path) -> None:
    seed_folder(tmp_path / "repo", config_in_version=True)
    with Hub() as hub, pytest.raises(SettingsError) as refused:
        hub.add("seeds/text-classifier", tmp_path / "repo")
        settings(tmp_path, hub, "triton:hub:seeds/text-classifier@main")
    assert "config.pbtxt is in the version folder 1/: Triton reads it from the model's folder" in str(refused.value)


def test_a_repository_without_a_model_folder_or_unreachable_is_refused_naming_why(tmp_path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "model.safetensors").write_bytes(b"weights")
    with Hub() as hub, pytest.raises(SettingsError) as refused:
        hub.add("org/plain", tmp_path / "repo")
        settings(tmp_path, hub, "triton:hub:org/plain@main")
    assert (
        "holds no Triton model folder: neither config.pbtxt (or a version folder) at its top "
        "nor a folder text_classifier/" in str(refused.value)
    )
    with pytest.raises(
        SettingsError, match=r"fetching its model folder on the controller failed: hub: download of org/x@main failed"
    ):
        settings(tmp_path, None, "triton:hub:org/x@main")
    with pytest.raises(SettingsError, match=r"expected triton:hub:<org>/<name>@<revision>"):
        settings(tmp_path, None, "triton:hub:org/x/y@main")


@pytest.mark.parametrize("name", ["1/../../escape.py", "1//model.py", "1/a\\b.py", "a/b/c/d/e/f/g/h/i.py"])
def test_a_hub_that_names_a_file_outside_plain_paths_is_refused(name) -> None:
    with pytest.raises(hub_fetch.Refused, match="not a path of plain names"):
        hub_fetch.model_folder_files(["config.pbtxt", "1/model.py", name], "text_classifier")


def test_hidden_files_are_left_and_a_folder_over_the_cap_is_refused_before_a_byte(tmp_path, monkeypatch) -> None:
    assert hub_fetch.model_folder_files([".gitattributes", "x/.cache/y", "x/config.pbtxt", "x/1/model.py"], "x") == (
        "x/",
        ["x/1/model.py", "x/config.pbtxt"],
    )
    seed_folder(tmp_path / "repo")
    monkeypatch.setenv("HF_ENDPOINT", "")
    monkeypatch.setattr(hub_fetch, "MODEL_FOLDER_BYTES", 100)
    with Hub() as hub:
        hub.add("seeds/big", tmp_path / "repo")
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
        assert hub_fetch.main("seeds/big", "main", str(tmp_path / "marker.json"), "text_classifier") == 3
        assert hub.fetched("seeds/big") == []
    assert not (tmp_path / "marker.json").exists()
