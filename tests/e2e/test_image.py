"""Triton from a container image without Docker (triton_source = 'image'): pulled from the registry
stand-in (testbed/registry.py: the distribution API with a token service, on this machine's loopback),
every blob checked, only /opt/tritonserver unpacked with the layers' whiteouts, served and proven; a second
run fetches nothing; after a reset, offline, from the cached layers; a layer altered in transit is refused
and the build that serves keeps serving."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import TestHost, host_index, run_pyinfra, triton_ports, write_inventory
from testbed.registry import Registry, digest_of, ngc_config
from tests.e2e import artifacts
from tests.e2e.test_provision import assert_serves, changed, provision

CONFIG = ngc_config()  # what NGC's images say of themselves: Triton 2.51.0 (24.10), Ubuntu 22.04, CUDA 12.6


@pytest.fixture(scope="module")
def registry() -> Iterator[Registry]:
    with Registry(cdn_host="127.0.0.1") as reg:  # the test hosts' /etc/hosts names no localhost
        yield reg


def image_settings(served: dict, registry: Registry, tag: str, digest: str, controller_cache: Path) -> dict:
    """controller_cache: the controller's cache, empty at the test's start (the plan's pull of the config is
    counted)."""
    host = registry.url.removeprefix("http://")
    return {
        **served,
        "triton_source": "image",
        "triton_image": f"{host}/{registry.repository}:{tag}",
        "triton_image_digest": digest,
        "triton_image_registry_url": registry.url,
        "controller_cache_dir": str(controller_cache),
    }


def test_an_image_is_pulled_unpacked_served_and_kept_for_a_reset(
    host: TestHost, served: dict, registry: Registry, tmp_path: Path
) -> None:
    layers = artifacts.triton_image_layers()
    index, _ = registry.push("2.51-test", CONFIG, layers)
    settings = image_settings(served, registry, "2.51-test", index, tmp_path / "controller-cache")
    inv = write_inventory(tmp_path / "inv.py", [host], settings, own_ports=True)
    host.ssh("rm -rf /persist/downloads/images")
    _, first = provision(inv)
    assert first["Triton image in the cache"]["success"] == 1
    # named by its tag, digest, stub and the backends kept: the models' (python), not the image's onnxruntime
    current = host.ssh("readlink /opt/triton/current").stdout
    assert current == f"/opt/triton/versions/2.51-test-{index[7:19]}-py3.11-python\n"
    assert host.ssh("ls /opt/triton/current/backends").stdout.split() == ["python"]
    manifest = host.ssh("cat /opt/triton/current/.provisioner").stdout
    assert manifest.startswith("source=image\nsha256=" + index[7:])
    assert "carried=" not in manifest  # the identity backend, which links the image's helper library, is not kept
    assert host.ssh("cat /opt/triton/current/TRITON_VERSION").stdout == "2.51.0\n"
    # only /opt/tritonserver, with the whiteouts applied: nothing of the image's /usr or /etc on the host
    gone = "/opt/triton/current/NOTES.decoy /usr/lib/x86_64-linux-gnu/libdecoy.so.1 /opt/triton/current/usr"
    assert host.ssh(f"ls -d {gone} 2>/dev/null", check=False).stdout == ""
    assert_serves(host)
    blobs = [entry for entry in registry.log if entry[1].startswith("/cdn/")]
    assert len(blobs) == 2 + len(layers)  # the config for the plan (the controller's) and the pull's, each layer once

    seen = len(registry.log)
    _, again = provision(inv)
    assert changed(again) == {}
    assert registry.log[seen:] == []

    host.reset()  # the notebook's reset: the install is gone, /persist (the cached layers) kept
    offline = write_inventory(tmp_path / "offline.py", [host], {**settings, "offline": True}, own_ports=True)
    _, after = provision(offline)
    assert after["Triton server installed"]["success"] == 1
    assert registry.log[seen:] == []  # unpacked from the cached layers: the registry was not asked
    assert_serves(host)

    # a new build whose layer is altered in transit: refused, nothing switched, the old build serves
    link = host.ssh("readlink /opt/triton/current").stdout
    altered = [*layers[:2], layers[2] + b"\0" * 1024]  # another top layer: another image
    index2, _ = registry.push("2.51-test2", CONFIG, altered)
    registry.tamper(digest_of(altered[2]))
    settings2 = image_settings(served, registry, "2.51-test2", index2, tmp_path / "controller-cache")
    inv2 = write_inventory(tmp_path / "inv2.py", [host], settings2, own_ports=True)
    res = run_pyinfra(inv2, "deploy/provision.py", "-y")
    assert res.returncode != 0
    assert f"not the {digest_of(altered[2])} asked for" in res.stdout + res.stderr
    assert host.ssh("readlink /opt/triton/current").stdout == link
    assert host.ssh(
        f"test -e /persist/downloads/images/blobs/sha256/{digest_of(altered[2])[7:]}", check=False
    ).returncode
    assert_serves(host)


IDENTITY_CONFIG = """name: "ident"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def test_a_model_for_another_backend_is_served_by_the_backend_the_image_carries(
    host: TestHost, served: dict, registry: Registry, tmp_path: Path
) -> None:
    """A Triton model folder for a backend other than python (identity: a C backend of the tests' own, built
    into the image like NGC's onnxruntime or pytorch): its backend unpacked beside python and the install
    named by both, the model proven with inputs made from its config, answering with what it was sent;
    the python models served as before."""
    index, _ = registry.push("2.51-ident", CONFIG, artifacts.triton_image_layers())
    folder = tmp_path / "ident"
    (folder / "1").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(IDENTITY_CONFIG)
    # its version folder holds no file: the identity backend reads none (the repository carries the folder)
    model = {"name": "ident", "source": f"triton:{folder}"}
    settings = {**image_settings(served, registry, "2.51-ident", index, tmp_path / "cc"), "models": [model]}
    out, _ = provision(write_inventory(tmp_path / "inv.py", [host], settings, own_ports=True))
    assert host.ssh("readlink /opt/triton/current").stdout == (
        f"/opt/triton/versions/2.51-ident-{index[7:19]}-py3.11-identity-python\n"
    )
    assert host.ssh("ls /opt/triton/current/backends").stdout.split() == ["identity", "python"]
    # the library identity links, which only the image has (under /usr/local, through a folder's link): carried
    assert "carried=libidentity_helper.so.1\n" in host.ssh("cat /opt/triton/current/.provisioner").stdout
    assert (
        host.ssh(
            "test -f /opt/triton/current/lib/libidentity_helper.so.1 -a ! -e /usr/local/helper", check=False
        ).returncode
        == 0
    )
    assert "verified ident: inputs made from its config.pbtxt (INPUT0 FP32[4]) over HTTP and gRPC; OUTPUT0[4]" in out
    port = triton_ports(host_index(host.name))["triton_http_port"]
    sent = {"inputs": [{"name": "INPUT0", "shape": [4], "datatype": "FP32", "data": [1.5, -2.0, 3.25, 1e6]}]}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/ident/infer", json.dumps(sent).encode())
    with urllib.request.urlopen(request, timeout=30) as resp:
        answer = json.loads(resp.read())
    assert answer["outputs"] == [{"name": "OUTPUT0", "datatype": "FP32", "shape": [4], "data": [1.5, -2.0, 3.25, 1e6]}]
    assert_serves(host)


def test_a_fleet_pulls_the_image_once_through_the_controller(
    two_hosts: list[TestHost], served: dict, registry: Registry, tmp_path: Path
) -> None:
    """Two hosts, downloads through the controller: the registry is asked for each blob once, for both; each
    host takes each blob only once its own sha256 check agrees, unpacks, serves; a second run sends nothing."""
    layers = artifacts.triton_image_layers()
    index, _ = registry.push("2.51-fleet", CONFIG, [*layers, artifacts.gzip_layer({"opt/tritonserver/FLEET": b"1"})])
    settings = {
        **image_settings(served, registry, "2.51-fleet", index, tmp_path / "controller-cache"),
        "downloads_via_controller": "yes",
    }
    for h in two_hosts:
        h.ssh("rm -rf /persist/downloads/images")
    inv = write_inventory(tmp_path / "inv.py", two_hosts, settings, own_ports=True)
    seen = len(registry.log)
    _, results = provision(inv)
    assert results["Triton image in the cache"]["success"] == 2
    blobs = [path for _, path, _, _ in registry.log[seen:] if path.startswith("/cdn/")]
    assert len(blobs) == len(set(blobs)) == 2 + len(layers)  # the config and each layer, once for both hosts
    for h in two_hosts:
        assert h.ssh("cat /opt/triton/current/FLEET").stdout == "1"
        assert h.ssh("ls /persist/downloads/images/blobs/sha256 | grep -c from-controller", check=False).stdout == "0\n"
        assert_serves(h)
    seen = len(registry.log)
    _, again = provision(inv)
    assert changed(again) == {}
    assert registry.log[seen:] == []


def test_an_image_built_on_a_newer_os_than_the_host_is_refused_from_its_config_before_any_layer_or_change(
    host: TestHost, served: dict, registry: Registry, tmp_path: Path
) -> None:
    """NGC's newer images are built on Ubuntu 24.04 (glibc 2.39, libre2.so.10): a Debian 12 host is refused from
    the image's config alone, which the controller fetched for the plan, naming the glibc, the library no
    Debian 12 package ships and the fixes; no layer is pulled and nothing on the host changes."""
    index, _ = registry.push("2.51-noble", ngc_config(ubuntu="24.04"), artifacts.triton_image_layers())
    settings = image_settings(served, registry, "2.51-noble", index, tmp_path / "controller-cache")
    inv = write_inventory(tmp_path / "inv.py", [host], settings, own_ports=True)
    seen = len(registry.log)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and f"refusing to provision {host.name}, nothing was changed" in out
    assert "glibc 2.36 is older than 2.39, which Triton 2.51.0 needs" in out
    assert "pin an image of an earlier NGC release" in out
    assert "libre2.so.10" in out
    blobs = [path for _, path, _, _ in registry.log[seen:] if path.startswith("/cdn/")]
    assert blobs == [f"/cdn/{digest_of(ngc_config(ubuntu='24.04'))}"]  # the config alone, no layer
    assert host.ssh("ls /persist/downloads/images /opt/triton 2>&1", check=False).returncode != 0
    seen = len(registry.log)
    audit = run_pyinfra(inv, "deploy/audit.py", "-y")
    assert "Triton 2.51.0 (NGC 24.10), built on Ubuntu 24.04, CUDA 12.6; read from the registry" in audit.stdout
    assert registry.log[seen:] == []  # from the controller's cache: the registry is not asked again
