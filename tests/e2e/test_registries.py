"""Registries as users have them: Debian's `docker-registry` (the CNCF distribution registry 2.8, what Harbor
and most private registries are built on) run for real on loopback with htpasswd (Basic) authentication, an
image pushed into it by skopeo (testbed/distribution.py); pulled by the host's own script (oci_pull.py) and
unpacked (unpack_triton.py) as a host runs them; then a test host provisioned from it end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import remote
from testbed import TestHost, op_results, run_pyinfra, write_inventory
from testbed.distribution import Distribution
from testbed.registry import ngc_config
from tests.e2e import artifacts
from tests.e2e.test_provision import assert_serves
from tests.unit.test_oci import BASE, CONFIG, STUB, TOP, tree, unpack

USER, SECRET = "ci-puller", "an-access-token-of-the-registry"


@pytest.fixture(scope="module")
def basic() -> Iterator[tuple[Distribution, str]]:
    """A registry that asks for a user and secret (Basic), holding one image; (it, the image's digest)."""
    with Distribution(user=USER, secret=SECRET) as registry:
        index, _ = registry.push("25.01-py3", CONFIG, [BASE, TOP])
        yield registry, index


def pull_as_the_host(
    registry: Distribution, digest: str, cache: Path, keys: Path | None
) -> subprocess.CompletedProcess:
    """oci_pull.py as the host runs it (python3 -c SOURCE ARGS: the secret only in the root-only key file)."""
    args = [registry.url, registry.repository, digest, str(cache), *([f"@{keys}"] if keys else [])]
    return subprocess.run([sys.executable, "-c", remote.source("oci_pull.py"), *args], capture_output=True, text=True)


def key_file(folder: Path, text: str) -> Path:
    """The file the deploy writes for the pull (tasks/downloads/operations.py: a private upload, 0600, root's)."""
    path = folder / "image.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def test_an_image_is_pulled_from_a_registry_with_basic_auth_and_served_as_it_is(basic, tmp_path: Path) -> None:
    registry, digest = basic
    cache, dest = tmp_path / "cache", tmp_path / "versions" / "image"
    dest.parent.mkdir()
    secret_file = key_file(tmp_path, f"{USER}\n{SECRET}")
    pulled = pull_as_the_host(registry, digest, cache, secret_file)
    assert pulled.returncode == 0, pulled.stderr
    assert "3 blobs" in pulled.stderr and SECRET not in pulled.stderr
    assert not secret_file.exists()  # read once, then removed
    assert unpack(cache, digest, dest) == 0
    assert tree(dest)["backends/python/triton_python_backend_stub"] == STUB
    again = pull_as_the_host(registry, digest, cache, key_file(tmp_path, f"{USER}\n{SECRET}"))
    assert again.returncode == 0 and ", 0 fetched" in again.stderr  # all cached: nothing asked again


@pytest.mark.parametrize(
    ("secret", "said"),
    [
        (None, "asks for a user and secret (Basic auth): set triton_registry_user and triton_registry_api_key"),
        (f"{USER}\nnot-the-secret", f"refused user '{USER}' and its secret (HTTP 401)"),
        ("an-ngc-key-alone", "refused user '$oauthtoken' and its secret (HTTP 401)"),  # NGC's user, not this one
    ],
    ids=["none", "wrong-secret", "ngc-key-alone"],
)
def test_a_pull_without_the_right_user_and_secret_is_refused_naming_the_settings(
    basic, tmp_path: Path, secret: str | None, said: str
) -> None:
    registry, digest = basic
    given = key_file(tmp_path, secret) if secret is not None else None
    pulled = pull_as_the_host(registry, digest, tmp_path / "cache", given)
    assert pulled.returncode == 6 and said in pulled.stderr and "Traceback" not in pulled.stderr
    assert "not-the-secret" not in pulled.stderr
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # nothing kept


def test_a_host_is_provisioned_from_a_registry_with_basic_auth_and_the_secret_stays_private(
    host: TestHost, served: dict, tmp_path: Path
) -> None:
    """The whole path on a test host: the plan reads the image's config through the controller with the user
    and secret, the host pulls with them from its root-only key file (removed once read), Triton from the
    image serves; the secret is in no output and in no file left on the host."""
    with Distribution(user=USER, secret=SECRET) as registry:
        index, _ = registry.push("2.51-basic", ngc_config(), artifacts.triton_image_layers())
        settings = {
            **served,
            "triton_source": "image",
            "triton_image": f"127.0.0.1:{registry.port}/{registry.repository}:2.51-basic",
            "triton_image_digest": index,
            "triton_image_registry_url": registry.url,  # loopback: plain http may carry the secret
            "triton_registry_user": USER,
            "triton_registry_api_key": SECRET,
            "controller_cache_dir": str(tmp_path / "controller-cache"),
        }
        inv = write_inventory(tmp_path / "inv.py", [host], settings, own_ports=True)
        host.ssh("rm -rf /persist/downloads/images")
        res = run_pyinfra(inv, "deploy/provision.py", "-y")
        out = res.stdout + res.stderr
        assert res.returncode == 0, out[-6000:]
        assert SECRET not in out and op_results(out)["Triton image in the cache"]["success"] == 1
        assert host.ssh("readlink /opt/triton/current").stdout.startswith("/opt/triton/versions/2.51-basic-")
        assert_serves(host)
        assert host.ssh(f"grep -rl {SECRET} /persist /opt/triton /etc /root 2>/dev/null", check=False).stdout == ""
