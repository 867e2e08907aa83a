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
from testbed import TestHost, op_results, run_pyinfra, write_inventory
from tests import tiny_models
from tests.e2e import artifacts
from tests.e2e.test_audit import SNAPSHOT
from tests.e2e.test_provision import assert_serves, changed

# The trixie host runs beside tb1/tb2 on this machine's loopback: ports of its own.
PORTS = {"triton_http_port": 18900, "triton_grpc_port": 18901, "triton_metrics_port": 18902}


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


def test_debian13_without_a_standalone_python_is_refused_with_the_setting_that_fixes_it(
    trixie: TestHost, served: dict, tmp_path: Path
) -> None:
    report = tmp_path / "audit.json"
    inv = write_inventory(tmp_path / "inv.py", [trixie], served, own_ports=True, audit_report_path=str(report), **PORTS)
    rc, items = audit(inv, report)
    assert rc != 0
    python = items["python"]
    assert python["blocker"] and python["status"] == "incompatible"
    assert "the host has 3.13" in python["detail"] and "numpy<2" in python["detail"]
    assert "triton_python = standalone" in python["fix"] and "python_standalone_url" in python["fix"]
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "refusing to provision trixie1, nothing was changed" in out
    assert "[trixie1] BLOCKED, nothing changed: python:" in out


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
    """Debian 13 (3.13 only) with a 3.11 under /root: nothing the server's user can run fits, and no
    standalone is set: refused before any change, naming the interpreter, what blocks it and the fixes.
    (The module's later tests serve this host through the standalone with that 3.11 still there.)"""
    home_python = plant_home_python(trixie)
    before = trixie.ssh(SNAPSHOT).stdout
    report = tmp_path / "audit.json"
    inv = write_inventory(tmp_path / "inv.py", [trixie], served, own_ports=True, audit_report_path=str(report), **PORTS)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "refusing to provision trixie1, nothing was changed" in out
    assert f"triton-server can run none that fits (passed over {home_python}: triton-server cannot enter /root)" in out
    assert f"let triton-server reach {home_python} (it is blocked at /root)" in out
    assert "triton_python = standalone" in out
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
    assert "Fix: set triton_python = standalone" in out and "CPython 3.10" in out
    assert "apt-get install libpython3.10" not in out
    assert host.ssh("ls /opt/triton/versions").stdout.strip() == ""
    assert host.ssh("test -e /opt/triton/run/tritonserver.pid", check=False).returncode != 0
