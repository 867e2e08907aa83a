"""Serving logic without a host: model settings, config.pbtxt rendering, failure diagnosis, hashes."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import remote
from config.layout import Layout
from config.models import parse_models
from config.settings import SettingsError, load
from facts.memory import ModelMemory, ModelMemoryData
from facts.server import parse_loaded
from tasks import serve_models
from tasks.environment import env_script
from tasks.models import control as model_control
from tasks.models import repository as models
from tasks.server import unit as server_unit
from tasks.triton.install import version_dir_name
from tasks.venv.plan import pip_requirement, wheelhouse_key

FIXTURES = Path(__file__).parents[1] / "fixtures"
LOGS = FIXTURES / "logs"
wait_ready = remote.load("wait_ready.py")
verify_models = remote.load("verify_models.py")


def settings(**data):
    return load(data)


def spec(**kw):
    specs, problems = parse_models([{"name": "m", "source": "hub:org/model@abc123", **kw}])
    assert problems == []
    return specs[0]


def test_classification_config_on_cpu() -> None:
    s = settings(persist_dir="/persist")
    text = models.render_config(spec(), Layout(s), gpu_ids=[])
    assert 'name: "m"' in text and "max_batch_size: 16" in text  # the CPU's default (planner/tables.py)
    assert (
        'name: "LABEL", data_type: TYPE_STRING' in text and 'name: "LOGITS", data_type: TYPE_FP32, dims: [ -1 ]' in text
    )
    assert "preferred_batch_size: [ 8, 16 ]" in text and "max_queue_delay_microseconds: 2000" in text
    assert "kind: KIND_CPU" in text and "gpus" not in text
    assert 'string_value: "hub:org/model@abc123"' in text
    # the copies and threads the rules chose for this host go into the configuration
    from tasks.models.serving import Serving

    chosen = models.render_config(spec(), Layout(s), gpu_ids=[], serving=Serving(3, 2, 4, (2, 4), "6 CPUs"))
    assert "instance_group [ { count: 3, kind: KIND_CPU } ]" in chosen and "max_batch_size: 4" in chosen
    assert "preferred_batch_size: [ 2, 4 ]" in chosen
    assert 'key: "intra_op_threads", value: { string_value: "2" }' in chosen


def test_embedding_config_on_gpus_without_dynamic_batching() -> None:
    s = settings()
    text = models.render_config(
        spec(task="feature-extraction", dynamic_batching=False, normalize=True, instance_count=2),
        Layout(s),
        gpu_ids=[0, 1],
    )
    assert 'name: "EMBEDDING"' in text and "dynamic_batching" not in text
    assert "count: 2, kind: KIND_GPU, gpus: [ 0, 1 ]" in text
    assert 'key: "normalize", value: { string_value: "true" }' in text


def test_path_models_live_on_the_persistent_path_a_folder_per_content(tmp_path: Path) -> None:
    s = settings(persist_dir="/persist")
    (tmp_path / "config.json").write_text("{}")
    m = parse_models([{"name": "local", "source": f"path:{tmp_path}", "task": "text-generation"}])[0][0]
    first = models.host_source(m, Layout(s))
    assert re.fullmatch(r"path:/persist/models/local/[0-9a-f]{16}", first), first
    assert 'name: "GENERATED"' in models.render_config(m, Layout(s), [])
    assert first in models.render_config(m, Layout(s), [])  # the config names the version it loads
    (tmp_path / "config.json").write_text('{"changed": 1}')
    assert models.host_source(m, Layout(s)) != first  # a change goes beside, the old version stays


def test_repository_holds_smoke_and_each_model_with_its_code() -> None:
    files = models.repository_files((spec(),), Layout(settings()), [])
    assert sorted(files) == [
        "m/1/hf_pipeline.py",
        "m/1/model.py",
        "m/config.pbtxt",
        "smoke/1/model.py",
        "smoke/config.pbtxt",
    ]


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ({"name": "a b", "source": "hub:o/m"}, "name must be"),
        ({"name": "x"}, "needs source"),
        ({"name": "x", "source": "s3://b/m"}, "source must be"),
        ({"name": "x", "source": "hub:o/m", "task": "qa"}, "task"),
        ({"name": "x", "source": "path:relative/dir"}, "no such directory"),
        (
            {"name": "x", "source": "hub:o/m", "max_batch_size": 2, "preferred_batch_sizes": [4]},
            "exceed max_batch_size",
        ),
        ({"name": "x", "source": "hub:o/m", "preferred_batch_sizes": [4]}, "set max_batch_size with them"),
        ({"name": "x", "source": "hub:o/m", "normalise": True}, "unknown key"),
        ({"name": "x", "source": "hub:o/m", "dynamic_batching": "yes"}, "true or false"),
        # a revision or repo that could name a path outside the HF cache (huggingface_hub makes paths of both)
        ({"name": "x", "source": "hub:o/m@../../../../etc/cron.d/x"}, "could name a path outside the HF cache"),
        ({"name": "x", "source": "hub:o/m@main/../../x"}, "could name a path outside the HF cache"),
        ({"name": "x", "source": "hub:o/..@main"}, "could name a path outside the HF cache"),
        ({"name": "x", "source": "hub:o/m@refs//x"}, "could name a path outside the HF cache"),
    ],
)
def test_bad_model_entries_are_refused(entry, needle) -> None:
    with pytest.raises(SettingsError) as err:
        load({"models": [entry]})
    assert needle in str(err.value)


def test_a_pull_request_revision_is_taken() -> None:
    assert load({"models": [{"name": "x", "source": "hub:o/m@refs/pr/1"}]}).models[0].revision == "refs/pr/1"


def test_duplicate_model_names_are_refused() -> None:
    with pytest.raises(SettingsError, match="used twice"):
        load({"models": [{"name": "x", "source": "hub:o/a"}, {"name": "x", "source": "hub:o/b"}]})


def test_hf_token_is_never_in_an_error_or_repr() -> None:
    with pytest.raises(SettingsError) as err:
        load({"hf_token": "hf_secret value"})
    assert "hf_secret" not in str(err.value) and "<hidden>" in str(err.value)
    assert "hf_abc" not in repr(load({"hf_token": "hf_abc"}))


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        ("broken-model.log", "the model's model.py (or what it loads) failed"),
        ("numpy2-stub.log", "numpy 2 in the venv"),
        ("missing-libpython.log", "the python backend stub cannot load its libpython"),
        ("stub313-vendored-libpython-numpy2.log", "the model's model.py (or what it loads) failed"),
        ("port-in-use.log", "a port is taken"),
        # Debian 13, the server as triton-server, the standalone's libpython taken off LD_LIBRARY_PATH
        ("stub-does-not-run-as-server-user.log", "the python backend stub does not run"),
        # this controller before the fix: the venv made from pyenv's python3.11 under /root (0700)
        ("venv-python-unreachable.log", "the python backend stub does not see the venv"),
    ],
)
def test_failure_logs_are_explained(log: str, cause: str) -> None:
    text = wait_ready.explain(str(LOGS / log))
    assert f"=> cause: {cause}" in text
    assert "NVML" not in text and "DCGM" not in text  # a CPU host's usual warnings are no explanation


@pytest.mark.parametrize(
    ("log", "line"),
    [
        ("missing-libpython.log", "triton_python_backend_stub: error while loading shared libraries: libpython3.11"),
        ("broken-model.log", "failed to load 'broken'"),
        # pytriton's 3.13 stub with its own libpython and a venv's numpy 2 (Debian 13, checked by hand)
        ("stub313-vendored-libpython-numpy2.log", "Failed to initialize Python stub for auto-complete"),
    ],
)
def test_a_start_that_cannot_become_ready_is_seen_in_the_log_at_once(log: str, line: str) -> None:
    assert line in wait_ready.fatal(str(LOGS / log))


def test_a_start_still_loading_is_not_fatal(tmp_path: Path) -> None:
    log = (LOGS / "missing-libpython.log").read_text().splitlines()
    (tmp_path / "loading.log").write_text("\n".join(log[:2]) + "\n")  # the start and 'loading: smoke:1'
    assert wait_ready.fatal(str(tmp_path / "loading.log")) == ""
    assert wait_ready.fatal(str(tmp_path / "absent.log")) == ""


def test_only_the_last_start_is_explained() -> None:
    """Two starts in one log (the deploy writes '--- start' before each): the first failed on libpython, the
    second on a held port; only the second is explained."""
    text = wait_ready.explain(str(LOGS / "two-starts.log"))
    assert "=> cause: a port is taken" in text and "already in use" in text
    assert "libpython" not in text and "smoke" not in text


# A stand-in journalctl (the real one is proven on the systemd test host, test_vm_hosts.py): it records its
# arguments and prints the unit's journal as `-o cat` would: everything, or only what came after --after-cursor.
JOURNALCTL = """#!/bin/sh
printf '%s\\n' "$@" > "$JOURNAL_ARGS"
case "$*" in
  *--after-cursor=s=42*) cat "$JOURNAL_NEW" ;;
  *) cat "$JOURNAL_OLD" "$JOURNAL_NEW" ;;
esac
"""


def test_under_systemd_the_journal_after_the_starts_cursor_is_explained(tmp_path, monkeypatch) -> None:
    """wait_ready reads the unit's journal (journal:UNIT@CURSOR_FILE): only what this start wrote, after the
    cursor the start recorded, even before the journal has this start's '--- start' line."""
    two = (LOGS / "two-starts.log").read_text()
    first, second = two.rsplit("--- start", 1)
    (tmp_path / "old").write_text(first)
    (tmp_path / "new").write_text(second.split("\n", 1)[1])  # this start's lines, its marker not yet there
    tool = tmp_path / "bin" / "journalctl"
    tool.parent.mkdir()
    tool.write_text(JOURNALCTL)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
    for name, value in (("ARGS", "args"), ("OLD", "old"), ("NEW", "new")):
        monkeypatch.setenv(f"JOURNAL_{name}", str(tmp_path / value))
    cursor = tmp_path / "journal.cursor"
    cursor.write_text("s=42;i=7\n")
    text = wait_ready.explain(f"journal:tritonserver.service@{cursor}")
    assert "=> cause: a port is taken" in text and "libpython" not in text
    args = (tmp_path / "args").read_text().split()
    assert args[:2] == ["-u", "tritonserver.service"] and "--after-cursor=s=42;i=7" in args
    cursor.unlink()  # a first start: no cursor yet, the whole journal, split at its last '--- start'
    (tmp_path / "new").write_text("--- start\n" + second.split("\n", 1)[1])
    text = wait_ready.explain(f"journal:tritonserver.service@{cursor}")
    assert "=> cause: a port is taken" in text and "libpython" not in text
    assert not any(a.startswith("--after-cursor") for a in (tmp_path / "args").read_text().split())


# Lines that merely mention a cause's word, each from a start that went well: none is a cause.
INNOCENT = [
    "I1201 10:00:00.000000 1 model_lifecycle.cc:818] \"successfully loaded 'bloom'\"",  # "oom" inside a word
    'I1201 10:00:00.000000 1 model_lifecycle.cc:472] "loading: oom:1"',  # a model named oom, loading fine
    'I1201 10:00:00.000000 1 model_lifecycle.cc:472] "loading: shape_mismatch_check:1"',
    'I1201 10:00:00.000000 1 model_lifecycle.cc:472] "loading: valueerror_demo:1"',
    'I1201 10:00:00.000000 1 python_be.cc:2115] "using libpython3.11.so.1.0 for the stub"',
    'I1201 10:00:00.000000 1 server.cc:674] "model unexpected_tokens ready"',
]


@pytest.mark.parametrize("line", INNOCENT)
def test_a_line_that_merely_mentions_a_cause_s_word_is_not_that_cause(line: str) -> None:
    assert wait_ready.cause_of(line) is None


def test_an_error_about_a_model_named_bloom_is_not_out_of_memory() -> None:
    line = (
        "E1201 10:00:00.000000 1 model_lifecycle.cc:642] \"failed to load 'bloom' version 1: Internal: "
        "Stub process 'bloom_0_0' is not healthy.\""
    )
    found = wait_ready.cause_of(line)
    assert found is None or "out of memory" not in found[0]


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        (
            'E1201 10:00:00.000000 1 pb_stub.cc:1] "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"',
            "out of memory",
        ),
        ("terminate called after throwing an instance of 'std::bad_alloc'", "out of memory"),
        (
            "E1201 10:00:00.000000 1 model_repository_manager.cc:1] \"Poll failed for model 'x': name mismatch\"",
            "differ",
        ),
        ('E1201 10:00:00.000000 1 pb_stub.cc:1] "ValueError: bad input"', "the model's model.py"),
    ],
)
def test_an_error_line_names_its_cause(line: str, cause: str) -> None:
    found = wait_ready.cause_of(line)
    assert found is not None and cause in found[0]


def test_a_log_of_innocent_lines_and_one_failure_names_only_that_failure(tmp_path: Path) -> None:
    log = tmp_path / "log"
    failure = (
        "E1201 10:00:01.000000 1 main.cc:248] \"failed to start HTTP service: Socket '127.0.0.1:8000' already in use\""
    )
    log.write_text("--- start 2026-12-01T10:00:00Z\n" + "\n".join([*INNOCENT, failure]) + "\n")
    causes = [line for line in wait_ready.explain(str(log)).splitlines() if "=> cause:" in line]
    assert causes == [
        "  => cause: a port is taken; fix: stop the process on that port or set triton_http_port/grpc/metrics"
    ]


def test_the_server_hash_changes_with_what_the_process_runs_and_not_with_models_or_venv() -> None:
    s = settings()
    args = server_unit.server_args(s, Layout(s))
    base = server_unit.server_hash(args, "/opt/triton/versions/x", "3.11", "")
    assert base == server_unit.server_hash(list(args), "/opt/triton/versions/x", "3.11", "")
    assert base != server_unit.server_hash(args, "/opt/triton/versions/y", "3.11", "")  # a new build
    assert base != server_unit.server_hash(args, "/opt/triton/versions/x", "3.12", "")  # a new Python minor
    assert base != server_unit.server_hash(args, "/opt/triton/versions/x", "3.11", "/usr/local/lib")
    other = settings(triton_http_port=9000)
    assert base != server_unit.server_hash(
        server_unit.server_args(other, Layout(other)), "/opt/triton/versions/x", "3.11", ""
    )
    # what the models are and which venv they run on is not the server's: each model's digest holds it
    one = model_control.digests({"m/config.pbtxt": b"a", "n/config.pbtxt": b"x"}, "/opt/triton/venv.versions/v1")
    assert one == model_control.digests(
        {"n/config.pbtxt": b"x", "m/config.pbtxt": b"a"}, "/opt/triton/venv.versions/v1"
    )
    two = model_control.digests({"m/config.pbtxt": b"b", "n/config.pbtxt": b"x"}, "/opt/triton/venv.versions/v1")
    assert (one["m"] != two["m"], one["n"] == two["n"]) == (True, True)  # only the changed model differs
    venv = model_control.digests({"m/config.pbtxt": b"a", "n/config.pbtxt": b"x"}, "/opt/triton/venv.versions/v2")
    assert venv["m"] != one["m"] and venv["n"] != one["n"]  # a new venv: every model is reloaded
    # but a model with an environment of its own: a new venv reloads the others; a new environment it alone
    files, env = {"m/config.pbtxt": b"a", "n/config.pbtxt": b"x"}, {"n": "/opt/triton/venv.model-envs/n-1"}
    own = model_control.digests(files, "/opt/triton/venv.versions/v1", env)
    assert model_control.digests(files, "/opt/triton/venv.versions/v2", env)["n"] == own["n"]
    moved = model_control.digests(files, "/opt/triton/venv.versions/v1", {"n": "/opt/triton/venv.model-envs/n-2"})
    assert (moved["m"] == own["m"], moved["n"] != own["n"]) == (True, True)


def test_a_change_loads_what_changed_unloads_what_went_and_undoes_it_in_reverse() -> None:
    have = {"smoke": "01", "clf": "02", "gone": "03"}
    change = model_control.change(have, {"smoke": "01", "clf": "12", "new": "04"})
    assert (change.load, change.unload, change.added, change.swap) == (("clf", "new"), ("gone",), ("new",), ())
    assert change.forward() == ["load:clf", "load:new", "unload:gone"]
    assert change.back() == ["load:clf", "load:gone", "unload:new"]
    assert change.words() == "reload clf; load new; unload gone"
    assert not model_control.change(have, dict(have))
    # clf's copy (1 GiB resident) does not fit twice in 1.2 GiB available (256 MiB kept free): unloaded first
    memory = ModelMemoryData(
        available_kb=1200 * 1024, rss_kb={"clf": 1024 * 1024, "smoke": 1000}, gpu_mib={}, gpu_free_mib=[]
    )
    tight = model_control.change(have, {"smoke": "01", "clf": "12", "gone": "03"}, memory)
    assert (tight.swap, tight.load, tight.forward(), tight.back()) == (("clf",), (), ["swap:clf"], ["swap:clf"])
    assert tight.words() == "unload then load clf (two copies do not fit: clf needs 1024 MiB of memory, 944 MiB free)"
    unknown = model_control.change(None, {"smoke": "01"})  # no record: loaded again, nothing taken as new
    assert (unknown.load, unknown.added, unknown.back()) == (("smoke",), (), ["load:smoke"])
    assert model_control.loaded_text({"b": "02", "a": "01"}) == "01 a\n02 b\n"
    assert parse_loaded(["01 a", "zz b", "02 c", ""]) == {"a": "01", "c": "02"}


def test_second_copies_fit_in_what_the_others_left_host_memory_and_gpu() -> None:
    fixture = json.loads((FIXTURES / "facts" / "memory.ModelMemory" / "two-models-loaded.json").read_text())
    memory = fixture["fact"]  # this machine: smoke 268 MiB, clf 411 MiB resident, 21.6 GiB available
    assert model_control.tight(memory, ["smoke", "clf"]) == {}
    small = {**memory, "available_kb": 900 * 1024}  # 644 MiB usable (256 MiB kept): clf fits, then smoke does not
    assert model_control.tight(small, ["smoke", "clf"]) == {"smoke": "smoke needs 267 MiB of memory, 233 MiB free"}
    assert model_control.tight(small, ["smoke"]) == {}  # alone it fits
    gpu = ModelMemory().process(
        ["AVAIL=64000000", "STUB=11 900000 llm", "STUB=12 300000 clf", "GPU=11 30000", "GPU=12 2000", "GPUFREE=0 31000"]
    )
    assert gpu["gpu_mib"] == {"llm": 30000, "clf": 2000} and gpu["gpu_free_mib"] == [31000]
    assert model_control.tight(gpu, ["llm", "clf"]) == {"clf": "clf needs 2000 MiB of GPU memory, 1000 MiB free"}
    assert model_control.tight(gpu, ["llm"]) == {}
    assert model_control.tight(ModelMemory.default(), ["llm"]) == {}  # nothing known: reloaded beside


def test_the_memory_script_finds_each_models_stubs_and_their_gpu_memory(tmp_path: Path) -> None:
    """model_memory.sh run for real: a process whose command line is a stub's for a model under the
    repository, and a stand-in nvidia-smi printing as its csv,noheader,nounits does."""
    models = tmp_path / "models"
    stub = subprocess.Popen(
        ["sh", "-c", "sleep 60", "triton_python_backend_stub", f"{models}/llm/1/model.py", "shm", "1048576"]
    )
    other = subprocess.Popen(["sh", "-c", "sleep 60", "triton_python_backend_stub", "/elsewhere/x/1/model.py"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        f'#!/bin/sh\ncase "$1" in --query-compute-apps*) echo "{stub.pid}, 30000"; echo "99999, 5";; '
        '*) echo "0, 31000"; echo "1, 40000";; esac\n'
    )
    smi.chmod(0o755)
    try:
        command = ModelMemory().command(str(models)).get_raw_value()
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        out = subprocess.run(command, shell=True, capture_output=True, text=True, env=env).stdout.splitlines()
    finally:
        for p in (stub, other):
            p.kill()
            p.wait()
    memory = ModelMemory().process(out)
    assert list(memory["rss_kb"]) == ["llm"] and memory["rss_kb"]["llm"] > 0  # not the stub of another repository
    assert memory["gpu_mib"] == {"llm": 30000} and memory["gpu_free_mib"] == [31000, 40000]
    assert (memory["available_kb"] or 0) > 0


def test_the_server_starts_in_explicit_mode_with_every_model_and_the_api_key_comes_from_a_file() -> None:
    s = settings(triton_model_load_threads=8)
    layout = Layout(s)
    args = server_unit.server_args(s, layout)
    assert args[args.index("--model-control-mode") + 1] == "explicit" and args[args.index("--load-model") + 1] == "*"
    assert args[args.index("--model-load-thread-count") + 1] == "8"
    assert not any("restricted" in a for a in args)  # the key is not in what the controller runs or prints
    text = server_unit.server_launcher(layout)
    assert "key=$(cat /etc/triton-provisioner/model-control.key)" in text
    # the server's bytecode where its user may write: set in this launcher only, never in env.sh (root's shells)
    assert "\nexport PYTHONPYCACHEPREFIX=/var/lib/triton-provisioner/python-bytecode\n" in text
    assert "PYTHONPYCACHEPREFIX" not in env_script(layout, None)
    # a server run as root reads no bytecode another user may have written there (a former triton_user)
    as_root = Layout(settings(triton_user="root"))
    assert as_root.python_bytecode == "" and "PYTHONPYCACHEPREFIX" not in server_unit.server_launcher(as_root)
    assert '"--http-restricted-api=model-repository:triton-model-control=$key"' in text
    assert '"--grpc-restricted-protocol=model-repository:triton-model-control=$key"' in text


def test_the_stubs_openmp_threads_sleep_between_requests_and_a_change_of_policy_restarts_the_server() -> None:
    """The server's launcher sets OMP_WAIT_POLICY (the stubs inherit it; root's shells never see it), and the
    server's hash holds the policy, so that a change restarts what runs with the old one."""
    from tests.unit.test_preflight import DECISIONS

    hashes = set()
    for policy, line in (("passive", "PASSIVE"), ("active", "ACTIVE"), ("", None)):
        s = settings(triton_omp_wait_policy=policy)
        layout = Layout(s)
        exports = [x for x in server_unit.server_launcher(layout).splitlines() if x.startswith("export OMP_")]
        assert exports == ([f"export OMP_WAIT_POLICY={line}"] if line else [])
        assert "OMP_" not in env_script(layout, None)
        hashes.add(serve_models.wanted_hash(s, layout, DECISIONS))
    assert len(hashes) == 3
    with pytest.raises(SettingsError, match="triton_omp_wait_policy = 'spin': must be one of passive, active, "):
        settings(triton_omp_wait_policy="spin")


def test_server_binds_loopback_by_default() -> None:
    s = settings()
    args = server_unit.server_args(s, Layout(s))
    for flag in ("--http-address", "--grpc-address", "--metrics-address"):
        assert args[args.index(flag) + 1] == "127.0.0.1"


def test_env_script_puts_the_venv_first_and_libpython_on_the_library_path() -> None:
    s = settings(persist_dir="/persist")
    text = env_script(Layout(s), "/root/.pyenv/versions/3.11.7/lib")
    assert 'export PATH=/opt/triton/venv/bin:"$TRITON_HOME/bin:$PATH"' in text
    assert "LD_LIBRARY_PATH=/opt/triton/current/lib:/root/.pyenv/versions/3.11.7/lib" in text
    assert "export HF_HOME=/persist/huggingface" in text


def test_names_and_keys() -> None:
    assert version_dir_name("2.51.0", "21f063ff93bb426d0c06", "3.11") == "2.51.0-21f063ff93bb-py3.11"
    assert pip_requirement("tritonclient", "2.51.0") == "tritonclient[http,grpc]==2.51.0"
    assert wheelhouse_key({"a": "1"}, ["x"]) != wheelhouse_key({"a": "2"}, ["x"])
    assert wheelhouse_key({"a": "1"}, ["x"]) != wheelhouse_key({"a": "1"}, ["y"])


def test_systemd_unit_runs_the_same_server_through_the_launcher() -> None:
    s = settings()
    unit = server_unit.systemd_unit(s, Layout(s))
    assert "ExecStart=/opt/triton/bin/triton-server --model-repository /opt/triton/models" in unit
    assert "--http-address 127.0.0.1" in unit and "Restart=on-failure" in unit
    assert "StartLimitBurst=3" in unit  # a model that cannot load does not restart forever
    # its log is the journal's, each start's lines after a "--- start" line (the readiness wait splits there)
    assert "\nStandardOutput=journal\nStandardError=journal\nSyslogIdentifier=tritonserver\n" in unit
    assert '\nExecStartPre=/bin/echo "--- start"\nExecStart=' in unit
    assert "append:" not in unit and "ExecStartPost" not in unit  # no log file, no watcher: journald rotates
    # a reload starts a handover's new server with the same arguments but the metrics port (tasks/server/handover.py)
    reload = next(line for line in unit.splitlines() if line.startswith("ExecReload="))
    assert reload.startswith('ExecReload=/bin/sh -c "[ -n \\"$$TRITON_HANDOVER_METRICS_PORT\\" ]')
    assert reload.endswith(
        "--metrics-address 127.0.0.1 --exit-timeout-secs 10 " + unit.split("--exit-timeout-secs 10 ")[1].split("\n")[0]
    )
    assert "\nEnvironmentFile=-/opt/triton/run/handover.env\n" in unit and "\nNotifyAccess=main\n" in unit


@pytest.mark.parametrize(
    ("arg", "word"),
    [
        ("/opt/triton/bin/triton-env", "/opt/triton/bin/triton-env"),
        ("/opt/tri%ton/models", "/opt/tri%%ton/models"),  # %t would be systemd's runtime directory
        ("/opt/my models", '"/opt/my models"'),
        ("a$HOME", '"a$$HOME"'),  # systemd expands $HOME in Exec= lines
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
    ],
)
def test_systemd_words_are_quoted_as_systemd_reads_them(arg: str, word: str) -> None:
    assert server_unit.systemd_word(arg) == word


def test_systemd_unit_doubles_percent_signs_in_paths_and_refuses_control_characters() -> None:
    s = settings(triton_home="/srv/t%i")
    unit = server_unit.systemd_unit(s, Layout(s))
    assert "ExecStart=/srv/t%%i/bin/triton-server --model-repository /srv/t%%i/models" in unit
    with pytest.raises(ValueError, match="control character"):
        server_unit.systemd_word("a\nb")


def test_the_unit_runs_the_server_as_its_user_in_a_sandbox_that_may_write_only_its_places() -> None:
    s = settings(triton_home="/srv/t%i", persist_dir="/persist")
    unit = server_unit.systemd_unit(s, Layout(s))
    for line in ("User=triton-server", "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes"):
        assert f"\n{line}\n" in unit
    # not the run dir: root writes there
    assert "\nReadWritePaths=-/persist/huggingface/hub -/persist/python-bytecode\n" in unit
    as_root = server_unit.systemd_unit(settings(triton_user="root"), Layout(settings(triton_user="root")))
    assert "User=" not in as_root and "ProtectSystem" not in as_root


def test_upload_find_links_needs_a_controller_directory(tmp_path: Path) -> None:
    assert load({"pip_find_links": f"upload:{tmp_path}"}).pip_find_links == f"upload:{tmp_path}"
    with pytest.raises(SettingsError, match="existing directory on the controller"):
        load({"pip_find_links": f"upload:{tmp_path}/missing"})


def test_in_process_check_runs_on_the_device_the_server_uses() -> None:

    specs, _ = parse_models(
        [
            {"name": "g", "source": "hub:org/m@abc", "task": "text-classification"},
            {"name": "c", "source": "hub:org/m@abc", "task": "text-classification", "instance_kind": "KIND_CPU"},
        ]
    )
    layout = Layout(settings())
    on_gpu = {s["name"]: s["device"] for s in (models.verify_spec(specs, layout, [1, 2]))}
    assert on_gpu == {"g": "cuda:1", "c": "cpu"}
    on_cpu = {s["name"]: s["device"] for s in (models.verify_spec(specs, layout, []))}
    assert on_cpu == {"g": "cpu", "c": "cpu"}


MIB = 1 << 20


@pytest.mark.parametrize(
    ("device", "weights", "free", "plan", "words"),
    [
        ("cpu", 10_000 * MIB, None, "run", ""),  # the host's memory, not a GPU's, holds a CPU copy
        ("cuda:0", 260 * MIB, 14_000 * MIB, "run", ""),  # DistilBERT on a T4
        ("cuda:0", 14_000 * MIB, 1_200 * MIB, "skip", "needs ~17312 MiB on cuda:0, 1200 MiB is free"),
        ("cuda:0", 260 * MIB, None, "skip", "sees no cuda:0"),
    ],
)
def test_in_process_check_is_skipped_with_a_reason_when_a_second_copy_would_not_fit(
    device: str, weights: int, free: int | None, plan: str, words: str
) -> None:
    got, why = verify_models.in_process_plan(device, weights, free)
    assert got == plan and words in why


def test_weights_are_counted_once_per_format(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"x" * 300)
    (tmp_path / "pytorch_model.bin").write_bytes(b"x" * 500)  # the same weights again, another format
    (tmp_path / "config.json").write_bytes(b"x" * 10_000)
    assert verify_models.weights_bytes(str(tmp_path)) == 500


def test_url_passwords_are_masked_in_log_lines_and_settings_errors() -> None:
    import logging

    from config.secrets import MaskingFilter, mask

    assert (
        mask("GET https://ops:s3cr%40t@mirror.example/p.whl failed")
        == "GET https://ops:***@mirror.example/p.whl failed"
    )
    assert mask("http://mirror.example/p.whl") == "http://mirror.example/p.whl"
    record = logging.LogRecord("pyinfra", logging.INFO, "", 0, "fetch %s", ("http://u:pw@h/x",), None)
    assert MaskingFilter().filter(record) and record.getMessage() == "fetch http://u:***@h/x"
    with pytest.raises(SettingsError) as err:
        load({"triton_pytriton_url": "ftp://ops:s3cret@mirror.example/p.whl"})
    assert "s3cret" not in str(err.value) and "ftp://ops:***@mirror.example/p.whl" in str(err.value)


def test_fetch_sends_url_credentials_as_basic_auth_not_in_the_url() -> None:
    fetch = remote.load("fetch.py")
    req = fetch.request("http://ops:s3cr%40t@127.0.0.1:8080/p.whl")
    assert req.full_url == "http://127.0.0.1:8080/p.whl"
    assert req.get_header("Authorization") == "Basic b3BzOnMzY3JAdA=="  # ops:s3cr@t
    assert fetch.masked("http://ops:s3cr%40t@127.0.0.1:8080/p.whl") == "http://ops:***@127.0.0.1:8080/p.whl"


def test_pip_sources_with_a_password_go_to_a_pip_configuration_file() -> None:
    from tasks.venv.pip_commands import pip_config as _pip_config

    sources = [
        "--index-url",
        "https://u:pw@pypi.example/simple",
        "--find-links",
        "http://u:pw@w/",
        "--find-links",
        "/wh",
    ]
    assert _pip_config(sources) == (
        "[global]\nindex-url = https://u:pw@pypi.example/simple\nfind-links = http://u:pw@w/ /wh\n"
    )


@pytest.mark.parametrize(
    ("key", "nearest"),
    [
        ("ofline", "offline"),
        ("triton_http_prot", "triton_http_port"),
        ("modles", "models"),
        ("torch_verison", "torch_version"),
    ],
)
def test_a_misspelt_setting_stops_the_run_naming_the_nearest_one(key: str, nearest: str) -> None:
    with pytest.raises(SettingsError, match=rf"{key}: unknown setting \(a typo\?\); did you mean {nearest}\?"):
        load({key: "True"})


def test_a_name_under_our_prefixes_is_refused_even_far_from_every_setting() -> None:
    with pytest.raises(SettingsError, match="triton_zzz_qqq: unknown setting"):
        load({"triton_zzz_qqq": 1})
    with pytest.raises(SettingsError, match=r"venv_snapshots: unknown setting .*did you mean venv_snapshot"):
        load({"venv_snapshots": True})


def test_a_users_own_names_for_their_other_deploys_are_left_alone_and_said_once_with_v(capsys) -> None:
    from pyinfra.api import Config, Inventory, State

    from config.settings import load_inventory

    shared = {"nginx_port": 8080, "app_release": "2026.12", "ansible_host": "10.0.0.5"}
    assert load(shared).offline is False
    inventory = Inventory((["web1.example", "web2.example"], shared))
    state = State(inventory, Config())
    state.print_fact_info = True  # pyinfra's -v
    load_inventory(inventory)
    load_inventory(inventory)  # each host's deploy asks again: validated and said once per run
    assert capsys.readouterr().out == "--> settings: not ours, left alone: ansible_host, app_release, nginx_port\n"


def test_pyinfra_own_data_names_are_taken() -> None:
    data = {"ssh_port": 2222, "ssh_user": "ops", "_sudo": True, "_env": {"A": "1"}, "docker_identifier": "x"}
    assert load(data).offline is False


def test_a_version_pyinfra_read_as_a_number_is_refused_with_the_quoting_that_keeps_it() -> None:
    """--data triton_python=3.10 reaches the settings as the float 3.1: never taken as "3.1"."""
    with pytest.raises(
        SettingsError,
        match=r"""triton_python = 3.1: must be a string, got the number 3.1 .*--data 'triton_python="3.10"'""",
    ):
        load({"triton_python": 3.1})
    assert load({"triton_python": "3.10"}).triton_python == "3.10"


def test_the_hf_token_is_refused_for_a_plain_http_endpoint_but_loopback(monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(SettingsError, match="is plain http: the HF token") as err:
        load({"hf_token": "hf_secret", "hf_endpoint": "http://hub-mirror.corp"})
    assert "hf_secret" not in str(err.value)
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    with pytest.raises(SettingsError, match="is plain http"):
        load({"hf_endpoint": "http://10.0.0.5:8080"})
    assert load({"hf_endpoint": "http://127.0.0.1:8080"}).hf_token == "hf_from_env"  # a local stand-in
    assert load({"hf_endpoint": "https://hub-mirror.corp"}).hf_endpoint == "https://hub-mirror.corp"
    monkeypatch.delenv("HF_TOKEN")
    assert load({"hf_endpoint": "http://hub-mirror.corp"}).hf_token == ""  # no token: nothing to leak


FAKE_PIPELINE = """
import os
import numpy as np

with open(os.environ["FAKE_LOADS"], "a") as f:  # where the real one imports torch and transformers
    f.write("imported\\n")

def resolve(source):
    return os.environ["FAKE_WEIGHTS"]

class Pipeline:
    def __init__(self, task, source, **options):
        with open(os.environ["FAKE_LOADS"], "a") as f:
            f.write("loaded\\n")

    def run(self, texts):
        return {
            "LABEL": np.array([[t.upper().encode()] for t in texts], dtype=np.object_),
            "SCORE": np.array([[0.25]] * len(texts), dtype=np.float32),
        }

    def close(self):
        pass
"""


def test_the_in_process_answers_are_kept_per_model_and_venv_and_a_later_proof_loads_no_second_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify_models.compared_in_process on a temp repository with a stand-in pipeline: the first proof
    of a model digest runs it in-process and keeps its answers; the next compares with those (no second
    copy loaded, the pipeline's module not even imported) and still fails on a served answer that
    differs; a new digest runs it again."""
    import numpy as np

    (tmp_path / "repo" / "clf" / "1").mkdir(parents=True)
    (tmp_path / "repo" / "clf" / "1" / "hf_pipeline.py").write_text(FAKE_PIPELINE)
    (tmp_path / "weights").mkdir()
    loads = tmp_path / "loads"
    monkeypatch.setenv("FAKE_WEIGHTS", str(tmp_path / "weights"))
    monkeypatch.setenv("FAKE_LOADS", str(loads))
    monkeypatch.setenv("TRITON_REFERENCES", str(tmp_path / "kept"))
    texts = verify_models.TEXTS[:2]
    spec = {"name": "clf", "source": "path:/x", "task": "text-classification", "normalize": False}
    spec |= {"max_length": 8, "max_new_tokens": 1, "device": "cpu", "digest": "d1"}

    def served(score: float, n: int) -> dict:
        rows = verify_models.TEXTS[:n]
        label = np.array([[t.upper().encode()] for t in rows], dtype=np.object_)
        return {"LABEL": label, "SCORE": np.array([[score]] * n, dtype=np.float32)}

    def prove(score: float = 0.25, digest: str = "d1") -> str:
        return verify_models.compared_in_process(
            str(tmp_path / "repo"), {**spec, "digest": digest}, texts, served(score, 2), served(score, 1)
        )

    assert prove() == ", equal to in-process on cpu" and loads.read_text().count("loaded") == 1
    assert (tmp_path / "kept" / "clf.json").is_file()
    assert "kept from the first proof of this model and venv" in prove()
    assert loads.read_text().split() == ["imported", "loaded"]  # the kept answers: not even torch imported
    with pytest.raises(AssertionError, match=r"clf\.SCORE: served and in-process differ"):
        prove(score=0.5)  # the kept answers still judge what the server says
    assert prove(digest="d2") == ", equal to in-process on cpu" and loads.read_text().count("loaded") == 2
    monkeypatch.delenv("TRITON_REFERENCES")
    assert prove(digest="d2") == ", equal to in-process on cpu" and loads.read_text().count("loaded") == 3


def test_a_hub_models_weights_are_named_by_the_commit_its_revision_points_at(tmp_path, monkeypatch) -> None:
    """The kept answers' key names the weights without importing torch: a branch moved to another commit
    (a new fetch) is other weights, so the in-process check runs again."""
    folder = tmp_path / "hub" / "models--org--m"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("a" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert verify_models.weights_id("hub:org/m@main") == str(folder / "snapshots" / ("a" * 40))
    (folder / "refs" / "main").write_text("b" * 40)
    assert verify_models.weights_id("hub:org/m@main") == str(folder / "snapshots" / ("b" * 40))
    assert verify_models.weights_id(f"hub:org/m@{'c' * 40}") == str(folder / "snapshots" / ("c" * 40))
    assert verify_models.weights_id(f"path:{tmp_path}") == str(tmp_path)
