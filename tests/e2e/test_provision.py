"""Provisioning on real hosts: cold, idempotent, after a reset from caches, bad checksums,
the tarball source, refusal on a blocker, and two hosts at once."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as tgrpc
import tritonclient.http as thttp

import testbed
from planner.tables import PIP_DOWNLOADER_SHA256, PIP_DOWNLOADER_VERSION
from testbed import (
    TestHost,
    host_index,
    named_ports,
    op_results,
    run_pyinfra,
    run_pyinfra_lines,
    triton_ports,
    write_inventory,
)
from tests import tiny_models
from tests.e2e import artifacts
from tests.e2e.test_audit import SNAPSHOT

TEXTS = [b"a", b"bb", b"triton", b"provisioned"]


def provision(inv: Path, *args: str) -> tuple[str, dict]:
    res = run_pyinfra(inv, "deploy/provision.py", "-y", *args)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    return out, op_results(out)


def assert_serves(host: TestHost, ports: dict | None = None) -> None:
    """Real inference over HTTP and gRPC from this machine: lengths (torch) and upper-case strings."""
    ports = ports or triton_ports(host_index(host.name))
    data = np.array([[t] for t in TEXTS], dtype=np.object_)
    http = thttp.InferenceServerClient(f"127.0.0.1:{ports['triton_http_port']}")
    assert http.is_server_ready() and http.get_server_metadata()["version"] == "2.51.0"
    x = thttp.InferInput("TEXT", [len(TEXTS), 1], "BYTES")
    x.set_data_from_numpy(data)
    r = http.infer("smoke", [x])
    assert r.as_numpy("LENGTH").ravel().tolist() == [len(t) for t in TEXTS]
    assert r.as_numpy("UPPER").ravel().tolist() == [t.upper() for t in TEXTS]
    grpc = tgrpc.InferenceServerClient(f"127.0.0.1:{ports['triton_grpc_port']}")
    g = tgrpc.InferInput("TEXT", [len(TEXTS), 1], "BYTES")
    g.set_data_from_numpy(data)
    assert grpc.infer("smoke", [g]).as_numpy("LENGTH").ravel().tolist() == [len(t) for t in TEXTS]


def changed(results: dict) -> dict:
    return {name: r for name, r in results.items() if name != "Grand total" and r["success"]}


@pytest.fixture
def inv(host: TestHost, served: dict, tmp_path: Path) -> Path:
    return write_inventory(
        tmp_path / "inv.py", [host], served, own_ports=True, audit_report_path=str(tmp_path / "a.json")
    )


def test_blocker_refuses_before_any_change(host: TestHost, inv: Path) -> None:
    before = host.ssh(SNAPSHOT).stdout
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--data", "torch_variant=cu126")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "refusing to provision tb1, nothing was changed" in out
    assert "torch_variant = cu126 but the host has no usable GPU" in out
    assert host.ssh(SNAPSHOT).stdout == before


def test_cold_provision_serves_and_a_second_run_changes_nothing(host: TestHost, inv: Path, mirror) -> None:
    host.ssh("rm -rf /persist/* /persist/.[!.]*")  # cold: nothing cached either
    _, first = provision(inv)
    assert first["Triton artifact in the cache"]["success"] == 1
    assert first["Triton server running, ready and proven"]["success"] == 1
    assert_serves(host)
    assert any(p.startswith("/pytriton/") for _, p, _ in mirror.requests())
    # the wheelhouse was downloaded by the pinned pip, fetched first from the index and checked by its sha256
    pip_wheel = f"pip-{PIP_DOWNLOADER_VERSION}-py3-none-any.whl"
    pips = host.ssh("sha256sum /persist/wheels/*/tools/pip-*.whl").stdout.split()
    assert pips[0] == PIP_DOWNLOADER_SHA256 and pips[1].endswith(f"/tools/{pip_wheel}"), pips
    assert any(p.endswith(f"/{pip_wheel}") for _, p, _ in mirror.requests())
    # the server's user was made here, and recorded: no home made for it
    assert host.ssh("cat /etc/triton-provisioner/made-users").stdout == "triton-server\n"
    assert host.ssh("test -e /nonexistent", check=False).returncode != 0
    out, second = provision(inv, "-v")
    assert changed(second) == {}, f"second run changed: {changed(second)}"
    assert second["Grand total"]["no_change"] == len(second) - 1
    # what the first run asked was read in one command; one by one only this run's new restore token,
    # the install's libraries (the first run read the host before the install existed) and the server's
    # state, read when asked (by the plan, then by the server's step): never from the run's start
    read = re.search(r"\[tb1\] read the host: (\d+) facts in 1 round trip\(s\), (\d+) more one by one", out)
    assert read and int(read[1]) >= 40 and int(read[2]) <= 4, out[-3000:]
    server_reads = [line for line in out.splitlines() if "Loaded fact" in line and "ServerState" in line]
    assert len(server_reads) == 2, server_reads
    assert out.count("Loaded fact") == 1 + int(read[2]), [line for line in out.splitlines() if "Loaded fact" in line]
    res = run_pyinfra(inv, "deploy/audit.py", "-y")
    assert res.returncode == 0, res.stdout[-4000:]
    assert "== audit of tb1: all OK" in res.stdout


def test_offline_reprovisions_a_reset_host_with_the_network_cut(
    host: TestHost, served: dict, mirror, tmp_path: Path
) -> None:
    """Runs after the cold test (the fixture reset the host, /persist kept the caches that run filled).
    A reset host re-provisions from the caches: nothing fetched, pip never runs
    (the venv is unpacked from its snapshot), apt reads no list (dpkg installs the recorded .debs).
    Then offline = True after another reset, every proxy dead
    and the mirror refusing everyone: apt (its lists stale, so an online run would update them), Triton,
    the venv and the server all come from the caches on /persist; nothing is asked of the network."""
    online = write_inventory(tmp_path / "online.py", [host], served, own_ports=True)
    if host.ssh("test -f /persist/apt/update-stamp", check=False).returncode != 0:
        provision(online)  # run alone: fill the caches first
        host.reset()
    cache = "find /persist/pip-cache /persist/apt -type f | sort | xargs -r md5sum"
    before = host.ssh(cache).stdout
    log_len = len(mirror.requests())
    out, results = provision(online)
    assert_serves(host)
    # the same image again: the recorded .debs go to dpkg alone, apt reads no package list
    dpkg_line = r"apt cache: 1 recorded \.deb\(s\) installed with dpkg, no package list read: libpython3\.11_"
    assert re.search(dpkg_line, out), out[-4000:]
    assert mirror.requests()[log_len:] == []  # no artifact fetched from the mirror
    assert results["Triton artifact in the cache"]["no_change"] == 1
    assert results["Wheels in the persistent wheelhouse"]["no_change"] == 1  # pip ran with --no-index
    assert host.ssh(cache).stdout == before  # apt and pip fetched nothing new
    # the reset wiped the venv: it is unpacked from the snapshot the cold run kept, pip does not run
    assert results["venv"]["success"] == 1
    assert results["venv packages"]["no_change"] == 1
    assert results["venv snapshot on the persistent path"]["no_change"] == 1
    assert "torch" in host.ssh("/opt/triton/venv/bin/pip list --format=freeze").stdout

    host.reset()
    host.ssh("touch -d '3 days ago' /persist/apt/update-stamp")
    dead = "http://127.0.0.1:9"  # nothing listens there: any download through a proxy fails
    cut = {**served, "offline": True, "http_proxy": dead, "https_proxy": dead}
    inv = write_inventory(tmp_path / "offline.py", [host], cut, own_ports=True)
    seen = len(mirror.requests())
    mirror.allow = ()  # and the mirror refuses every peer
    try:
        out, results = provision(inv)
    finally:
        mirror.allow = None
    assert mirror.requests()[seen:] == []
    assert "  network  none (offline): everything from the caches on /persist" in out
    assert results["apt runtime libraries"]["success"] == 1  # installed from the cached .debs
    assert "export HF_HUB_OFFLINE=1" in host.ssh("cat /opt/triton/env.sh").stdout
    assert_serves(host)


def test_wrong_sha256_is_an_error_and_the_old_install_still_serves(
    host: TestHost, inv: Path, mirror, tmp_path: Path
) -> None:
    provision(inv)
    link = host.ssh("readlink /opt/triton/current").stdout
    url, sha = mirror.place(artifacts.triton_tarball(), "tarballs/tritonserver.tar")
    wrong = ("0" if sha[0] != "0" else "1") + sha[1:]
    res = run_pyinfra(
        inv,
        "deploy/provision.py",
        "-y",
        "--data",
        "triton_source=tarball",
        "--data",
        f"triton_tarball_url={url}",
        "--data",
        f"triton_tarball_sha256={wrong}",
        "--data",
        "triton_tarball_strip_components=1",
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert f"sha256 mismatch for {url}: expected {wrong}, got {sha}" in out
    left = host.ssh("ls -a /persist/downloads").stdout.split()
    assert [f for f in left if f.startswith("triton-")] == [], left  # the bad file (and .part) removed
    assert host.ssh("readlink /opt/triton/current").stdout == link
    assert_serves(host)


def test_tarball_source_serves_like_pytriton(host: TestHost, inv: Path, mirror) -> None:
    url, sha = mirror.place(artifacts.triton_tarball(), "tarballs/tritonserver.tar")
    args = [
        "--data",
        "triton_source=tarball",
        "--data",
        f"triton_tarball_url={url}",
        "--data",
        f"triton_tarball_sha256={sha}",
        "--data",
        "triton_tarball_strip_components=1",
    ]
    provision(inv, *args)
    assert f"/opt/triton/versions/tarball-{sha[:12]}-py3.11" in host.ssh("readlink /opt/triton/current").stdout
    assert host.ssh("cat /opt/triton/current/TRITON_VERSION").stdout == "2.51.0\n"
    assert host.ssh("cat /opt/triton/current/.provisioner").stdout.startswith("source=tarball")
    assert_serves(host)
    _, again = provision(inv, *args)
    assert changed(again) == {}


def test_a_fleet_with_one_blocked_host_provisions_the_others_and_names_each(
    two_hosts: list[TestHost], served: dict, hub, tmp_path: Path
) -> None:
    """Three hosts in one run, one refused by the rules (a GPU variant asked on a host without a GPU):
    the other two are provisioned at once and serving, the run fails, and the summary names every host.
    Their hub model crossed from the hub once: the controller fetched each file and sent it to both
    (tasks/models/hub_relay.py), each host checked it against the hub's list it read itself; so did their apt
    packages (tasks/apt/relay.py: their apt caches emptied first), each checked against the host's lists, and
    the lists themselves (tasks/apt/lists_relay.py), each checked by the host's apt against its InRelease."""
    tiny_models.make("classifier", tmp_path / "clf", seed=3)
    hub.add("fleet/clf", tmp_path / "clf")
    model = {"name": "clf_hub", "source": "hub:fleet/clf@main", "task": "text-classification"}
    fleet = {**served, "hf_endpoint": hub.url, "models": [model]}
    fleet["controller_cache_dir"] = str(tmp_path / "controller-cache")  # empty: the controller's fetch is counted
    fleet["downloads_via_controller"] = "auto"  # two SSH hosts, no proxy: through the controller
    for h in two_hosts:
        h.ssh("rm -rf /persist/apt")  # apt installs (and fetches) again: through the controller
    bad = TestHost(testbed.up(1, prefix="fleet")[0])
    try:
        inv = write_inventory(tmp_path / "inv.py", two_hosts, fleet, own_ports=True)
        ports = named_ports(3)
        row = (bad.name, {**bad.data, **served, **ports, "torch_variant": "cu126"})
        inv.write_text(inv.read_text().rstrip().removesuffix("]") + f"    {row!r},\n]\n")
        before = bad.ssh(SNAPSHOT).stdout
        res = run_pyinfra(inv, "deploy/provision.py", "-y")
        out = res.stdout + res.stderr
        assert res.returncode != 0
        results = op_results(out)
        assert results["Triton server running, ready and proven"]["hosts"] == 2  # one run, both hosts
        for h in two_hosts:
            assert_serves(h)
            assert h.ssh("ls /persist/huggingface/provisioner-fetched").stdout.split() == [
                "666c6565742f636c66406d61696e.json"  # the marker alone: the controller's copies are gone
            ]
        assert out.count("verified clf_hub:") == 2, out[-6000:]
        sent = Counter(r.file for r in hub.fetched("fleet/clf"))
        assert sent and set(sent.values()) == {1}, sent  # each file crossed from the hub once, for both hosts
        assert "model.safetensors" in sent
        relayed = re.findall(r"(\d+) bytes from the controller's copy", out)  # each host's fetch says so
        assert len(relayed) == 2 and all(int(n) > 0 for n in relayed), out[-6000:]
        debs = re.findall(r"apt: (\d+) of (\d+) packages \((\d+) bytes\) from the controller's copy", out)
        assert len(debs) == 2 and all(n == of != "0" for n, of, _ in debs), out[-6000:]
        for h in two_hosts:  # what the controller sent is what the host installed from
            assert "libpython3.11_" in h.ssh("ls /persist/apt/archives").stdout
        lists = re.findall(
            r"apt: (\d+) of (\d+) package lists \((\d+) bytes\) from the controller's copy, each checked by apt "
            r"against its signed InRelease; from the mirror: Fetched ([\d.,]+) ([kMG]?B) in",
            out,
        )
        assert len(lists) == 2 and all(n == of != "0" for n, of, *_ in lists), out[-6000:]
        assert lists[0][2] == lists[1][2] and int(lists[0][2]) > 1_000_000  # the same files for both
        # apt took each list sent as its own download: it fetched from the mirror only the InRelease (~150 kB),
        # not the index files (~18 MB: with them sent in a compression apt does not ask for, it did)
        assert all(unit == "B" or (unit == "kB" and float(size.replace(",", "")) < 1000) for *_, size, unit in lists), (
            lists
        )
        for h in two_hosts:
            assert "_main_binary-amd64_Packages" in h.ssh("ls /persist/apt/lists").stdout
        summary = out[out.index("--> Summary:") :]
        assert "[tb1] OK" in summary and "[tb2] OK" in summary
        assert (
            f"[{bad.name}] BLOCKED, nothing changed: torch: torch_variant = cu126 but the host has no usable GPU"
            in summary
        )
        assert bad.ssh(SNAPSHOT).stdout == before
    finally:
        testbed.remove(bad.name)


def test_uploaded_wheelhouse_for_an_air_gapped_host(host: TestHost, served: dict, tmp_path: Path) -> None:
    """pip_find_links = upload:<dir>: torch comes from a wheel copied from the controller, no index."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / artifacts.TORCH_WHEEL.name).symlink_to(artifacts.TORCH_WHEEL)
    inv = write_inventory(tmp_path / "inv.py", [host], {**served, "pip_find_links": f"upload:{wheels}"}, own_ports=True)
    _, results = provision(inv)
    assert results["Upload a directory | Wheels uploaded from the controller: files"]["success"] == 1
    assert artifacts.TORCH_WHEEL.name in host.ssh("ls /persist/uploaded-wheels").stdout
    assert host.ssh("/opt/triton/venv/bin/python -c 'import torch; print(torch.__version__)'").stdout.strip() == (
        f"{artifacts.TORCH_VERSION}+cpu"
    )
    assert_serves(host)
    # Hostile names in the uploaded directory: a directory "a\n" holding etc/passwd (its path, split
    # on newlines, reads /etc/passwd) and a link to a file outside. Both go; nothing outside is touched.
    host.ssh(
        "cd /persist/uploaded-wheels && mkdir -p 'a\n/etc' && echo x > 'a\n/etc/passwd'"
        ' && ln -s /etc/hostname evil.whl && echo y > "it\'s old.whl"'
    )
    before = host.ssh("sha256sum /etc/passwd /etc/hostname").stdout
    _, results = provision(inv)
    assert results["Upload a directory | Wheels uploaded from the controller: no extra files"]["success"] == 1
    assert host.ssh("sha256sum /etc/passwd /etc/hostname").stdout == before
    assert host.ssh("ls -A /persist/uploaded-wheels").stdout.split() == [artifacts.TORCH_WHEEL.name]


def test_dry_prints_the_plan_and_changes_nothing(host: TestHost, inv: Path, served: dict) -> None:
    host.ssh("rm -rf /persist/downloads")  # earlier tests cached the artifact on this host's /persist
    before = host.ssh(SNAPSHOT).stdout
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--dry")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    plan = out[out.index("== plan for tb1") :].splitlines()[:9]
    assert "  apt      libpython3.11 to add" in plan
    index = served["pip_index_url"]  # the mirror's PyPI stand-in (testbed/pypi_cache.py)
    assert f"  torch    torch==2.13.0+cpu from {index} and find-links {served['pip_find_links']}" in plan, plan
    size = artifacts.pytriton_wheel().stat().st_size  # what the mirror serves as the artifact
    want = f"  triton   2.51.0 sha256 21f063ff93bb..., to download ({size / (1 << 20):.1f} MiB) from http://"
    assert any(line.startswith(want) for line in plan), plan
    assert "  server   will start" in plan
    assert host.ssh(SNAPSHOT).stdout == before  # nothing on the host changed
    out, _ = provision(inv)  # the real run prints the same plan first, then does it
    assert "== plan for tb1 (nothing is changed before this)" in out
    out, _ = provision(inv)
    assert "  server   keeps running (pid " in out
    # installed from it: the artifact is not read again (nor hashed) while its install is complete
    assert "sha256 21f063ff93bb..., installed (its sha256 checked at the unpack; the cached copy is not read)" in out


def test_slow_downloads_show_their_progress_while_they_run(
    host: TestHost, served: dict, mirror, tmp_path: Path
) -> None:
    """A mirror at 12 MB/s: the Triton artifact (55 MB) and the torch wheel (192 MB) say how far they
    are (bytes of total, rate, time left) every few seconds in a run's normal output, while they run.
    These sources have no lock on the controller yet: the wheels come one step after the other."""
    host.ssh("rm -rf /persist/downloads /persist/wheels /persist/pip-cache /persist/venv-snapshots")
    rate = 12_000_000
    slow = {
        **served,
        "triton_pytriton_url": served["triton_pytriton_url"].replace(mirror.url, f"{mirror.url}/_slow/{rate}"),
        "pip_find_links": mirror.slow_url("wheels/", rate),
    }
    inv = write_inventory(tmp_path / "inv.py", [host], slow, own_ports=True)
    rc, timed = run_pyinfra_lines(inv, "deploy/provision.py", "-y")
    text = "\n".join(line for _, line in timed)
    assert rc == 0, text[-6000:]
    assert_serves(host)
    number = r"[\d.]+ MiB"

    def when(pattern: str) -> list[float]:
        return [t for t, line in timed if re.search(pattern, line)]

    artifact = when(rf"\[tb1\] .*download nvidia_pytriton\S*: {number} of {number} \(\d+%\), [\d.]+ MiB/s, \d+ s left")
    artifact_done = when(rf"download nvidia_pytriton\S*: {number} in [\d.]+ s")
    assert len(artifact) >= 2 and len(artifact_done) == 1, text[-6000:]
    wheel = when(rf"wheels \(torch\): torch-2\.13\.0\+cpu\S+ {number} of {number}, \d+ s left; in all {number}")
    wheel_done = when(rf"wheels \(torch\): {number} in [\d.]+ s")
    assert len(wheel) >= 3 and len(wheel_done) == 1, text[-6000:]
    # shown as they came, not at the step's end: the first line seconds before the closing one
    assert artifact_done[0] - artifact[0] >= 2 and wheel_done[0] - wheel[0] >= 4


def test_offline_names_what_the_caches_lack_before_any_change(host: TestHost, served: dict, tmp_path: Path) -> None:
    """offline with the Triton artifact, the wheels and a hub model missing from the caches: each is
    named with what to fetch, the host is refused and nothing on it changes."""
    provision(write_inventory(tmp_path / "online.py", [host], served, own_ports=True))  # apt's cache filled
    host.reset()
    aside = ("downloads", "wheels", "venv-snapshots")
    host.ssh(" && ".join(f"mv /persist/{d} /persist/{d}.aside" for d in aside))
    try:
        settings = {
            **served,
            "offline": True,
            "models": [{"name": "clf", "source": "hub:tiny/offline-clf@main", "task": "text-classification"}],
        }
        inv = write_inventory(tmp_path / "offline.py", [host], settings, own_ports=True)
        before = host.ssh(SNAPSHOT).stdout
        res = run_pyinfra(inv, "deploy/provision.py", "-y")
        out = res.stdout + res.stderr
        assert res.returncode != 0, out[-4000:]
        assert "== offline: the caches of tb1 lack 3 thing(s)" in out, out[-4000:]
        wheel = artifacts.pytriton_wheel().name
        fetch = rf"fetch: http://127\.0\.0\.1:\d+/pytriton/{re.escape(wheel)} \(sha256 {artifacts.PYTRITON.sha256}\)"
        assert re.search(rf"MISSING  Triton artifact: /persist/downloads/\S+ is not in the cache\n +{fetch}", out), out[
            -4000:
        ]
        assert re.search(r"MISSING  wheels: the wheelhouse /persist/wheels/[0-9a-f]{16} is not complete", out)
        assert "MISSING  model clf: tiny/offline-clf@main is not in the HuggingFace cache /persist/huggingface" in out
        assert "refusing to provision tb1, nothing was changed: offline, the caches lack" in out
        assert host.ssh(SNAPSHOT).stdout == before
    finally:
        host.ssh(" ; ".join(f"rm -rf /persist/{d} ; mv /persist/{d}.aside /persist/{d}" for d in aside))
