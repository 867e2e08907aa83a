"""Hosts whose own Python this Triton build cannot use (Debian 13: Python 3.13 only, no numpy<2
wheels for the 2.51 stub) served through a standalone CPython; a Python first on PATH that the
server's user cannot run (pyenv's under /root) passed over; a stub for the wrong Python named
before anything starts."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as thttp

import testbed
from testbed import TestHost, named_ports, op_results, run_pyinfra, write_inventory
from tests import tiny_models
from tests.e2e import artifacts
from tests.e2e.test_audit import SNAPSHOT
from tests.e2e.test_provision import assert_serves, changed

# The trixie host runs beside tb1/tb2 on this machine's loopback: ports of its own.
PORTS = named_ports(0)  # apart from every numbered host's (testbed/ports.py)


@pytest.fixture(scope="module")
def trixie() -> Iterator[TestHost]:
    """A fresh Debian 13 host (Python 3.13 only) for this module; removed at its end."""
    made = testbed.up(1, release="trixie", prefix="trixie")
    try:
        yield TestHost(made[0])
    finally:
        testbed.remove(made[0].name)


@pytest.fixture(scope="module")
def standalone(mirror) -> dict:
    """Settings naming the standalone CPython stand-in on the local mirror."""
    archive, version = artifacts.standalone_python()
    url, sha = mirror.place(archive, "python/" + archive.name)
    return {"python_standalone_url": url, "python_standalone_sha256": sha, "python_standalone_version": version}


def audit(inv: Path, report: Path) -> tuple[int, dict[str, dict]]:
    res = run_pyinfra(inv, "deploy/audit.py", "-y")
    items = json.loads(report.read_text())
    host_items = next(iter(items["hosts"].values()))["items"]
    return res.returncode, {i["name"]: i for i in host_items}


def test_debian13_with_no_python_settings_plans_a_cpython_that_uv_installs(
    trixie: TestHost, served: dict, tmp_path: Path
) -> None:
    """No Python setting at all on a Python-3.13-only host: the audit and the plan name a standalone
    CPython 3.12 (the newest the 2.51 stub takes) that the pinned uv installs; nothing is changed."""
    report = tmp_path / "audit.json"
    inv = write_inventory(tmp_path / "inv.py", [trixie], served, own_ports=True, audit_report_path=str(report), **PORTS)
    before = trixie.ssh(SNAPSHOT).stdout
    _, items = audit(inv, report)
    python = items["python"]
    assert python["status"] == "missing" and not python["blocker"]
    assert "the host has 3.13" in python["detail"] and "numpy<2" in python["detail"]
    assert python["detail"].startswith("standalone CPython 3.12 (the newest 3.12.x uv 0.13.9 knows)")
    assert "installed by uv 0.13.9 from python-build-standalone" in python["detail"]
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--dry")
    out = res.stdout + res.stderr
    uv_python = "/opt/triton/python/uv/cpython-3.12-linux-x86_64-gnu/bin/python3.12"
    assert f"python   3.12 at {uv_python} (a standalone CPython uv installs)" in out
    assert trixie.ssh(SNAPSHOT).stdout == before


def plant_home_python(h: TestHost) -> str:
    """A pyenv-like CPython under /root (0700): a relocatable CPython (the standalone stand-in, made from
    this controller's) in /root/.pyenv/versions, linked first on PATH as /usr/local/bin/python3.X, as a
    `pyenv global` plus a link, or `make altinstall` into a home, leaves it. Returns the interpreter."""
    archive, version = artifacts.standalone_python()
    minor = version.rsplit(".", 1)[0]
    prefix = f"/root/.pyenv/versions/{version}"
    script = (
        f"mkdir -p {prefix} && tar -xzf - -C {prefix} --strip-components=1 && chmod 700 /root && "
        f"ln -sfn {prefix}/bin/python{minor} /usr/local/bin/python{minor}"
    )
    with archive.open("rb") as data:
        subprocess.run(h.ssh_argv(script), stdin=data, check=True, capture_output=True, timeout=120)
    assert h.ssh(f"command -v python{minor}").stdout.strip() == f"/usr/local/bin/python{minor}"
    return f"{prefix}/bin/python{minor}"


def test_a_python_first_on_path_that_the_server_user_cannot_run_is_passed_over(
    host: TestHost, served: dict, tmp_path: Path
) -> None:
    """Debian 12 with a pyenv-like 3.11 under /root first on PATH and Debian's 3.11 beside it: the venv is
    made from Debian's, and the server, as triton-server, serves (the README's first command failed on
    such a machine: the stub could not see a venv whose Python it could not run)."""
    home_python = plant_home_python(host)
    report = tmp_path / "audit.json"
    inv = write_inventory(tmp_path / "inv.py", [host], served, own_ports=True, audit_report_path=str(report))
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    assert "python   3.11 at /usr/bin/python3.11 (the host's)" in out
    assert f"passed over {home_python} (triton-server cannot enter /root)" in out
    assert "home = /usr/bin" in host.ssh("cat /opt/triton/venv/pyvenv.cfg").stdout
    pid = host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip()
    stub_users = host.ssh(f"ps -o user= --ppid {pid}").stdout.split()
    assert host.ssh(f"ps -o user= -p {pid}").stdout.strip() == "triton-server"
    assert stub_users and set(stub_users) == {"triton-server"}  # each model's stub, on the venv
    assert_serves(host)
    rc, items = audit(inv, report)
    assert rc == 0 and items["python"]["detail"].startswith("Python 3.11.2 at /usr/bin/python3.11")
    assert f"passed over {home_python}: triton-server cannot enter /root" in items["python"]["detail"]


def test_a_host_whose_only_fitting_python_the_server_user_cannot_run_is_refused_unchanged(
    trixie: TestHost, served: dict, tmp_path: Path
) -> None:
    """Debian 13 (3.13 only) with a 3.11 under /root and triton_python = 3.11: nothing the server's user
    can run fits: refused before any change, naming the interpreter, what blocks it and the fixes. (With
    auto the module's later tests serve this host through a standalone, that 3.11 still there.)"""
    home_python = plant_home_python(trixie)
    before = trixie.ssh(SNAPSHOT).stdout
    report = tmp_path / "audit.json"
    inv = write_inventory(tmp_path / "inv.py", [trixie], served, own_ports=True, audit_report_path=str(report), **PORTS)
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--data", 'triton_python="3.11"')
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "refusing to provision trixie1, nothing was changed" in out
    assert f"triton-server can run none that fits (passed over {home_python}: triton-server cannot enter /root)" in out
    assert f"let triton-server reach {home_python} (it is blocked at /root)" in out
    assert trixie.ssh(SNAPSHOT).stdout == before


@pytest.fixture(scope="module")
def trixie_served(trixie: TestHost, served: dict, standalone: dict, tmp_path_factory) -> dict:
    """The Debian 13 host provisioned with the standalone Python and a real (tiny, torch) classifier."""
    tmp = tmp_path_factory.mktemp("trixie")
    tiny_models.make("classifier", tmp / "clf", seed=3)
    models = [{"name": "clf", "source": f"path:{tmp / 'clf'}", "task": "text-classification"}]
    report = tmp / "audit.json"
    settings = {**served, **standalone, "models": models}
    inv = write_inventory(tmp / "inv.py", [trixie], settings, own_ports=True, audit_report_path=str(report), **PORTS)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-8000:]
    home = f"/opt/triton/python/{standalone['python_standalone_version']}-{standalone['python_standalone_sha256'][:12]}"
    return {"host": trixie, "inv": inv, "report": report, "out": out, "home": home, **standalone}


def test_debian13_serves_a_real_model_through_a_standalone_python_and_a_rerun_changes_nothing(
    trixie_served: dict,
) -> None:
    trixie, inv, out, home = trixie_served["host"], trixie_served["inv"], trixie_served["out"], trixie_served["home"]
    assert op_results(out)["Standalone Python unpacked"]["success"] == 1
    # the proof: the classifier answered 1 and 8 texts over HTTP and gRPC, equal to in-process
    assert "verified clf: 1 and 8 texts over HTTP and gRPC" in out and "equal to in-process" in out
    cfg = trixie.ssh("cat /opt/triton/venv/pyvenv.cfg").stdout
    assert f"home = {home}/bin" in cfg
    # the server's python backend stub runs on the standalone libpython, not on Debian's 3.13
    pid = trixie.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip()
    maps = trixie.ssh(f"cat /proc/$(pgrep -P {pid} -f triton_python_backend_stub | head -n 1)/maps").stdout
    assert f"{home}/lib/libpython3.11.so.1.0" in maps
    http = thttp.InferenceServerClient(f"127.0.0.1:{PORTS['triton_http_port']}")
    x = thttp.InferInput("TEXT", [2, 1], "BYTES")
    x.set_data_from_numpy(np.array([[b"good film"], [b"bad film"]], dtype=np.object_))
    logits = http.infer("clf", [x]).as_numpy("LOGITS")
    assert logits.shape == (2, 2) and np.isfinite(logits).all()
    rc, items = audit(inv, trixie_served["report"])
    assert rc == 0, [i for i in items.values() if i["status"] != "ok"]
    assert items["python"]["detail"].startswith(f"standalone CPython {trixie_served['python_standalone_version']}")
    assert "no host Python fits" in items["python"]["detail"]
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
    assert changed(op_results(res.stdout + res.stderr)) == {}


def test_a_stub_that_cannot_load_stops_the_wait_at_once_with_its_cause(trixie_served: dict) -> None:
    trixie, inv, home = trixie_served["host"], trixie_served["inv"], trixie_served["home"]
    # the stub finds the standalone libpython only through LD_LIBRARY_PATH (env.sh): take it out
    trixie.ssh(f"sed -i 's#:{home}/lib##' /opt/triton/env.sh && kill -9 $(cat /opt/triton/run/tritonserver.pid)")
    assert f"{home}/lib" not in trixie.ssh("cat /opt/triton/env.sh").stdout
    res = run_pyinfra(inv, "deploy/serve.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    # the wait stops at the first fatal log line, or at the server's exit where it is quicker
    stopped = ("cannot become ready; stopped waiting at this log line", "exited while starting. Server log:")
    assert any(s in out for s in stopped), out[-4000:]
    # Triton's trial run of the stub fails; as the server's own user it then says "execute permission"
    assert "Failed to give execute permission to triton_python_backend_stub" in out
    assert "=> cause: the python backend stub does not run" in out and "cannot load its libpython" in out
    assert "was not ready after" not in out  # not the readiness timeout
    assert "apt-get install libpython3.11" not in out  # Debian 13 has no such package
    res = run_pyinfra(inv, "deploy/provision.py", "-y")  # env.sh rewritten: serving again
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert "verified clf" in res.stdout + res.stderr


def test_debian13_is_served_by_a_cpython_uv_installs_and_after_a_reset_offline(
    trixie: TestHost, served: dict, mirror, tmp_path: Path
) -> None:
    """Debian 13, reset, with no Python settings but where the CPythons come from (a downloads list of
    uv's format on the mirror: the stand-in, as a company mirror would serve builds) and which minor (the
    test bed's only CPU torch wheel is for 3.11; a real host takes 3.12 by default): the real uv installs
    it, checking its sha256, and the host serves; a rerun changes nothing; after a reset an offline run
    installs it again from the archive uv cached on /persist."""
    list_url, version = artifacts.uv_downloads_list(mirror)
    wheel = artifacts.uv_wheel()
    uv_url, _ = mirror.place(wheel, "uv/" + wheel.name)
    trixie.reset()
    settings = {
        **served,
        "python_downloads_json_url": list_url,
        "uv_wheel_url": uv_url,
        "python_standalone_version": version.rsplit(".", 1)[0],
    }
    report = tmp_path / "audit.json"
    inv = write_inventory(
        tmp_path / "inv.py", [trixie], settings, own_ports=True, audit_report_path=str(report), **PORTS
    )
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-8000:]
    assert op_results(out)["Standalone Python installed by uv"]["success"] == 1
    home = "/opt/triton/python/uv/cpython-3.11-linux-x86_64-gnu"
    assert f"CPython {version} at /opt/triton/python/uv/cpython-3.11-linux-x86_64-gnu (uv 0.13.9)" in out
    assert f"home = {home}/bin" in trixie.ssh("cat /opt/triton/venv/pyvenv.cfg").stdout
    assert "verified smoke" in out or "ready: Triton pid" in out
    # nothing in uv's tree is writable by group or others (its lock file is, as uv makes it)
    assert trixie.ssh("find /opt/triton/python/uv ! -type l -perm /022 | head -n 3").stdout == ""
    assert (
        trixie.ssh("ls /persist/python-downloads").stdout.strip().endswith(Path(artifacts.standalone_python()[0]).name)
    )
    http = thttp.InferenceServerClient(f"127.0.0.1:{PORTS['triton_http_port']}")
    assert http.is_model_ready("smoke")
    again = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert again.returncode == 0 and changed(op_results(again.stdout + again.stderr)) == {}
    # a reset, then offline: uv installs from its cached archive (checked again), the list from its cache
    trixie.reset()
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--data", "offline=True")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-8000:]
    assert op_results(out)["Standalone Python installed by uv"]["success"] == 1
    assert http.is_model_ready("smoke")


def test_a_cached_cpython_archive_altered_on_the_persistent_path_is_refused_by_uv(
    trixie: TestHost, served: dict, mirror, tmp_path: Path
) -> None:
    """The archive uv cached on /persist, altered (one byte more): after a reset uv refuses it (its sha256
    differs from the list's) and the run fails before anything runs from it."""
    list_url, version = artifacts.uv_downloads_list(mirror)
    wheel = artifacts.uv_wheel()
    uv_url, _ = mirror.place(wheel, "uv/" + wheel.name)
    settings = {**served, "python_downloads_json_url": list_url, "uv_wheel_url": uv_url}
    settings["python_standalone_version"] = version.rsplit(".", 1)[0]
    inv = write_inventory(tmp_path / "inv.py", [trixie], settings, own_ports=True, **PORTS)
    trixie.reset()
    trixie.ssh('for f in /persist/python-downloads/*cpython-*; do printf x >> "$f"; done')
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--data", "offline=True")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "Hash mismatch" in out or "hash mismatch" in out.lower(), out[-4000:]
    assert trixie.ssh("test -e /opt/triton/python/uv/.provisioner-3.11", check=False).returncode != 0


def test_a_tarball_whose_stub_is_for_another_python_is_refused_before_anything_starts(
    host: TestHost, served: dict, mirror, tmp_path: Path
) -> None:
    url, sha = mirror.place(artifacts.triton_tarball_one_stub("3.10"), "tarballs/stub-3.10-only.tar")
    settings = {
        **served,
        "triton_source": "tarball",
        "triton_tarball_url": url,
        "triton_tarball_sha256": sha,
        "triton_tarball_strip_components": 1,
    }
    report = tmp_path / "audit.json"
    inv = write_inventory(tmp_path / "inv.py", [host], settings, own_ports=True, audit_report_path=str(report))
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "this build's python backend stub is for Python 3.10 (it links libpython3.10); the venv is 3.11" in out
    # Debian 12 ships no Python 3.10: the fix is one that exists there
    assert 'Fix: set triton_python = standalone with python_standalone_version = "3.10" (uv installs it)' in out
    assert "apt-get install libpython3.10" not in out
    assert host.ssh("ls /opt/triton/versions").stdout.strip() == ""
    assert host.ssh("test -e /opt/triton/run/tritonserver.pid", check=False).returncode != 0
