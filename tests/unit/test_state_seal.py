"""The controller's trust anchors sealed with a key not kept beside them (config/state_seal.py): on a notebook
they lie on the drive, where a writer could rewrite a digest together with the file it vouches for."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from config import state_seal
from tasks.apt import packages as apt_packages

pytestmark = pytest.mark.unit


@pytest.fixture
def keyed(monkeypatch, tmp_path: Path):
    """A controller with a key in its environment (as a Colab secret or an export gives it); no key file."""
    monkeypatch.setenv(state_seal.KEY_NAME, "a-key-of-the-users")
    monkeypatch.setattr(state_seal, "KEY_FILE", tmp_path / "no-such-key")
    state_seal.key.cache_clear()
    yield
    state_seal.key.cache_clear()


@pytest.fixture
def keyless(monkeypatch, tmp_path: Path):
    monkeypatch.delenv(state_seal.KEY_NAME, raising=False)
    monkeypatch.setattr(state_seal, "KEY_FILE", tmp_path / "no-such-key")
    state_seal.key.cache_clear()
    yield
    state_seal.key.cache_clear()


def test_an_anchor_rewritten_on_the_drive_with_a_seal_of_its_own_is_not_trusted(keyed, tmp_path: Path) -> None:
    store = tmp_path / "controller" / "venv-locks" / "apt" / "gpu1" / "manifest.sha256"
    state_seal.sealed(store, "a" * 64 + "\n")
    assert apt_packages.manifest_digest_kept(str(store)) == "a" * 64
    store.write_text("b" * 64 + "\n")  # the drive's writer: the digest of .debs of its own
    assert apt_packages.manifest_digest_kept(str(store)) == ""  # not trusted: apt checks its cache anew
    forged = hmac.new(b"a guess", f"apt/gpu1/manifest.sha256\n{'b' * 64}\n".encode(), hashlib.sha256).hexdigest()
    store.with_name("manifest.sha256.hmac").write_text(forged + "\n")
    assert apt_packages.manifest_digest_kept(str(store)) == ""
    store.with_name("manifest.sha256.hmac").unlink()
    assert apt_packages.manifest_digest_kept(str(store)) == ""  # no seal at all: not trusted either


def test_a_sealed_anchor_copied_to_another_hosts_name_is_not_trusted(keyed, tmp_path: Path) -> None:
    east = tmp_path / "snapshots" / "gpu1@east" / "venv.tar.sha256"
    west = tmp_path / "snapshots" / "gpu1@west" / "venv.tar.sha256"
    state_seal.sealed(east, "c" * 64)
    west.parent.mkdir(parents=True)
    west.write_text(east.read_text())
    west.with_name(west.name + ".hmac").write_text(east.with_name(east.name + ".hmac").read_text())
    assert state_seal.trusted(east) == "c" * 64 and state_seal.trusted(west) is None


def test_without_a_key_the_anchors_are_read_as_they_are_and_no_old_seal_is_left(keyless, tmp_path: Path) -> None:
    store = tmp_path / "locks" / "venv.lock"
    store.parent.mkdir()
    store.with_name("venv.lock.hmac").write_text("stale\n")
    state_seal.sealed(store, "torch==2.13.0\n")
    assert state_seal.trusted(store) == "torch==2.13.0\n" and not store.with_name("venv.lock.hmac").exists()


def test_the_key_file_is_taken_only_where_no_one_else_may_read_it(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv(state_seal.KEY_NAME, raising=False)
    key_file = tmp_path / "state.key"
    key_file.write_text("from-a-file\n")
    monkeypatch.setattr(state_seal, "KEY_FILE", key_file)
    try:
        key_file.chmod(0o644)
        state_seal.key.cache_clear()
        assert state_seal.key() is None
        key_file.chmod(0o600)
        state_seal.key.cache_clear()
        assert state_seal.key() == (b"from-a-file", str(key_file))
    finally:
        state_seal.key.cache_clear()


def test_the_plan_says_whether_the_drive_is_trusted_or_sealed(keyless, monkeypatch) -> None:
    from reports import assessment as report

    monkeypatch.setattr("os.geteuid", lambda: 0)
    from config.settings import load

    notebook = load({"persist_dir": "/content/drive/MyDrive/triton"}, "@local")
    assert "whoever can write that drive is trusted as root" in report._trust(notebook.controller_state_dir)
    monkeypatch.setenv(state_seal.KEY_NAME, "k")
    state_seal.key.cache_clear()
    line = report._trust(notebook.controller_state_dir)
    assert f"are sealed with your key (${state_seal.KEY_NAME})" in line and "'k'" not in line and " k " not in line
