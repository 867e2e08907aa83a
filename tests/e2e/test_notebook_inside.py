"""A notebook provisioned from inside itself, as the README's notebook recipe runs it: the project copied
onto the disk a reset wipes (where a notebook clones it), its controller set up there with
scripts/setup.sh, and `pyinfra inventories/local.py deploy/provision.py` run on the host itself (@local,
as root). The controller's state (the venv lock, the snapshot's digest) then lives on the persistent path
(controller_state_dir "auto"), so after a reset, which wipes the clone with everything else but /persist,
the same cells install everything from the caches: nothing fetched, the venv unpacked from its snapshot. The
state is sealed with the user's key (a Colab secret: config/state_seal.py), and the seals hold after the reset."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as thttp

import testbed
from testbed import TestHost, named_ports, op_results
from testbed.hosts import throttle
from testbed.runner import REPO
from tests import tiny_models
from tests.e2e.test_provision import assert_serves, changed

PORTS = named_ports(6)  # apart from every numbered host's and the other named ones (slots 0-5)
CLONE = "/content/tp"  # where the notebook clones the project: the disk a reset wipes
PERSIST = "/persist/ML team/triton"  # the notebook's Drive folder: a shared drive's name has spaces
DATA = "TRITON_PROVISIONER_DATA=/root/notebook.json"  # the notebook's settings (inventories/local.py reads them)
# the key that seals the controller's state on the drive (a Colab secret, given to each cell's run; a reset keeps it)
KEY = "notebook-secret-of-the-user"


def copied_in(host: TestHost) -> None:
    """The project's tracked files (as a clone holds them) onto the host, at CLONE."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    tar = subprocess.run(["tar", "--null", "-T", "-", "-c"], cwd=REPO, input=files, capture_output=True, check=True)
    argv = host.ssh_argv(f"mkdir -p {CLONE} && tar -x -C {CLONE}")
    subprocess.run(argv, input=tar.stdout, check=True, capture_output=True, timeout=120)


def inside(host: TestHost, deploy: str) -> subprocess.CompletedProcess:
    """A deploy of the README's first command, run in the clone on the host itself (@local)."""
    run = f"{DATA} TRITON_PROVISIONER_STATE_KEY={KEY} .venv/bin/pyinfra inventories/local.py {deploy} -y"
    return host.ssh(f"cd {CLONE} && {run}", check=False)


def cells(host: TestHost, settings: dict) -> tuple[str, float]:
    """The notebook's cells after the drive is mounted: the clone, the setup, the settings, the provision
    (the README's first command, run in the clone); the provision's output and its seconds."""
    copied_in(host)
    cache = shlex.quote(f"{PERSIST}/controller/pip-cache")
    setup = host.ssh(f"cd {CLONE} && PIP_CACHE_DIR={cache} bash scripts/setup.sh", check=False)
    assert setup.returncode == 0, (setup.stdout + setup.stderr)[-3000:]
    host.ssh(f"cat > /root/notebook.json <<'EOF'\n{json.dumps(settings)}\nEOF")
    started = time.monotonic()
    run = inside(host, "deploy/provision.py")
    seconds = time.monotonic() - started
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    return out, seconds


def classified(port: int, text: str) -> str:
    """The hub model's label for text, over HTTP."""
    client = thttp.InferenceServerClient(f"127.0.0.1:{port}")
    x = thttp.InferInput("TEXT", [1, 1], "BYTES")
    x.set_data_from_numpy(np.array([[text.encode()]], dtype=np.object_))
    return client.infer("clf_hub", [x]).as_numpy("LABEL").ravel()[0].decode()


def test_a_notebook_reset_is_reprovisioned_from_inside_with_nothing_downloaded(
    served: dict, mirror, hub, tmp_path: Path
) -> None:
    tiny_models.make("classifier", tmp_path / "clf", seed=5)
    hub.add("nb/clf", tmp_path / "clf")
    host = TestHost(testbed.up(1, prefix="nb")[0])
    try:
        throttle(host.name, 1000, 0, drive=True)  # /persist as Colab's Drive presents it (testbed/throttle.py)
        assert host.ssh("ln -s x /persist/link", check=False).returncode != 0  # the drive's own semantics
        host.ssh("mkdir -p /persist/probe && chmod 755 /persist/probe")
        assert host.ssh("stat -c %a /persist/probe").stdout.strip() == "700"
        # the test bed's mirror for Triton and torch; the lock where a notebook keeps it (the default)
        settings = {k: v for k, v in served.items() if k != "venv_lock_dir"}
        # the notebook's cells: the drive admits root alone, so the server runs as root (README)
        settings.update({"persist_dir": PERSIST, "triton_user": "root", **PORTS, "hf_endpoint": hub.url})
        settings["models"] = [{"name": "clf_hub", "source": "hub:nb/clf@main", "task": "text-classification"}]
        out, cold_s = cells(host, settings)
        assert op_results(out)["apt runtime libraries"]["success"] == 1, out[-6000:]  # libpython3.11, on the drive
        label = classified(PORTS["triton_http_port"], "a fine day")
        snapshots = shlex.quote(f"{PERSIST}/huggingface/hub/models--nb--clf/snapshots")
        kinds = host.ssh(f"find {snapshots} -mindepth 2 -printf '%y\\n' | sort | uniq -c").stdout.split()
        assert kinds[1::2] == ["f"] and int(kinds[0]) >= 3, kinds  # the files themselves, no link
        assert f"kept on the controller: {PERSIST}/controller/venv-locks/" in out, out[-6000:]
        assert "trust    the controller's locks and digests on the persistent path" in out and "are sealed" in out
        locks = shlex.quote(f"{PERSIST}/controller/venv-locks")
        sealed = host.ssh(f"cd {locks} && find . -name '*.hmac' | sort").stdout.split()
        assert any(p.endswith(".lock.hmac") for p in sealed) and any("/snapshots/" in p for p in sealed), sealed
        assert KEY not in out
        assert_serves(host, PORTS)
        audit = inside(host, "deploy/audit.py")  # names the drive, and what the provision did about it
        said = next((line for line in audit.stdout.splitlines() if "persist drive" in line), audit.stdout[-3000:])
        assert "Google Drive as Colab mounts it (fuse.drive), which takes no symbolic or hard links" in said, said
        assert host.ssh(f"stat -c %a {shlex.quote(PERSIST)}/controller").stdout.strip() == "700"

        host.reset()  # the notebook's runtime reset: the clone and the controller's venv gone, /persist kept
        assert host.ssh(f"test -e {CLONE}", check=False).returncode == 1
        since, hub_files = len(mirror.requests()), len(hub.fetched("nb/clf"))
        out, reset_s = cells(host, settings)
        assert len(hub.fetched("nb/clf")) == hub_files  # the hub model from the drive's cache
        assert classified(PORTS["triton_http_port"], "a fine day") == label
        results = op_results(out)
        plan = "\n".join(out[out.index("== plan for @local") :].splitlines()[:14])
        assert mirror.requests()[since:] == [], f"{mirror.requests()[since:]}\n{plan}"  # neither Triton nor torch
        assert results["Wheels in the persistent wheelhouse"]["no_change"] == 1
        assert results["venv packages"]["no_change"] == 1  # unpacked from the snapshot: pip and uv did not run
        assert results["venv snapshot on the persistent path"]["no_change"] == 1
        assert_serves(host, PORTS)
        again = inside(host, "deploy/provision.py")  # the cell run once more: nothing changes
        assert again.returncode == 0 and changed(op_results(again.stdout + again.stderr)) == {}, again.stdout[-4000:]
        # the last cells: what serves, the server's log, stop
        status = inside(host, "deploy/status.py")
        assert "== status of @local: OK" in status.stdout, (status.stdout + status.stderr)[-3000:]
        log = host.ssh("cat /opt/triton/run/tritonserver.log").stdout  # the file the log cell shows
        assert f"Started HTTPService at 127.0.0.1:{PORTS['triton_http_port']}" in log, log[-3000:]
        stop = inside(host, "deploy/stop.py")
        assert stop.returncode == 0, (stop.stdout + stop.stderr)[-3000:]
        with pytest.raises(OSError):  # nothing answers there any more
            urllib.request.urlopen(f"http://127.0.0.1:{PORTS['triton_http_port']}/v2/health/ready", timeout=5)
        print(f"\nnotebook from inside: cold provision {cold_s:.1f} s; after a reset {reset_s:.1f} s")
    finally:
        testbed.remove(host.name)
