"""A Triton model directory a user brings (`triton:<dir>`): its config.pbtxt read through Triton's own
schema (the fields the provisioner needs taken from it) and the directory checked as Triton will read it,
on the controller, before anything on a host changes."""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Triton's data types (model_config.proto) -> the protocol's datatype names (KServe v2).
DATA_TYPES = {
    "TYPE_BOOL": "BOOL",
    "TYPE_UINT8": "UINT8",
    "TYPE_UINT16": "UINT16",
    "TYPE_UINT32": "UINT32",
    "TYPE_UINT64": "UINT64",
    "TYPE_INT8": "INT8",
    "TYPE_INT16": "INT16",
    "TYPE_INT32": "INT32",
    "TYPE_INT64": "INT64",
    "TYPE_FP16": "FP16",
    "TYPE_FP32": "FP32",
    "TYPE_FP64": "FP64",
    "TYPE_STRING": "BYTES",
    "TYPE_BF16": "BF16",
}
# A platform names its backend (Triton's model configuration docs).
PLATFORM_BACKENDS = {
    "onnxruntime_onnx": "onnxruntime",
    "tensorrt_plan": "tensorrt",
    "pytorch_libtorch": "pytorch",
    "tensorflow_savedmodel": "tensorflow",
    "tensorflow_graphdef": "tensorflow",
}
ENV_PARAMETER = "EXECUTION_ENV_PATH"  # the python backend's: the environment a model's stubs run in
KEEP_FILE = (
    ".triton-provisioner-keep"  # carries an empty version folder into the repository (tasks/models/repository.py)
)
MAX_BYTES = 2 << 30  # carried in the model repository as they are: larger models belong on the host's disk
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")


class ConfigError(ValueError):
    """config.pbtxt cannot be read: the message names the line."""


@dataclass(frozen=True)
class Tensor:
    name: str
    datatype: str  # the protocol's: BYTES, FP32 ...
    dims: tuple[int, ...]


@dataclass(frozen=True)
class TritonModelConfig:
    name: str  # "" where the file does not say (Triton takes the directory's name)
    backend: str  # the backend, from `backend` or `platform`
    max_batch_size: int
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    execution_env: str = ""  # the python backend's EXECUTION_ENV_PATH parameter, where it sets one


def _schema() -> Any:
    """Triton's own ModelConfig message (tritonclient's model_config_pb2, generated from Triton's
    model_config.proto), loaded from its file: importing the tritonclient.grpc package would import grpc
    too (0.3 s more on every run that checks a model folder)."""
    loaded = sys.modules.get("tritonclient.grpc.model_config_pb2")
    if loaded is None:
        found = importlib.util.find_spec("tritonclient")
        if found is None or not found.submodule_search_locations:
            raise ConfigError("tritonclient is not installed on the controller (bash scripts/setup.sh installs it)")
        path = Path(found.submodule_search_locations[0]) / "grpc" / "model_config_pb2.py"
        spec = importlib.util.spec_from_file_location("tritonclient.grpc.model_config_pb2", path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"tritonclient's model_config_pb2 cannot be loaded from {path}")
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        sys.modules[spec.name] = loaded
    return loaded


def _tensors(schema: Any, entries: Any, kind: str) -> tuple[Tensor, ...]:
    out = []
    for entry in entries:
        data_type = schema.DataType.Name(entry.data_type)
        if not entry.name or data_type not in DATA_TYPES:
            raise ConfigError(f"config.pbtxt: {kind} {entry.name or '?'} needs a name and a data_type (TYPE_FP32 ...)")
        out.append(Tensor(entry.name, DATA_TYPES[data_type], tuple(int(d) for d in entry.dims)))
    return tuple(out)


def read_config(text: str) -> TritonModelConfig:
    """config.pbtxt read as Triton reads it: through Triton's own schema (ModelConfig, protobuf's text
    format), so every field Triton accepts is read and one it rejects (a misspelt field, a wrong type,
    an unclosed block) is refused, naming the line; then the fields the provisioner needs, checked."""
    from google.protobuf import text_format

    schema = _schema()
    config = schema.ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        line = exc.GetLine()
        message = str(exc).split(" : ", 1)[-1]
        if line and 0 < line <= len(text.splitlines()):  # protobuf quotes the whole line first: the line number says it
            message = message.removeprefix(f"'{text.splitlines()[line - 1]}': ")
        raise ConfigError(f"config.pbtxt{f' line {line}' if line else ''}: {message}") from None
    backend = config.backend or PLATFORM_BACKENDS.get(config.platform, "")
    if not backend:
        raise ConfigError('config.pbtxt names no backend (backend: "python") or known platform')
    inputs, outputs = _tensors(schema, config.input, "input"), _tensors(schema, config.output, "output")
    if not inputs or not outputs:
        raise ConfigError("config.pbtxt needs its inputs and outputs (input [...], output [...])")
    env = config.parameters[ENV_PARAMETER].string_value if ENV_PARAMETER in config.parameters else ""
    return TritonModelConfig(config.name, backend, config.max_batch_size, inputs, outputs, env)


def with_execution_env(text: str, env_dir: str) -> str:
    """config.pbtxt with the python backend's EXECUTION_ENV_PATH naming env_dir (an unpacked environment:
    the backend sources its bin/activate before the stub starts): a parameters entry added at the end,
    which protobuf's text format allows for a repeated field."""
    value = env_dir.replace("\\", "\\\\").replace('"', '\\"')
    return text.rstrip("\n") + f'\nparameters: {{ key: "{ENV_PARAMETER}" value: {{ string_value: "{value}" }} }}\n'


def execution_env_in(lines: list[str]) -> str:
    """The EXECUTION_ENV_PATH that lines of a config.pbtxt name (as with_execution_env writes the entry:
    one line), "" where none does: the model's stubs then run in the venv."""
    for line in lines:
        found = re.search(rf'key: "{ENV_PARAMETER}" value: {{ string_value: "((?:[^"\\]|\\.)*)" }}', line)
        if found:
            return re.sub(r"\\(.)", r"\1", found.group(1))
    return ""


def check_dir(name: str, path: Path) -> tuple[TritonModelConfig | None, list[str]]:
    """The model directory as Triton will read it: (its config, the problems, each with its fix)."""
    versions = sorted(p for p in path.iterdir() if p.is_dir() and p.name.isdigit()) if path.is_dir() else []
    config_file = path / "config.pbtxt"
    if not config_file.is_file():
        misplaced = [v for v in versions if (v / "config.pbtxt").is_file()]
        if misplaced:
            return None, [
                f"config.pbtxt is in the version folder {misplaced[0].name}/: Triton reads it from the model's "
                f"folder; move it to {config_file}"
            ]
        return None, [f"{path} has no config.pbtxt: a Triton model folder holds config.pbtxt and a version folder"]
    try:
        config = read_config(config_file.read_text(errors="replace"))
    except ConfigError as exc:
        return None, [str(exc)]
    problems = []
    if config.name and config.name != name:
        problems.append(
            f"config.pbtxt names the model {config.name!r}, the entry {name!r}: Triton needs them equal (rename one)"
        )
    if not versions:
        problems.append(f"{path} has no version folder (1/): the model's files go in {path}/1/")
    elif config.backend == "python":
        problems += [
            f"{v}/model.py is missing: the python backend runs it" for v in versions if not (v / "model.py").is_file()
        ]
    problems += requirements(path)[1]
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    if size > MAX_BYTES:
        problems.append(
            f"{path} holds {size >> 20} MiB: more than {MAX_BYTES >> 20} MiB is not carried in the repository"
        )
    return config, problems


def requirements(path: Path) -> tuple[dict[str, str], list[str]]:
    """The pins of a requirements.txt beside the model (normalised name -> exact version), and the
    lines that are not exact pins (the venv is locked: each package at one version)."""
    req = path / "requirements.txt"
    if not req.is_file():
        return {}, []
    pins, problems = {}, []
    for number, raw in enumerate(req.read_text(errors="replace").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _PIN.match(line.replace(" ", ""))
        if m is None:
            problems.append(f"{req} line {number}: {line!r}: pin each package exactly (name==version)")
        else:
            pins[re.sub(r"[-_.]+", "-", m[1]).lower()] = m[2]
    return pins, problems


def empty_versions(path: Path) -> list[str]:
    """The version folders (1/, 2/ ...) that hold no file, by name."""
    versions = [p for p in path.iterdir() if p.is_dir() and p.name.isdigit()] if path.is_dir() else []
    return sorted(v.name for v in versions if not any(f.is_file() for f in v.rglob("*")))


def files(path: Path) -> dict[str, bytes]:
    """The directory's files (relative path -> bytes), as they are; no caches of Python's."""
    return {
        str(f.relative_to(path)): f.read_bytes()
        for f in sorted(path.rglob("*"))
        if f.is_file() and "__pycache__" not in f.relative_to(path).parts
    }
