"""The hub fetch's secrets and record on a host: hub_fetch.py takes the token and the network settings from
descriptors root opened (never its environment) and prints its record, which root checks and writes
(tasks/models/scripts/hub_record.py). Real scripts, the hub stand-in over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import remote
from testbed.hub import Hub

pytestmark = pytest.mark.unit

hub_record = remote.load("hub_record.py")
COMMIT = "a" * 40


def _record(cache: Path, **change) -> dict:
    snapshot = str(cache / "models--org--m" / "snapshots" / COMMIT)
    files = ["config.json", "model.safetensors"]
    digests = {"config.json": "git-blob-sha1:" + "b" * 40, "model.safetensors": "sha256:" + "c" * 64}
    return {"repo": "org/m", "revision": "main", "commit": COMMIT, "files": files, "path": snapshot,
            "digests": digests, **change}  # fmt: skip


def _write(tmp_path: Path, record: dict) -> tuple[Path, Path]:
    part, marker = tmp_path / "m.json.fetching", tmp_path / "m.json"
    part.write_text(json.dumps(record))
    return part, marker


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"path": "/root"}, "its path is '/root', not the snapshot folder"),
        ({"commit": "../../etc"}, "its commit is not 40 hex digits"),
        ({"repo": "org/other"}, "it names 'org/other'@'main', not org/m@main"),
        ({"files": ["../x"], "digests": {"../x": "sha256:" + "c" * 64}}, "not plain relative names"),
        ({"digests": {"config.json": "md5:x", "model.safetensors": "sha256:" + "c" * 64}}, "a digest is not"),
        ({"folder": "/etc"}, "its model folder '/etc' is not inside the snapshot folder"),
    ],
)
def test_a_record_that_does_not_name_the_snapshot_it_fetched_is_refused(tmp_path: Path, change, why, capsys) -> None:
    cache = tmp_path / "hub"
    part, marker = _write(tmp_path, _record(cache, **change))
    assert hub_record.main(str(cache), "org/m", "main", str(part), str(marker)) == 1
    assert why in capsys.readouterr().err
    assert not marker.exists() and not part.exists()


def test_root_writes_the_marker_itself_from_the_checked_record(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    record = _record(cache, folder=str(cache / "models--org--m" / "snapshots" / COMMIT / "m") + "/", extra="x")
    part, marker = _write(tmp_path, record)
    assert hub_record.main(str(cache), "org/m", "main", str(part), str(marker)) == 0
    written = json.loads(marker.read_text())
    assert written == {k: v for k, v in record.items() if k != "extra"}
    assert oct(marker.stat().st_mode & 0o777) == "0o644" and not part.exists()


def test_the_fetch_reads_its_secrets_from_root_opened_descriptors_and_prints_its_record(tmp_path: Path) -> None:
    """No HF_TOKEN or HF_ENDPOINT in the environment: both come through descriptors 3 and 4 (the token
    file, the network settings file), and the token reaches the hub."""
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(os.urandom(1000))
    token_file, network_file = tmp_path / "token", tmp_path / "network.env"
    token_file.write_text("hf_secret123\n")
    with Hub() as hub:
        commit = hub.add("org/m", folder)
        network_file.write_text(f"# root's\nexport HF_ENDPOINT='{hub.url}'\nexport no_proxy='127.0.0.1'\n")
        cache = tmp_path / "cache"
        # as root's shell opens them (a redirection): this process's own descriptors are left alone
        res = subprocess.run(
            ["sh", "-c", 'exec python3 -c "$1" org/m main - 3<"$2" 4<"$3"', "sh", remote.source("hub_fetch.py"),
             str(token_file), str(network_file)],
            env={"PATH": "/usr/bin:/bin", "HF_HUB_CACHE": str(cache), "HUB_SECRET_FDS": "3 4"},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        asked = [r for r in hub.log if r.repo == "org/m" and not r.file]
    assert asked[0].authorization == "Bearer hf_secret123"
    record = json.loads(res.stdout)
    assert record["commit"] == commit and record["path"] == str(cache / "models--org--m" / "snapshots" / commit)
    assert hub_record.problem(record, str(cache), "org/m", "main") is None
