"""Triton model folders users bring (`triton:<dir>`, config/triton_model.py): config.pbtxt read as Triton's
text format (the seeds' own config, one line as the write-up prints it, among them), the folder checked as
Triton reads it, the build's backends, the repository and the proof made from the config."""

from __future__ import annotations

from pathlib import Path

import pytest

import remote
from config import triton_model
from config.layout import Layout
from config.models import parse_models
from config.settings import SettingsError, load
from tasks.models import repository as models
from tasks.models.serving import check_model_backends

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "triton_models"
SEED_CONFIG = (FIXTURES / "seed-config.pbtxt").read_text()
ONNX_CONFIG = """
# an ONNX model, as Triton's docs write one
name: "densenet"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    dims: [ 1, 3, 224, 224 ]
  }
]
output {
  name: "fc6_1"
  data_type: TYPE_FP32
  dims: [ -1, 1000 ]
}
"""


def folder(root: Path, name: str, config: str, model_py: bool = True, where: str = "") -> Path:
    path = root / name
    (path / "1").mkdir(parents=True)
    (path / where / "config.pbtxt").write_text(config)
    if model_py:
        (path / "1" / "model.py").write_text("class TritonPythonModel:\n    pass\n")
    return path


def test_the_seeds_config_is_read_as_triton_reads_it() -> None:
    config = triton_model.read_config(SEED_CONFIG)
    assert (config.name, config.backend, config.max_batch_size) == ("text_classifier", "python", 8)
    assert [(i.name, i.datatype, i.dims) for i in config.inputs] == [("TEXT", "BYTES", (1,))]
    assert [(o.name, o.datatype, o.dims) for o in config.outputs] == [("LABEL", "BYTES", (1,)), ("SCORE", "FP32", (1,))]


def test_every_field_triton_accepts_is_read_as_triton_reads_it() -> None:
    """Fields the provisioner does not use (instance groups, dynamic batching, parameters, a reshape, the
    angle-bracket and comma forms of the text format) are read, not refused."""
    text = (
        SEED_CONFIG
        + """
instance_group < count: 2, kind: KIND_CPU >
dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 100 }
parameters: { key: "EXECUTION_ENV_PATH" value: { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }
"""
    )
    config = triton_model.read_config(text)
    assert (config.name, config.max_batch_size, len(config.inputs)) == ("text_classifier", 8, 1)


def test_a_platform_names_its_backend_and_a_lone_block_is_one_entry() -> None:
    config = triton_model.read_config(ONNX_CONFIG)
    assert (config.backend, config.max_batch_size) == ("onnxruntime", 0)
    assert config.inputs[0].dims == (1, 3, 224, 224) and config.outputs[0].dims == (-1, 1000)


@pytest.mark.parametrize(
    "text, why",
    [
        ('name: "x" backend: "python" input [ { name: "A" data_type: TYPE_FP32 dims: [ 1 ] ', 'line 1: Expected "}"'),
        (
            'name: "x" input [ { name: "A" data_type: TYPE_FP32 dims: [1] } ] '
            'output [ { name: "B" data_type: TYPE_FP32 dims: [1] } ]',
            "no backend",
        ),
        (
            'backend: "python" input [ { name: "A" data_type: FLOAT dims: [1] } ] output [ ]',
            '^config.pbtxt line 1: Enum type "inference.DataType" has no value named FLOAT.$',
        ),
        ('backend: "python" max_batch_size: eight input [ ] output [ ]', "line 1: Couldn't parse integer: eight"),
        # Triton's schema knows every field: a misspelt one is refused, as Triton refuses it at load
        (
            'backend: "python"\ninstance_groups [ { kind: KIND_CPU } ]',
            'line 2: .* has no field named "instance_groups"',
        ),
        ('backend: "python" max_batch_size: "8"', "line 1: Couldn't parse integer"),
    ],
    ids=["unclosed", "no-backend", "bad-type", "bad-batch", "unknown-field", "quoted-number"],
)
def test_a_config_triton_would_refuse_is_named(text: str, why: str) -> None:
    with pytest.raises(triton_model.ConfigError, match=why):
        triton_model.read_config(text)


def test_the_seeds_common_mistake_config_in_the_version_folder_is_refused_with_the_fix(tmp_path) -> None:
    path = folder(tmp_path, "text_classifier", SEED_CONFIG, where="1")
    config, problems = triton_model.check_dir("text_classifier", path)
    assert config is None
    assert problems == [
        f"config.pbtxt is in the version folder 1/: Triton reads it from the model's folder; move it to "
        f"{path}/config.pbtxt"
    ]


def test_a_folder_is_checked_as_triton_reads_it(tmp_path) -> None:
    good = folder(tmp_path, "text_classifier", SEED_CONFIG)
    assert triton_model.check_dir("text_classifier", good)[1] == []
    assert "names the model 'text_classifier', the entry 'clf'" in triton_model.check_dir("clf", good)[1][0]
    no_code = folder(tmp_path / "b", "text_classifier", SEED_CONFIG, model_py=False)
    assert triton_model.check_dir("text_classifier", no_code)[1] == [
        f"{no_code}/1/model.py is missing: the python backend runs it"
    ]
    flat = tmp_path / "c" / "text_classifier"
    flat.mkdir(parents=True)
    (flat / "config.pbtxt").write_text(SEED_CONFIG)
    assert "has no version folder (1/)" in triton_model.check_dir("text_classifier", flat)[1][0]


def test_the_settings_refuse_a_bad_folder_and_keys_its_config_holds(tmp_path) -> None:
    mistake = folder(tmp_path, "text_classifier", SEED_CONFIG, where="1")
    with pytest.raises(SettingsError, match="is in the version folder 1/"):
        load({"models": [{"name": "text_classifier", "source": f"triton:{mistake}"}]})
    good = folder(tmp_path / "g", "text_classifier", SEED_CONFIG)
    _, problems = parse_models([{"name": "text_classifier", "source": f"triton:{good}", "max_batch_size": 4}])
    assert problems == [
        "models[0] (text_classifier): a Triton model folder brings its own config.pbtxt; set max_batch_size there"
    ]
    assert load({"models": [{"name": "text_classifier", "source": f"triton:{good}"}]}).models[0].kind == "triton"


def test_a_backend_the_pytriton_build_lacks_blocks_the_host_naming_the_build_that_has_it(tmp_path) -> None:
    onnx = folder(tmp_path, "densenet", ONNX_CONFIG, model_py=False)
    python = folder(tmp_path, "text_classifier", SEED_CONFIG)
    specs, problems = parse_models(
        [{"name": "densenet", "source": f"triton:{onnx}"}, {"name": "text_classifier", "source": f"triton:{python}"}]
    )
    assert problems == []
    items = check_model_backends(specs, "pytriton")
    assert [(i.name, i.blocker) for i in items] == [("model densenet", True), ("model text_classifier", False)]
    assert "needs the onnxruntime backend; the pytriton build (triton_source = 'pytriton') carries python only" in (
        items[0].detail
    )
    assert "triton_source = 'image' with triton_image = nvcr.io/nvidia/tritonserver:TAG" in items[0].fix
    assert [i.status for i in check_model_backends(specs, "tarball")] == ["ok", "ok"]


def test_an_empty_version_folder_is_carried_into_the_repository(tmp_path) -> None:
    """A version folder of a backend that reads no file holds nothing; Triton needs it all the same."""
    config = SEED_CONFIG.replace("text_classifier", "ens").replace('backend: "python"', 'backend: "identity"')
    path = folder(tmp_path, "ens", config, model_py=False)
    (path / "2" / "sub").mkdir(parents=True)  # folders, but no file
    s = load({"models": [{"name": "ens", "source": f"triton:{path}"}]})
    files = models.repository_files(s.models, Layout(s), [])
    assert {k: v for k, v in files.items() if k.startswith("ens/")} == {
        "ens/config.pbtxt": config.encode(),
        "ens/1/.triton-provisioner-keep": b"",
        "ens/2/.triton-provisioner-keep": b"",
    }


def test_the_folder_goes_into_the_repository_as_it_is_and_its_proof_comes_from_its_config(tmp_path) -> None:
    path = folder(tmp_path, "text_classifier", SEED_CONFIG)
    (path / "1" / "weights").mkdir()
    (path / "1" / "weights" / "config.json").write_text("{}")
    (path / "1" / "__pycache__").mkdir()
    (path / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    s = load({"models": [{"name": "text_classifier", "source": f"triton:{path}"}]})
    files = models.repository_files(s.models, Layout(s), [])
    mine = {k: v for k, v in files.items() if k.startswith("text_classifier/")}
    assert mine == {
        "text_classifier/config.pbtxt": SEED_CONFIG.encode(),
        "text_classifier/1/model.py": (path / "1" / "model.py").read_bytes(),
        "text_classifier/1/weights/config.json": b"{}",
    }
    assert (models.verify_spec(s.models, Layout(s), [])) == [
        {
            "name": "text_classifier",
            "task": "triton",
            "max_batch_size": 8,
            "inputs": [{"name": "TEXT", "datatype": "BYTES", "dims": [1]}],
            "outputs": ["LABEL", "SCORE"],
        }
    ]


def test_the_inputs_made_from_a_config_have_its_types_and_shapes() -> None:
    import tritonclient.http as thttp

    verify = remote.load("verify_models.py")
    spec = {
        "name": "m",
        "max_batch_size": 8,
        "inputs": [
            {"name": "TEXT", "datatype": "BYTES", "dims": [1]},
            {"name": "X", "datatype": "FP32", "dims": [-1, 3]},
        ],
    }
    inputs, shown = verify.made_inputs(thttp, spec)
    assert [(i.name(), i.datatype(), i.shape()) for i in inputs] == [
        ("TEXT", "BYTES", [1, 1]),
        ("X", "FP32", [1, 1, 3]),
    ]
    assert shown == "TEXT BYTES[1, 1], X FP32[1, 1, 3]"
    unbatched, _ = verify.made_inputs(thttp, {**spec, "max_batch_size": 0})
    assert [i.shape() for i in unbatched] == [[1], [1, 3]]


def test_a_requirements_txt_beside_the_model_adds_its_pins_and_a_conflict_is_refused_naming_both(tmp_path) -> None:
    from tasks.models.serving import model_pins

    good = folder(tmp_path / "a", "text_classifier", SEED_CONFIG)
    (good / "requirements.txt").write_text("# what model.py imports beyond the venv\nsix==1.17.0\nTorch==2.13.0\n")
    clash = folder(tmp_path / "b", "other", SEED_CONFIG.replace("text_classifier", "other"))
    (clash / "requirements.txt").write_text("numpy==2.1.0\nsix==1.16.0\n")
    venv = {"torch": "2.13.0+cpu", "numpy": "1.26.4", "transformers": "4.57.1"}
    specs, problems = parse_models(
        [
            {"name": "text_classifier", "source": f"triton:{good}"},
            {"name": "other", "source": f"triton:{clash}", "environment": "shared"},
        ]
    )
    assert problems == []
    pins, items, own = model_pins(specs, venv)
    assert own == {}
    assert pins == {**venv, "six": "1.17.0"}  # torch==2.13.0 is the venv's 2.13.0+cpu
    assert [(i.name, i.status, i.blocker) for i in items] == [
        ("model text_classifier pins", "ok", False),
        ("model other", "incompatible", True),  # refused before any change: provisioning cannot fix it
        ("model other", "incompatible", True),
    ]
    assert items[1].detail == "its requirements.txt pins numpy==2.1.0; the venv pins numpy==1.26.4"
    assert items[1].fix.startswith(f"pin numpy==1.26.4 in {clash}/requirements.txt, or set numpy_version")
    assert items[1].fix.endswith('or environment = "auto" for one of its own')
    assert items[2].detail == "its requirements.txt pins six==1.16.0; model text_classifier pins six==1.17.0"


def test_a_model_whose_pins_clash_gets_an_environment_of_its_own_and_the_venv_keeps_its_pins(tmp_path) -> None:
    from tasks.models.serving import model_pins

    venv = {"torch": "2.13.0+cpu", "numpy": "1.26.4", "transformers": "4.57.1"}
    clash = folder(tmp_path / "a", "text_classifier", SEED_CONFIG)
    (clash / "requirements.txt").write_text("transformers==4.56.2\nsix==1.16.0\ntorch==2.13.0\n")
    plain = folder(tmp_path / "b", "other", SEED_CONFIG.replace("text_classifier", "other"))
    (plain / "requirements.txt").write_text("six==1.17.0\n")
    alone = folder(tmp_path / "c", "alone", SEED_CONFIG.replace("text_classifier", "alone"))
    specs, problems = parse_models(
        [
            {"name": "text_classifier", "source": f"triton:{clash}"},
            {"name": "other", "source": f"triton:{plain}"},
            {"name": "alone", "source": f"triton:{alone}", "environment": "own"},
        ]
    )
    assert problems == []
    pins, items, own = model_pins(specs, venv)
    assert pins == {**venv, "six": "1.17.0"}  # the clash moved neither transformers nor six of the venv
    assert own == {
        "text_classifier": {"torch": "2.13.0+cpu", "numpy": "1.26.4", "transformers": "4.56.2", "six": "1.16.0"},
        "alone": venv,  # asked for: the venv's pins, in an environment of its own
    }
    assert [(i.name, i.status, i.blocker) for i in items] == [
        ("model text_classifier environment", "ok", False),
        ("model other pins", "ok", False),
        ("model alone environment", "ok", False),
    ]
    assert items[0].detail == "its own, beside the venv: its requirements.txt pins six==1.16.0, transformers==4.56.2"


def test_an_environment_of_its_own_keeps_the_venvs_torch_a_stub_s_numpy_and_names_its_own_path(tmp_path) -> None:
    from tasks.models.serving import model_pins

    venv = {"torch": "2.13.0+cpu", "numpy": "1.26.4", "transformers": "4.57.1"}
    torch = folder(tmp_path / "a", "a", SEED_CONFIG.replace("text_classifier", "a"))
    (torch / "requirements.txt").write_text("torch==2.5.0\n")
    numpy = folder(tmp_path / "b", "b", SEED_CONFIG.replace("text_classifier", "b"))
    (numpy / "requirements.txt").write_text("numpy==2.0.0rc1\n")  # a release candidate of 2 is numpy 2
    named = folder(
        tmp_path / "c",
        "c",
        SEED_CONFIG.replace("text_classifier", "c")
        + '\nparameters: { key: "EXECUTION_ENV_PATH" value: { string_value: "/srv/envs/c" } }\n',
    )
    (named / "requirements.txt").write_text("transformers==4.56.2\n")
    specs, problems = parse_models([{"name": n, "source": f"triton:{tmp_path / n / n}"} for n in "abc"])
    assert problems == []
    pins, items, own = model_pins(specs, venv, numpy_lt2=True)
    assert own == {} and pins == venv
    assert [(i.name, i.blocker) for i in items] == [("model a", True), ("model b", True), ("model c", True)]
    assert "keeps the venv's torch 2.13.0+cpu" in items[0].detail
    assert items[1].fix == f"pin numpy 1.x in {numpy}/requirements.txt (1.26.4 is the last)"
    assert items[2].detail.startswith("its config.pbtxt names its own environment (EXECUTION_ENV_PATH /srv/envs/c)")
    _, numpy2_without_the_stubs_need, _ = model_pins(specs[1:2], venv, numpy_lt2=False)
    assert numpy2_without_the_stubs_need[0].name == "model b environment"
    onnx = folder(tmp_path / "d", "densenet", ONNX_CONFIG, model_py=False)
    (onnx / "requirements.txt").write_text("transformers==4.56.2\n")
    other, problems = parse_models([{"name": "densenet", "source": f"triton:{onnx}"}])
    _, refused, own = model_pins(other, venv)
    assert own == {} and [(i.name, i.blocker, i.detail) for i in refused] == [
        ("model densenet", True, "an environment of its own is the python backend's; it is onnxruntime")
    ]


def test_the_environment_is_named_in_the_config_triton_reads_and_only_a_folder_may_have_one(tmp_path) -> None:
    text = triton_model.with_execution_env(SEED_CONFIG, '/opt/triton/venv.model-envs/x-"q"')
    assert triton_model.read_config(text).execution_env == '/opt/triton/venv.model-envs/x-"q"'
    assert triton_model.read_config(SEED_CONFIG).execution_env == ""
    # as status reads it back from the deployed config.pbtxt's lines (grep), without protobuf
    assert triton_model.execution_env_in(text.splitlines()) == '/opt/triton/venv.model-envs/x-"q"'
    assert triton_model.execution_env_in(SEED_CONFIG.splitlines()) == ""
    _, problems = parse_models([{"name": "m", "source": "hub:org/m@main", "environment": "own"}])
    assert problems == [
        "models[0] (m): environment: only a Triton model folder (triton:) may have an environment of its own; "
        "this model runs in the shared venv"
    ]
    _, problems = parse_models([{"name": "m", "source": f"triton:{tmp_path}", "environment": "mine"}])
    assert "environment must be one of auto, own, shared" in " ".join(problems)


def test_a_requirement_that_is_not_an_exact_pin_is_refused(tmp_path) -> None:
    path = folder(tmp_path, "text_classifier", SEED_CONFIG)
    (path / "requirements.txt").write_text("six>=1.16\n")
    assert triton_model.check_dir("text_classifier", path)[1] == [
        f"{path}/requirements.txt line 1: 'six>=1.16': pin each package exactly (name==version)"
    ]
