"""Serving HuggingFace models on a provisioned host: batches, answers equal to in-process,
restart only on change, recovery of a killed server, a held port, a model that fails to load."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as tgrpc
import tritonclient.http as thttp

import remote
from config import triton_model
from testbed import TestHost, host_index, named_ports, op_results, run_pyinfra, triton_ports, write_inventory
from tests import tiny_models

TEXTS = [
    "a fine day",
    "terrible awful",
    "ok",
    "triton without docker",
    "the quick brown fox",
    "good movie",
    "bad film",
    "one more sentence to make eight",
]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    tiny_models.make("classifier", root / "clf", seed=1)
    tiny_models.make("embedder", root / "emb", seed=2)
    tiny_models.make("generator", root / "gen", seed=4)
    broken = root / "broken"
    shutil.copytree(root / "clf", broken)
    (broken / "config.json").write_text('{"model_type": "distilbert", "dim": "not a number"')  # truncated JSON
    return root


def models_setting(models_dir: Path, **emb_overrides) -> list[dict]:
    return [
        {"name": "clf", "source": f"path:{models_dir / 'clf'}", "task": "text-classification"},
        {
            "name": "emb",
            "source": f"path:{models_dir / 'emb'}",
            "task": "feature-extraction",
            "normalize": True,
            **emb_overrides,
        },
        {"name": "clf_hub", "source": "hub:tiny/clf@main", "task": "text-classification", "dynamic_batching": False},
        {"name": "gen", "source": f"path:{models_dir / 'gen'}", "task": "text-generation", "max_new_tokens": 4},
    ]


@pytest.fixture(scope="module")
def served_host(testbed_hosts: list[TestHost], served: dict, models_dir: Path, hub, tmp_path_factory) -> dict:
    """tb1 reset, provisioned with three models (one from the hub stand-in): the state the tests go on from."""
    host = testbed_hosts[0]
    host.reset()
    hub.add("tiny/clf", models_dir / "clf")
    path = tmp_path_factory.mktemp("inv")
    settings = {**served, "models": models_setting(models_dir), "hf_endpoint": hub.url}
    inv = write_inventory(path / "inv.py", [host], settings, own_ports=True)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-8000:]
    return {"host": host, "inv": inv, "dir": path, "log": res.stdout + res.stderr}


def infer(host: TestHost, model: str, texts: list[str], grpc: bool = False) -> dict[str, np.ndarray]:
    ports = triton_ports(host_index(host.name))
    mod = tgrpc if grpc else thttp
    url = f"127.0.0.1:{ports['triton_grpc_port' if grpc else 'triton_http_port']}"
    client = mod.InferenceServerClient(url)
    x = mod.InferInput("TEXT", [len(texts), 1], "BYTES")
    x.set_data_from_numpy(np.array([[t.encode()] for t in texts], dtype=np.object_))
    res = client.infer(model, [x])
    classifier = ["LABEL", "SCORE", "LOGITS"]
    outputs = {"clf": classifier, "clf_hub": classifier, "clf_full": classifier, "emb": ["EMBEDDING"]}
    return {name: res.as_numpy(name) for name in outputs[model]}


IN_PROCESS = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("p", "/opt/triton/models/" + sys.argv[1] + "/1/hf_pipeline.py")
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
pipe = p.Pipeline(sys.argv[2], sys.argv[3], normalize=sys.argv[4] == "1")
out = pipe.run(json.loads(sys.argv[5]))
print(json.dumps({k: [[x.decode() if isinstance(x, bytes) else float(x) for x in row] for row in v.tolist()]
                  for k, v in out.items()}))
"""


def in_process(host: TestHost, model: str, task: str, source: str, normalize: bool) -> dict:
    """The same model run in-process in the host's venv (through the launcher), as JSON."""
    import shlex

    args = " ".join(shlex.quote(a) for a in [model, task, source, "1" if normalize else "0", json.dumps(TEXTS)])
    out = host.ssh(f"/opt/triton/bin/triton-env python3 -c {shlex.quote(IN_PROCESS)} {args} 2>/dev/null").stdout
    return json.loads(out.strip().splitlines()[-1])


def infer_json(port: int, model: str, texts: list[str]) -> dict[str, dict]:
    """The model called as the seeds call it: HTTP and JSON, a batch of texts; its outputs by name."""
    payload = {"inputs": [{"name": "TEXT", "shape": [len(texts), 1], "datatype": "BYTES", "data": texts}]}
    url = f"http://127.0.0.1:{port}/v2/models/{model}/infer"
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as resp:
        return {o["name"]: o for o in json.load(resp)["outputs"]}


def server_pid(host: TestHost) -> int:
    return int(host.ssh("cat /opt/triton/run/tritonserver.pid").stdout)


def serve(ctx: dict, *args: str, inv: Path | None = None):
    res = run_pyinfra(inv or ctx["inv"], "deploy/serve.py", "-y", *args)
    return res, op_results(res.stdout + res.stderr)


def served_source(host: TestHost, model: str) -> str:
    """The source the config.pbtxt names (a path: model's version folder: path:/persist/models/NAME/DIGEST)."""
    pattern = 's/^parameters: { key: "source", value: { string_value: "\\(.*\\)" } }$/\\1/p'
    source = host.ssh(f"sed -n '{pattern}' /opt/triton/models/{model}/config.pbtxt").stdout.strip()
    assert re.fullmatch(rf"path:/persist/models/{model}/[0-9a-f]{{16}}", source), source
    return source


def test_models_answer_batches_of_8_equal_to_in_process(served_host: dict) -> None:
    host = served_host["host"]
    assert "verified clf: 1 and 8 texts over HTTP and gRPC" in served_host["log"]
    assert "equal to in-process" in served_host["log"]
    clf = infer(host, "clf", TEXTS)
    assert clf["LABEL"].shape == (8, 1) and clf["SCORE"].dtype == np.float32 and clf["LOGITS"].shape == (8, 2)
    assert set(clf["LABEL"].ravel()) <= {b"POSITIVE", b"NEGATIVE"}
    emb = infer(host, "emb", TEXTS, grpc=True)
    assert emb["EMBEDDING"].shape == (8, 32)
    assert np.allclose(np.linalg.norm(emb["EMBEDDING"], axis=1), 1.0, atol=1e-5)  # normalize: true
    local_clf = in_process(host, "clf", "text-classification", served_source(host, "clf"), False)
    assert [x.decode() for x in clf["LABEL"].ravel()] == [r[0] for r in local_clf["LABEL"]]
    assert np.allclose(clf["LOGITS"], np.array(local_clf["LOGITS"]), atol=1e-4)
    local_emb = in_process(host, "emb", "feature-extraction", served_source(host, "emb"), True)
    assert np.allclose(emb["EMBEDDING"], np.array(local_emb["EMBEDDING"]), atol=1e-4)
    hub = infer(host, "clf_hub", TEXTS)  # the same weights, loaded through huggingface_hub's cache
    assert np.allclose(hub["LOGITS"], clf["LOGITS"], atol=1e-5)


README = Path(__file__).parents[2] / "README.md"
# The README's examples name these models; the served host's are clf, emb and gen.
README_MODELS = {"sentiment": "clf", "embedder": "emb", "writer": "gen"}


def readme_examples() -> list[tuple[str, str, str]]:
    """(language, code, what it prints) of each example in the README's "Calling what is served", and the
    call of the first screen (the bash block after the two commands)."""
    text = README.read_text()
    section = text.split("### Calling what is served", 1)[1].split("\n### ", 1)[0]
    first_screen = text.split("\n## Use", 1)[0].split("```bash\n", 2)[2]  # past the two commands' block
    blocks = re.findall(r"```(bash|python)\n(.*?)```", "```bash\n" + first_screen + section, re.DOTALL)
    examples = []
    for language, code in blocks:
        prints = re.search(r"^# prints: (.+)$", code, re.MULTILINE)
        assert prints, f"an example without '# prints:': {code[:80]}"
        examples.append((language, code, prints.group(1)))
    return examples


def test_the_readme_examples_run_against_served_models(served_host: dict) -> None:
    """Each request in the README, run as written (ports and model names mapped to this host's) against
    the served models: it answers, with the outputs and shapes the README says."""
    ports = triton_ports(host_index(served_host["host"].name))
    examples = readme_examples()
    assert {lang for lang, _, _ in examples} == {"bash", "python"} and len(examples) >= 6
    notebook = json.loads((README.parent / "notebooks" / "colab.ipynb").read_text())
    sources = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    call = next(source for source in sources if "/v2/models/" in source)  # the notebook's call of what it served
    examples.append(("python", call, "{'LABEL': ["))
    for language, code, prints in examples:
        for name, served in README_MODELS.items():
            code, prints = code.replace(name, served), prints.replace(name, served)
        for label, default in (("http", 8000), ("grpc", 8001), ("metrics", 8002)):
            code = code.replace(f"localhost:{default}", f"127.0.0.1:{ports[f'triton_{label}_port']}")
        argv = ["bash", "-c", code] if language == "bash" else [sys.executable, "-c", code]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, (code, res.stdout, res.stderr)
        assert prints in res.stdout, (code, res.stdout[-2000:])


def test_rerun_without_change_keeps_the_server(served_host: dict) -> None:
    host = served_host["host"]
    pid = server_pid(host)
    res, results = serve(served_host)
    assert res.returncode == 0, res.stderr[-3000:]
    assert all(r["success"] == 0 for name, r in results.items() if name != "Grand total"), results
    assert server_pid(host) == pid


def test_a_users_own_deploy_installs_triton_with_the_packaged_deploy_then_runs_its_steps(served_host: dict) -> None:
    """examples/deploy_with_triton.py as a user runs it: triton_provisioned(...) with a setting as a plain
    argument (the rest from the inventory), then the user's own steps against what it serves."""
    host = served_host["host"]
    pid = server_pid(host)
    res = run_pyinfra(served_host["inv"], "examples/deploy_with_triton.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    results = op_results(out)
    assert results["Triton provisioned | Triton server running, ready and proven"]["success"] == 0, results
    assert results["My app: Triton answers it"]["success"] == 1, results
    answer = json.loads(host.ssh("cat /var/lib/my-app/ask-triton.json").stdout)
    outputs = {o["name"]: o["data"] for o in answer["outputs"]}
    assert outputs == {"LENGTH": [5], "UPPER": ["HELLO"]}
    assert server_pid(host) == pid  # the packaged deploy on a provisioned host changes nothing it serves
    # it did not ask for the one-round-trip read (run/batch.py): its hosts are read as pyinfra reads them
    assert "read the host:" not in out  # this project's deploys print it (test_provision.py reads it)


def test_the_server_and_its_stubs_run_as_the_server_user_who_cannot_write_etc(served_host: dict) -> None:
    host = served_host["host"]
    pid = server_pid(host)
    stubs = host.ssh("pgrep -f '[t]riton_python_backend_stub '").stdout.split()
    users = {host.ssh(f"ps -o user= -p {p}").stdout.strip() for p in [pid, *stubs]}
    assert len(stubs) >= 3 and users == {"triton-server"}  # smoke, clf, emb
    assert "NoNewPrivs:\t1" in host.ssh(f"cat /proc/{pid}/status").stdout
    as_server = f"nsenter -t {pid} -S $(stat -c %u /proc/{pid}) -G $(stat -c %g /proc/{pid})"
    denied = host.ssh(f"{as_server} sh -c 'echo x > /etc/triton-was-here'", check=False)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    assert host.ssh("stat -c %U /opt/triton/run /persist/huggingface/hub").stdout.split() == ["root", "triton-server"]
    # nor plant a link where root writes (the log, its rotation, the pid): those writes would follow it
    planted = host.ssh(f"{as_server} ln -s /etc/passwd /opt/triton/run/tritonserver.log.1", check=False)
    assert planted.returncode != 0 and "Permission denied" in planted.stderr


def test_every_stub_runs_with_openmp_threads_that_sleep_between_requests(served_host: dict) -> None:
    """The server's launcher sets OMP_WAIT_POLICY=PASSIVE and each model's stub inherits it: torch's idle
    threads sleep instead of spinning a core each (triton_omp_wait_policy; BENCHMARKS.md section 26)."""
    host = served_host["host"]
    stubs = host.ssh("pgrep -f '^[^ ]*/triton_python_backend_stub '").stdout.split()
    policies = {
        host.ssh(f"tr '\\0' '\\n' < /proc/{p}/environ | grep '^OMP_WAIT_POLICY='", check=False).stdout.strip()
        for p in stubs
    }
    assert len(stubs) >= 3 and policies == {"OMP_WAIT_POLICY=PASSIVE"}, (stubs, policies)
    assert "OMP_WAIT_POLICY" not in host.ssh("bash -lc env").stdout  # root's login shells: not set there


EVIL_MODEL = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        with open("/etc/triton-was-here", "w") as f:  # what a hostile model's code might try
            f.write("x")

    def execute(self, requests):
        return []
"""


def test_a_model_whose_code_writes_under_etc_fails_with_a_readable_error(served_host: dict) -> None:
    """Started exactly as the provisioner starts the server (tasks/server/scripts/server_start.sh: setpriv to
    triton-server), from a repository holding a model whose initialize() writes under /etc."""
    host = served_host["host"]
    repo, run = "/tmp/evil-repo", "/tmp/evil-run"
    host.ssh(f"mkdir -p {repo}/evil/1 {run}")
    (host.host.root / repo.lstrip("/") / "evil" / "1" / "model.py").write_text(EVIL_MODEL)
    (host.host.root / repo.lstrip("/") / "evil" / "config.pbtxt").write_text(
        'name: "evil"\nbackend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "X", data_type: TYPE_FP32, dims: [ 1 ] } ]\n'
        'output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]\n'
        "instance_group [ { kind: KIND_CPU, count: 1 } ]\n"
    )
    own = [str(port) for port in named_ports(2).values()]  # http, grpc, metrics
    args = [
        "tritonserver", "--model-repository", repo, "--backend-directory", "/opt/triton/current/backends",
        "--http-port", own[0], "--grpc-port", own[1], "--metrics-port", own[2],
        "--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1", "--metrics-address", "127.0.0.1",
    ]  # fmt: skip
    start = remote.shell(
        "server_start.sh", run, "/opt/triton/bin/triton-env", "x", "", "triton-server", *[""] * 6, *args
    )  # no log watcher
    host.ssh(start.get_raw_value())
    try:
        deadline = time.monotonic() + 120
        log = ""
        while "failed to load all models" not in log:
            if time.monotonic() > deadline:
                pytest.fail(f"the server never gave up on the model:\n{log[-3000:]}")
            time.sleep(0.5)
            log = host.ssh(f"cat {run}/tritonserver.log", check=False).stdout
        assert "PermissionError: [Errno 13] Permission denied: '/etc/triton-was-here'" in log, log[-3000:]
        assert host.ssh("test -e /etc/triton-was-here", check=False).returncode == 1
    finally:
        host.ssh(f"pid=$(cat {run}/tritonserver.pid 2>/dev/null) && kill -9 $pid; rm -rf {repo} {run}", check=False)


def test_changed_model_setting_is_reloaded_without_a_restart(served_host: dict, models_dir: Path) -> None:
    host = served_host["host"]
    pid = server_pid(host)
    inv = write_inventory(
        served_host["dir"] / "inv2.py",
        [host],
        {**json.loads(json.dumps(_data(served_host))), "models": models_setting(models_dir, normalize=False)},
        own_ports=True,
    )
    before = host.ssh("readlink /opt/triton/models").stdout.strip()
    res, results = serve(served_host, inv=inv)
    assert res.returncode == 0, res.stderr[-3000:]
    assert results["Model repository | Model repository files"]["success"] == 1
    after = host.ssh("readlink /opt/triton/models").stdout.strip()
    assert after != before and after.startswith("/opt/triton/models.versions/")  # a new repository beside
    grep = "grep '\"normalize\"' {}/emb/config.pbtxt"
    normalize = host.ssh(grep.format("/opt/triton/models")).stdout.strip()
    assert normalize == 'parameters: { key: "normalize", value: { string_value: "false" } }'  # was "true"
    kept = host.ssh(grep.format(before)).stdout.strip()  # the old one stays for a rollback
    assert kept == 'parameters: { key: "normalize", value: { string_value: "true" } }'
    assert server_pid(host) == pid  # the model reloaded through the repository API, the server kept running
    assert "models: reload emb; the server keeps running" in res.stdout + res.stderr
    emb = infer(host, "emb", TEXTS)["EMBEDDING"]
    assert not np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-3)  # the new setting is served
    res, results = serve(served_host)  # and back: reloaded again
    assert res.returncode == 0


def _data(ctx: dict) -> dict:
    ns: dict = {}
    exec(ctx["inv"].read_text(), ns)
    return {
        k: v
        for k, v in ns["testbed"][0][1].items()
        if not k.startswith("ssh_")
        and k != "persist_dir"
        and not k.startswith("triton_http")
        and not k.startswith("triton_grpc")
        and not k.startswith("triton_met")
    }


def test_killed_server_is_brought_back_by_serve(served_host: dict) -> None:
    host = served_host["host"]
    pid = server_pid(host)
    host.ssh(f"kill -9 {pid}")
    res, results = serve(served_host)
    assert res.returncode == 0, res.stderr[-3000:]
    assert results["Triton server running, ready and proven"]["success"] == 1
    assert server_pid(host) != pid
    assert infer(host, "clf", TEXTS[:1])["LABEL"].shape == (1, 1)


def test_port_held_by_another_process_is_named(served_host: dict) -> None:
    host = served_host["host"]
    assert run_pyinfra(served_host["inv"], "deploy/stop.py", "-y").returncode == 0
    port = triton_ports(1)["triton_http_port"]
    other_pid = int(
        host.ssh(f"nohup python3 -m http.server {port} --bind 127.0.0.1 </dev/null >/dev/null 2>&1 & echo $!").stdout
    )
    try:
        listening = (
            "import socket, time, sys\n"
            "end = time.monotonic() + 20\n"
            "while time.monotonic() < end:\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), 1).close(); sys.exit(0)\n"
            "    except OSError: time.sleep(0.1)\n"
            "sys.exit(1)\n"
        )
        assert host.ssh(f"python3 -c {shlex.quote(listening)}", check=False).returncode == 0, (
            "http.server never listened"
        )
        res, _ = serve(served_host)
        out = res.stdout + res.stderr
        assert res.returncode != 0
        assert f"triton_http_port {port} is held by python3 (pid {other_pid})" in out
        assert host.ssh("test -e /opt/triton/run/tritonserver.pid", check=False).returncode != 0  # nothing started
    finally:
        host.ssh(f"kill {other_pid}", check=False)
    res, _ = serve(served_host)
    assert res.returncode == 0, res.stderr[-3000:]


def test_a_model_that_fails_to_load_gives_its_log_lines(served_host: dict, models_dir: Path) -> None:
    host = served_host["host"]
    models = [*models_setting(models_dir), {"name": "broken", "source": f"path:{models_dir / 'broken'}"}]
    inv = write_inventory(
        served_host["dir"] / "inv3.py", [host], {**_data(served_host), "models": models}, own_ports=True
    )
    res, _ = serve(served_host, inv=inv)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    # the server keeps running: the model's load fails at once with Triton's error (no readiness timeout)
    assert "model broken failed to load" in out and "OSError" in out, out[-4000:]
    assert re.search(r"/persist/models/broken/[0-9a-f]{16}/config.json' is not a valid JSON file", out), out[-4000:]
    assert "was not ready after" not in out
    assert "=> cause: the model's model.py (or what it loads) failed" in out  # the log lines, cause and fix
    res, _ = serve(served_host)  # the good configuration serves again
    assert res.returncode == 0, res.stderr[-3000:]


def test_links_the_server_user_plants_in_its_cache_reach_nothing_of_roots(served_host: dict) -> None:
    """The HF cache is triton-server's; the fetch runs as that user. That user moves a model's folder aside
    (the next run fetches it again) and plants refs/main -> a root-only file and the weights' partial
    download -> another: the run fetches, serves, and neither root file changed (root wrote nothing there)."""
    host = served_host["host"]
    folder = "/persist/huggingface/hub/models--tiny--clf"
    markers = host.ssh("cat /persist/huggingface/provisioner-fetched/*.json").stdout.replace("}{", "}\n{")
    marker = next(m for m in map(json.loads, markers.splitlines()) if m["repo"] == "tiny/clf")
    weights = marker["digests"]["model.safetensors"].split(":")[1]
    assert marker["digests"]["config.json"].startswith("git-blob-sha1:")  # every file has its hub digest
    host.ssh("printf root-only > /root/target-ref && printf root-too > /root/target-blob && chmod 600 /root/target-*")
    as_server = "setpriv --reuid=triton-server --regid=triton-server --init-groups"
    plant = (
        f"mv {folder} {folder}.aside && mkdir -p {folder}/refs {folder}/blobs"
        f" && ln -s /root/target-ref {folder}/refs/main && ln -s /root/target-blob {folder}/blobs/{weights}.incomplete"
    )
    res = host.ssh(f"{as_server} sh -c {shlex.quote(plant)}", check=False)
    assert res.returncode == 0, res.stderr
    res, results = serve(served_host)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert results["Model sources | Model clf_hub: hub:tiny/clf@main in HF_HOME"]["success"] == 1  # fetched again
    assert host.ssh("cat /root/target-ref /root/target-blob").stdout == "root-onlyroot-too"
    assert host.ssh(f"cat {folder}/refs/main").stdout == marker["commit"]  # a file now, not the link
    assert host.ssh(f"find {folder} ! -user triton-server").stdout == ""  # root made nothing in the cache
    assert infer(host, "clf_hub", TEXTS)["LABEL"].shape == (len(TEXTS), 1)
    host.ssh(f"rm -rf {folder}.aside /root/target-ref /root/target-blob")


# Run as the server's user while a hub fetch runs (what a model's code of that user could do): reads every
# process's environment and command line for the token and the endpoint's password, opens the descriptors
# of the fetch (its secrets' files) and writes into any record being made. Counts the fetches it saw.
SERVER_USER_SPY = r"""
import glob, os, sys
needles, stop = [bytes.fromhex(n) for n in sys.argv[1].split(",")], sys.argv[2]
seen, hits, opened, wrote, scans = set(), set(), set(), set(), 0
while not os.path.exists(stop):
    scans += 1
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        fetch = b"_secrets_from_fds" in cmd
        if fetch:
            seen.add(pid)
        for name in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (pid, name), "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if any(n in data for n in needles):
                hits.add("%s %s" % (pid, name))
        for fd in ("3", "4") if fetch else ():
            try:
                with open("/proc/%s/fd/%s" % (pid, fd), "rb") as f:
                    opened.add("%s fd %s: %r" % (pid, fd, f.read(40)))
            except OSError:
                pass
    for part in glob.glob("/persist/huggingface/provisioner-fetched/*.fetching"):
        try:
            with open(part, "a") as f:
                f.write('{"path": "/root"}')
            wrote.add(part)
        except OSError:
            pass
for line in sorted(hits):
    print("HIT", line)
for line in sorted(opened):
    print("OPENED", line)
for line in sorted(wrote):
    print("WROTE", line)
print("SCANS", scans, "FETCHES", len(seen), flush=True)
"""


def test_the_hub_fetch_keeps_its_secrets_from_the_server_users_processes_and_root_writes_its_record(
    served_host: dict, hub
) -> None:
    """A fetch with a token and a proxy password, watched throughout by a process of the server's user (as a
    model's code would be): neither is in any environment or command line it can read, it cannot open the
    fetch's descriptors, nor write into the record being made; root's record names the snapshot, and the
    token reached the hub."""
    host = served_host["host"]
    token = "hf_" + os.urandom(12).hex()
    folder = "/persist/huggingface/hub/models--tiny--clf"
    host.ssh(f"mv {folder} {folder}.aside && rm -f /run/spy-stop")  # the next run fetches tiny/clf again
    proxy = f"http://ops:proxypw{token[3:11]}@127.0.0.1:9"  # a password in the network settings (no proxy there:
    # the hub is in no_proxy, so the fetch succeeds only where it read the settings, HF_ENDPOINT too, from fd 4)
    needles = ",".join(x.encode().hex() for x in (token, f"proxypw{token[3:11]}"))
    spy = SERVER_USER_SPY.replace("'", "'\\''")
    host.ssh(
        f"nohup setpriv --reuid=triton-server --regid=triton-server --init-groups python3 -c '{spy}' {needles}"
        " /run/spy-stop > /root/spy.out 2>&1 < /dev/null &"
    )
    data = {**_data(served_host), "hf_token": token, "http_proxy": proxy, "https_proxy": proxy}
    data["no_proxy"] = "127.0.0.1,localhost"
    inv = write_inventory(served_host["dir"] / "inv-token.py", [host], data, own_ports=True)
    try:
        res = run_pyinfra(inv, "deploy/serve.py", "-y")
    finally:
        host.ssh("touch /run/spy-stop")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    deadline = time.monotonic() + 30
    while "SCANS" not in host.ssh("cat /root/spy.out").stdout:
        assert time.monotonic() < deadline, "the spy did not finish"
        time.sleep(0.2)
    spied = host.ssh("cat /root/spy.out").stdout
    fetches = int(re.search(r"FETCHES (\d+)", spied).group(1))
    assert fetches >= 1 and "HIT" not in spied and "OPENED" not in spied and "WROTE" not in spied, spied
    assert token not in out
    asked = [r for r in hub.log if r.repo == "tiny/clf" and not r.file]
    assert asked[-1].authorization == f"Bearer {token}"  # the token came through its descriptor
    markers = host.ssh("cat /persist/huggingface/provisioner-fetched/*.json").stdout.replace("}{", "}\n{")
    marker = next(m for m in map(json.loads, markers.splitlines()) if m["repo"] == "tiny/clf")
    assert marker["path"] == f"{folder}/snapshots/{marker['commit']}"
    owners = host.ssh("stat -c '%U %a' /persist/huggingface/provisioner-fetched/*.json").stdout.split("\n")
    assert {o for o in owners if o} == {"root 644"}
    host.ssh(f"rm -rf {folder}.aside /root/spy.out")
    res, _ = serve(served_host)  # back to the module's settings: no token
    assert res.returncode == 0, res.stderr[-3000:]


def test_hub_models_are_fetched_lean_and_pinned_and_a_cut_transfer_resumes(
    served_host: dict, models_dir: Path, hub, tmp_path: Path
) -> None:
    """A repository carrying every framework's weights: only the config, tokenizer and safetensors
    files are fetched; the first transfer of the weights is cut half-way (the run fails, naming the
    model), the next run resumes it from where it stopped (a Range request) and serves the model."""
    host = served_host["host"]
    full = tmp_path / "full"
    # weights of ~14 MB: hub_fetch.py writes what it reads as it comes, so a cut after 12 MB leaves that to resume from
    tiny_models.make("classifier", full, seed=3, vocab_rows=110_000)
    for name in ("tf_model.h5", "flax_model.msgpack", "pytorch_model.bin", "rust_model.ot"):
        (full / name).write_bytes(os.urandom(200_000))
    (full / "onnx").mkdir()
    (full / "onnx" / "model.onnx").write_bytes(os.urandom(50_000))
    (full / "onnx" / "config.json").write_text("{}")
    commit = hub.add("tiny/full", full)
    weights = (full / "model.safetensors").stat().st_size
    assert weights > 12 * 2**20
    hub.cut_once("tiny/full", "model.safetensors", 12 * 2**20)
    full_model = {"name": "clf_full", "source": "hub:tiny/full@main", "task": "text-classification"}
    data = {**_data(served_host), "models": [*models_setting(models_dir), full_model]}
    inv = write_inventory(served_host["dir"] / "inv-full.py", [host], data, own_ports=True)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "hub: download of tiny/full@main failed" in out and "Run again: a partial file resumes" in out, out[-3000:]
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    lean = sorted(
        f.name
        for f in full.iterdir()
        if f.is_file() and (f.suffix in (".json", ".txt") or f.name == "model.safetensors")
    )
    fetched = hub.fetched("tiny/full")
    assert sorted({r.file for r in fetched}) == lean  # no TF, Flax, Rust, ONNX or PyTorch copy
    ranges = [r.range for r in fetched if r.file == "model.safetensors"]
    assert ranges[0] == "" and re.fullmatch(r"bytes=\d+-", ranges[1]) and len(ranges) == 2, ranges
    assert 0 < int(ranges[1][6:-1]) <= 12 * 2**20  # resumed where the cut left it, not from the start
    snapshot = f"/persist/huggingface/hub/models--tiny--full/snapshots/{commit}"
    assert host.ssh(f"ls {snapshot}").stdout.split() == lean
    got = host.ssh(f"sha256sum {snapshot}/model.safetensors").stdout.split()[0]
    assert got == hashlib.sha256((full / "model.safetensors").read_bytes()).hexdigest()
    assert infer(host, "clf_full", TEXTS)["LABEL"].shape == (len(TEXTS), 1)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")  # the marker says it is complete: nothing fetched again
    assert res.returncode == 0 and len(hub.fetched("tiny/full")) == len(fetched)
    res, _ = serve(served_host)  # back to the module's models
    assert res.returncode == 0, res.stderr[-3000:]


# The seeds' model folder (../shared/seeds/000_*.txt, section 3): config.pbtxt as the write-up prints it, and
# model.py with initialize / execute / finalize running a transformers pipeline; here the pipeline loads a
# tiny model kept beside model.py (no model hub here), found from __file__ as the write-up advises.
SEED_CONFIG = (Path(__file__).resolve().parents[1] / "fixtures" / "triton_models" / "seed-config.pbtxt").read_text()
SEED_MODEL_PY = """import os

import numpy as np
import triton_python_backend_utils as pb_utils
from transformers import pipeline


class TritonPythonModel:
    def initialize(self, args):
        weights = os.path.join(os.path.dirname(__file__), "weights")
        self.classifier = pipeline("text-classification", model=weights, device=-1)

    def execute(self, requests):
        responses = []
        for request in requests:
            input_tensor = pb_utils.get_input_tensor_by_name(request, "TEXT")
            texts = input_tensor.as_numpy().flatten().tolist()
            texts = [t.decode("utf-8") if isinstance(t, bytes) else t for t in texts]
            results = self.classifier(texts)
            labels = [r["label"] for r in results]
            scores = [r["score"] for r in results]
            out_label = pb_utils.Tensor("LABEL", np.array(labels, dtype=object).reshape(-1, 1))
            out_score = pb_utils.Tensor("SCORE", np.array(scores, dtype=np.float32).reshape(-1, 1))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out_label, out_score]))
        return responses

    def finalize(self):
        self.classifier = None
"""
ONNX_CONFIG = (
    'name: "densenet" platform: "onnxruntime_onnx" max_batch_size: 0\n'
    'input [ { name: "data_0" data_type: TYPE_FP32 dims: [ 1, 3, 224, 224 ] } ]\n'
    'output [ { name: "fc6_1" data_type: TYPE_FP32 dims: [ 1000 ] } ]\n'
)


def test_a_model_folder_written_as_the_seeds_describe_is_served_as_it_is(
    served_host: dict, models_dir: Path, tmp_path: Path, hub
) -> None:
    """`triton:<folder>`: the seeds' text_classifier (its one-line config.pbtxt, its model.py) served as it
    is, proven with inputs made from its config, and called as the seeds call it (HTTP JSON, a batch of 3).
    Its requirements.txt adds a pin to the venv (a new venv, made beside the old). Then the same folder from
    a hub repository (`triton:hub:`, a folder named as the model, its model.py changed): fetched by the
    controller, reloaded into the running server, proven. The seeds' common mistake (config.pbtxt in the
    version folder), a numpy 2 pin (which no environment of the stub's may hold) and a model for a backend
    this build lacks are refused before any change: the server keeps running as it was."""
    host = served_host["host"]
    folder = tmp_path / "seed" / "text_classifier"
    (folder / "1").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(SEED_CONFIG)
    (folder / "1" / "model.py").write_text(SEED_MODEL_PY)
    (folder / "requirements.txt").write_text("six==1.17.0\n")  # a package model.py would import, from PyPI
    shutil.copytree(models_dir / "clf", folder / "1" / "weights")
    # DistilBERT's own tokenizer gives no token_type_ids (the tiny one is a BERT tokenizer): as the real model's
    tokenizer_config = folder / "1" / "weights" / "tokenizer_config.json"
    config = json.loads(tokenizer_config.read_text())
    tokenizer_config.write_text(json.dumps({**config, "model_input_names": ["input_ids", "attention_mask"]}))
    seed = {"name": "text_classifier", "source": f"triton:{folder}"}
    data = {**_data(served_host), "models": [*models_setting(models_dir), seed]}
    inv = write_inventory(served_host["dir"] / "inv-seed.py", [host], data, own_ports=True)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")  # a new venv: the model's pin added
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    six = host.ssh("/opt/triton/bin/triton-env python3 -c 'import six; print(six.__version__)'").stdout.strip()
    assert six == "1.17.0"
    assert (
        "verified text_classifier: inputs made from its config.pbtxt (TEXT BYTES[1, 1]) over HTTP and gRPC; "
        "LABEL[1, 1], SCORE[1, 1]"
    ) in out
    port = triton_ports(host_index(host.name))["triton_http_port"]
    outputs = infer_json(port, "text_classifier", ["Good movie", "Bad movie", "Just okay"])
    assert outputs["LABEL"]["shape"] == [3, 1] and set(outputs["LABEL"]["data"]) <= {"POSITIVE", "NEGATIVE"}
    assert outputs["SCORE"]["shape"] == [3, 1] and all(0 < s <= 1 for s in outputs["SCORE"]["data"])
    pid = server_pid(host)

    repo = tmp_path / "hub-repo"
    shutil.copytree(folder, repo / "text_classifier")
    (repo / "README.md").write_text("# the seeds' classifier as a Triton model folder\n")
    changed = SEED_MODEL_PY + "\n# from the hub\n"
    (repo / "text_classifier" / "1" / "model.py").write_text(changed)
    hub.add("seeds/text-classifier", repo)
    from_hub = {"name": "text_classifier", "source": "triton:hub:seeds/text-classifier@main"}
    cache = {"hub_folder_cache": str(tmp_path / "hub-folders")}
    data = {**_data(served_host), **cache, "models": [*models_setting(models_dir), from_hub]}
    inv = write_inventory(served_host["dir"] / "inv-seed-hub.py", [host], data, own_ports=True)
    res = run_pyinfra(inv, "deploy/serve.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "verified text_classifier: inputs made from its config.pbtxt" in out
    assert {r.file for r in hub.fetched("seeds/text-classifier")} == {
        f"text_classifier/{rel}" for rel in triton_model.files(folder)
    }  # the controller fetched the model folder, and nothing else of the repository
    assert host.ssh("cat /opt/triton/models/text_classifier/1/model.py").stdout == changed
    assert server_pid(host) == pid  # reloaded into the running server
    assert set(outputs) <= set(infer_json(port, "text_classifier", ["Good movie"]))

    mistake = tmp_path / "mistake" / "text_classifier"
    shutil.copytree(folder, mistake)
    (mistake / "config.pbtxt").rename(mistake / "1" / "config.pbtxt")
    bad = {"name": "text_classifier", "source": f"triton:{mistake}"}
    inv = write_inventory(served_host["dir"] / "inv-mistake.py", [host], {**_data(served_host), "models": [bad]})
    res = run_pyinfra(inv, "deploy/serve.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    fix = f"Triton reads it from the model's folder; move it to {mistake}/config.pbtxt"
    assert f"config.pbtxt is in the version folder 1/: {fix}" in out

    clash = tmp_path / "clash" / "text_classifier"
    shutil.copytree(folder, clash)
    (clash / "requirements.txt").write_text("numpy==2.1.0\n")
    data = {**_data(served_host), "models": [*models_setting(models_dir), {**seed, "source": f"triton:{clash}"}]}
    inv = write_inventory(served_host["dir"] / "inv-clash.py", [host], data, own_ports=True)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    # an environment of its own is no way around the stub's numpy<2
    assert "its requirements.txt pins numpy==2.1.0; this build's python backend stub needs numpy<2" in out

    onnx = tmp_path / "onnx" / "densenet"
    (onnx / "1").mkdir(parents=True)
    (onnx / "config.pbtxt").write_text(ONNX_CONFIG)
    (onnx / "1" / "model.onnx").write_bytes(b"not read: refused first")
    other = {"name": "densenet", "source": f"triton:{onnx}"}
    data = {**_data(served_host), "models": [*models_setting(models_dir), other]}
    inv = write_inventory(served_host["dir"] / "inv-onnx.py", [host], data, own_ports=True)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "needs the onnxruntime backend; the pytriton build (triton_source = 'pytriton') carries python only" in out
    assert server_pid(host) == pid  # neither refusal changed what serves
    assert infer(host, "clf", TEXTS)["LABEL"].shape == (len(TEXTS), 1)
    res, _ = serve(served_host)  # back to the module's models
    assert res.returncode == 0, res.stderr[-3000:]
