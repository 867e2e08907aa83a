"""Model changes on a serving host without a restart and without a failed request (explicit model control):
a model changed, added, removed, a reload that fails (rolled back), a new venv. A client polls every model
every 50 ms throughout each run; the test prints, per case, the run's time and the requests that failed."""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from testbed import TestHost, host_index, op_results, run_pyinfra, triton_ports, write_inventory
from tests import tiny_models
from tests.e2e.test_lifecycle import Poller, links
from tests.e2e.test_provision import assert_serves
from tests.e2e.test_serve import SEED_CONFIG, SEED_MODEL_PY, infer_json

MODELS = ("smoke", "clf", "clf_hub")


def model_list(path: Path, clf: str, extra: bool = False, more: list[dict] | None = None) -> list[dict]:
    models = [
        {"name": "clf", "source": f"path:{path / clf}", "task": "text-classification"},
        {"name": "clf_hub", "source": "hub:tiny/clf@main", "task": "text-classification"},
    ]
    if extra:
        models.append({"name": "clf_b", "source": f"path:{path / 'clf1'}", "task": "text-classification"})
    return models + (more or [])


@pytest.fixture(scope="module")
def serving(testbed_hosts: list[TestHost], served: dict, mirror, hub, tmp_path_factory) -> dict:
    """tb1 reset and serving smoke, a classifier uploaded from the controller and one from the hub."""
    host = testbed_hosts[0]
    host.reset()
    path = tmp_path_factory.mktemp("changes")
    tiny_models.make("classifier", path / "clf1", seed=1)
    tiny_models.make("classifier", path / "clf2", seed=2)
    shutil.copytree(path / "clf2", path / "clf_bad")
    (path / "clf_bad" / "config.json").write_text('{"model_type": "no-such-architecture"}')  # cannot load
    hub.add("tiny/clf", path / "clf1")
    settings = {**served, "hf_endpoint": hub.url}
    ctx = {"host": host, "dir": path, "settings": settings, "inv": path / "inv.py"}
    inventory(ctx, "clf1")
    res = run_pyinfra(ctx["inv"], "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
    return ctx


def inventory(ctx: dict, clf: str, extra: bool = False, more: list[dict] | None = None) -> None:
    models = model_list(ctx["dir"], clf, extra, more)
    write_inventory(ctx["inv"], [ctx["host"]], {**ctx["settings"], "models": models}, own_ports=True)


def server_pid(host: TestHost) -> str:
    return host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip()


def polled(ctx: dict, models: tuple[str, ...], *args: str) -> tuple[int, str, float, dict[str, Poller]]:
    """Provision while a client polls each model: (exit status, output, seconds of the run, the pollers)."""
    port = triton_ports(host_index(ctx["host"].name))["triton_http_port"]
    pollers = {m: Poller(port, m) for m in models}
    for p in pollers.values():
        p.start()
    deadline = time.monotonic() + 20
    while any(len(p.results) < 3 for p in pollers.values()):  # a few answers from each before the run
        if time.monotonic() > deadline:
            pytest.fail(f"no answers before the run: { {m: p.results[-3:] for m, p in pollers.items()} }")
        time.sleep(0.05)
    started = time.monotonic()
    print(f"\nrun started at {started:.1f}")
    res = run_pyinfra(ctx["inv"], "deploy/provision.py", "-y", *args)
    took = time.monotonic() - started
    time.sleep(0.5)  # the pollers' next round after the run: it must answer as well
    for p in pollers.values():
        p.stop()
    return res.returncode, res.stdout + res.stderr, took, pollers


def figures(case: str, took: float, pollers: dict[str, Poller]) -> str:
    counts = ", ".join(
        f"{m} {p.failed}/{len(p.results)} (slowest answer {p.slowest:.2f} s)" for m, p in pollers.items()
    )
    errors = "".join(f"\n  {m}: {e}" for m, p in pollers.items() for e in p.errors[:3])
    line = f"\n{case}: run {took:.1f} s; failed requests per model: {counts}{errors}"
    print(line)
    return line


def ready(host: TestHost, model: str) -> int:
    port = triton_ports(host_index(host.name))["triton_http_port"]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/models/{model}/ready", timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_changed_model_is_reloaded_while_every_model_answers(serving: dict) -> None:
    host = serving["host"]
    pid = server_pid(host)
    inventory(serving, "clf2")
    rc, out, took, pollers = polled(serving, MODELS)
    assert rc == 0, out[-5000:]
    figures("model changed (reloaded)", took, pollers)
    assert "models: reload clf; the server keeps running" in out, out[-4000:]
    assert "loaded clf through the repository API" in out
    assert "verified clf:" in out and "equal to in-process" in out  # it serves the new weights
    assert server_pid(host) == pid
    assert {m: p.failed for m, p in pollers.items()} == dict.fromkeys(MODELS, 0)
    assert host.ssh("grep -c ' clf$' /opt/triton/run/models.loaded").stdout.strip() == "1"
    again = run_pyinfra(serving["inv"], "deploy/provision.py", "-y")  # converged: nothing loaded again
    assert again.returncode == 0 and "keeps running" in again.stdout and "models:" not in again.stdout


def test_a_model_added_then_removed_changes_only_that_model(serving: dict) -> None:
    host = serving["host"]
    pid = server_pid(host)
    inventory(serving, "clf2", extra=True)
    rc, out, took, pollers = polled(serving, MODELS)
    assert rc == 0, out[-5000:]
    figures("model added", took, pollers)
    assert "models: load clf_b; the server keeps running" in out, out[-4000:]
    assert ready(host, "clf_b") == 200 and server_pid(host) == pid
    assert {m: p.failed for m, p in pollers.items()} == dict.fromkeys(MODELS, 0)
    inventory(serving, "clf2")
    rc, out, took, pollers = polled(serving, MODELS)
    assert rc == 0, out[-5000:]
    figures("model removed", took, pollers)
    assert "models: unload clf_b; the server keeps running" in out, out[-4000:]
    assert ready(host, "clf_b") != 200 and server_pid(host) == pid
    assert {m: p.failed for m, p in pollers.items()} == dict.fromkeys(MODELS, 0)


def test_a_reload_that_fails_keeps_the_old_model_serving_and_rolls_back(serving: dict) -> None:
    host = serving["host"]
    pid, before = server_pid(host), links(host)
    inventory(serving, "clf_bad")
    rc, out, took, pollers = polled(serving, MODELS)
    assert rc != 0, out[-5000:]
    figures("reload that fails (rolled back)", took, pollers)
    assert "model clf failed to load" in out and "no-such-architecture" in out, out[-5000:]
    assert "rolled back to what served before" in out, out[-3000:]
    assert links(host) == before and server_pid(host) == pid
    assert {m: p.failed for m, p in pollers.items()} == dict.fromkeys(MODELS, 0)
    inventory(serving, "clf2")  # as it was: nothing to do
    again = run_pyinfra(serving["inv"], "deploy/provision.py", "-y")
    assert again.returncode == 0 and "models:" not in again.stdout, (again.stdout + again.stderr)[-3000:]


# The seeds' text_classifier checking, as it loads, that it runs the transformers its requirements.txt pins
ENV_MODEL_PY = SEED_MODEL_PY.replace(
    "    def initialize(self, args):\n",
    "    def initialize(self, args):\n"
    "        import transformers\n\n"
    "        pinned = open(os.path.join(os.path.dirname(__file__), '..', 'requirements.txt')).read()\n"
    "        assert f'transformers=={transformers.__version__}' in pinned, (transformers.__version__, pinned)\n",
)


def env_folder(ctx: dict, transformers: str) -> Path:
    """The seeds' text_classifier whose requirements.txt pins a transformers the venv does not have."""
    folder = ctx["dir"] / f"seed-{transformers}" / "text_classifier"
    if not folder.exists():
        (folder / "1").mkdir(parents=True)
        (folder / "config.pbtxt").write_text(SEED_CONFIG)
        (folder / "1" / "model.py").write_text(ENV_MODEL_PY)
        (folder / "requirements.txt").write_text(f"transformers=={transformers}\n")
        shutil.copytree(ctx["dir"] / "clf1", folder / "1" / "weights")
        tokenizer_config = folder / "1" / "weights" / "tokenizer_config.json"
        config = json.loads(tokenizer_config.read_text())
        tokenizer_config.write_text(json.dumps({**config, "model_input_names": ["input_ids", "attention_mask"]}))
    return folder


def stub_site_packages(host: TestHost, model: str) -> set[str]:
    """Where the numpy that a model's stubs run comes from (their memory maps)."""
    return set(
        host.ssh(
            f"for p in $(pgrep -f '^[^ ]*/triton_python_backend_stub [^ ]*/{model}/'); do "
            "grep -o '/opt/triton/venv[^ ]*/lib/python3.11/site-packages/numpy' /proc/$p/maps | head -1; done"
        ).stdout.split()
    )


def test_a_model_whose_pins_clash_runs_in_its_own_environment_and_a_change_to_it_reloads_it_alone(
    serving: dict,
) -> None:
    """The seeds' text_classifier whose requirements.txt pins a transformers the venv's other models do not
    run: served from an environment of its own beside the venv (its stubs in it, the others' not), the
    server kept running and every model answering; a change to its pins reloads it alone."""
    host = serving["host"]
    inventory(serving, "clf2")  # as the tests before leave it (nothing to do), or when run alone
    assert run_pyinfra(serving["inv"], "deploy/provision.py", "-y").returncode == 0
    pid, before = server_pid(host), links(host)
    shared = stub_site_packages(host, "clf")
    for transformers, change in (("4.56.2", "load"), ("4.56.1", "reload")):
        seed = {"name": "text_classifier", "source": f"triton:{env_folder(serving, transformers)}"}
        inventory(serving, "clf2", more=[seed])
        refused = run_pyinfra(serving["inv"], "deploy/serve.py", "-y")  # serve builds no environment: provision does
        assert refused.returncode != 0 and "model text_classifier's environment): run deploy/provision.py" in (
            refused.stdout + refused.stderr
        ), (refused.stdout + refused.stderr)[-3000:]
        rc, out, took, pollers = polled(serving, MODELS)
        assert rc == 0, out[-5000:]
        figures(f"a model's own environment (transformers {transformers})", took, pollers)
        assert f"models: {change} text_classifier; the server keeps running" in out, out[-4000:]
        assert "Model text_classifier: its own environment" in out
        assert f"in a Python environment of its own: the venv's pins, and transformers=={transformers}\n" in out
        assert server_pid(host) == pid and links(host) == {**before, "models": links(host)["models"]}
        assert {m: p.failed for m, p in pollers.items()} == dict.fromkeys(MODELS, 0)
        env = host.ssh("grep -o 'string_value: \"[^\"]*' /opt/triton/models/text_classifier/config.pbtxt").stdout
        env_dir = env.strip().split('"')[-1]
        assert env_dir.startswith("/opt/triton/venv.model-envs/text_classifier-"), env
        assert stub_site_packages(host, "text_classifier") == {f"{env_dir}/lib/python3.11/site-packages/numpy"}
        assert stub_site_packages(host, "clf") == shared  # the others' stubs: the venv's, not reloaded
        # its model.py sets no bytecode folder (the provisioner's templates do): the environment's .pth does
        site = f"/persist/python-bytecode{env_dir}/lib/python3.11/site-packages"
        compiled = f"{site}/transformers/__init__.cpython-311.pyc"
        assert host.ssh(f"test -f {compiled}", check=False).returncode == 0, f"{compiled}: no bytecode written"
        port = triton_ports(host_index(host.name))["triton_http_port"]
        outputs = infer_json(port, "text_classifier", ["Good movie", "Bad movie"])
        assert outputs["LABEL"]["shape"] == [2, 1]
        served = run_pyinfra(serving["inv"], "deploy/serve.py", "-y")  # built now: serve finds nothing to do
        assert served.returncode == 0 and "models:" not in served.stdout, (served.stdout + served.stderr)[-3000:]
        shown = run_pyinfra(serving["inv"], "deploy/status.py", "-y").stdout  # status names each model's environment
        rows = {line.split()[1]: line for line in shown.splitlines() if line.startswith("  model ")}
        assert rows["text_classifier"].endswith(f"; in its own environment {env_dir}"), shown
        assert "environment" not in rows["clf"], shown
    versions = "import transformers as t; print(t.__version__)"
    venv_transformers = host.ssh(f"/opt/triton/bin/triton-env python3 -c '{versions}'").stdout.strip()
    assert venv_transformers == serving["settings"].get("transformers_version", "4.57.1")  # the venv's own
    again = run_pyinfra(serving["inv"], "deploy/provision.py", "-y")  # converged: nothing built or loaded again
    assert again.returncode == 0 and "models:" not in again.stdout, (again.stdout + again.stderr)[-3000:]
    assert "Model text_classifier: its own environment" not in changed_steps(again.stdout + again.stderr)
    host.reset()  # a notebook's reset: the root file system anew, /persist kept
    res = run_pyinfra(serving["inv"], "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    steps = changed_steps(res.stdout + res.stderr)  # unpacked from its snapshot: no wheel fetched, none installed
    assert "Model text_classifier: its own environment" in steps, res.stderr[-3000:]
    built = {f"Model text_classifier: its environment's {what}" for what in ("wheels", "packages")}
    assert not built & steps, res.stderr[-3000:]
    assert stub_site_packages(host, "text_classifier") == {f"{env_dir}/lib/python3.11/site-packages/numpy"}
    inventory(serving, "clf2")  # as the module's other tests expect
    res = run_pyinfra(serving["inv"], "deploy/provision.py", "-y")
    assert res.returncode == 0 and "models: unload text_classifier" in res.stdout, (res.stdout + res.stderr)[-3000:]


def changed_steps(output: str) -> set[str]:
    """The steps that changed something, from pyinfra's closing table."""
    return {name for name, row in op_results(output).items() if row["success"]}


def test_a_new_venv_reloads_every_model_onto_it_without_a_restart(serving: dict) -> None:
    host = serving["host"]
    pid, before = server_pid(host), links(host)
    rc, out, took, pollers = polled(serving, MODELS, "--data", "numpy_version=1.26.3")
    assert rc == 0, out[-5000:]
    figures("new venv (numpy 1.26.3): every model reloaded", took, pollers)
    assert "models: reload clf, clf_hub, smoke; the server keeps running" in out, out[-4000:]
    after = links(host)
    assert after["venv"] != before["venv"] and after["current"] == before["current"]
    assert server_pid(host) == pid
    assert {m: p.failed for m, p in pollers.items()} == dict.fromkeys(MODELS, 0)
    # every stub now runs the new venv's Python packages
    stubs = host.ssh("pgrep -f '^[^ ]*/triton_python_backend_stub ' | wc -l").stdout.strip()  # not this shell
    numpy = host.ssh(
        "for p in $(pgrep -f '^[^ ]*/triton_python_backend_stub '); do "
        "grep -o '/opt/triton/venv.versions/[^/]*/lib/python3.11/site-packages/numpy' /proc/$p/maps | head -1; done"
    ).stdout.split()
    assert int(stubs) >= 3 and len(numpy) == int(stubs), (stubs, numpy)
    assert set(numpy) == {f"{after['venv']}/lib/python3.11/site-packages/numpy"}
    assert_serves(host)


def post(host: TestHost, path: str, headers: dict[str, str]) -> tuple[int, str]:
    port = triton_ports(host_index(host.name))["triton_http_port"]
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", b"{}", headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_repository_api_refuses_a_request_without_the_key(serving: dict) -> None:
    host = serving["host"]
    for headers in ({}, {"triton-model-control": "guessed"}):
        status, body = post(host, "/v2/repository/models/clf/unload", headers)
        assert status == 403 and "This API is restricted, expecting header 'triton-model-control'" in body, body
    assert ready(host, "clf") == 200  # still loaded
    stat = host.ssh("stat -c '%U:%G %a' /etc/triton-provisioner/model-control.key").stdout.strip()
    assert stat == "root:triton-server 640"
    key = host.ssh("cat /etc/triton-provisioner/model-control.key").stdout.strip()
    assert len(key) == 64 and key not in host.ssh("cat /opt/triton/run/tritonserver.log").stdout
    status, body = post(host, "/v2/repository/index", {"triton-model-control": key})  # the key opens it
    assert status == 200 and {m["name"] for m in json.loads(body)} >= set(MODELS)
