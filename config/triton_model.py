"""A Triton model directory a user brings (`triton:<dir>`): its config.pbtxt read (protobuf text format,
the fields the provisioner needs) and the directory checked as Triton will read it, on the controller,
before anything on a host changes."""

from __future__ import annotations

import re
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
MAX_BYTES = 2 << 30  # carried in the model repository as they are: larger models belong on the host's disk
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
_TOKEN = re.compile(r'\s+|#[^\n]*|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[{}\[\]:,;<>]|[^\s{}\[\]:,;<>"\'#]+')


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


def _tokens(text: str) -> list[tuple[str, int]]:
    out, line = [], 1
    for m in _TOKEN.finditer(text):
        token = m.group()
        if not token.isspace() and not token.startswith("#"):
            out.append((token, line))
        line += token.count("\n")
    if sum(len(m.group()) for m in _TOKEN.finditer(text)) != len(text):
        raise ConfigError("config.pbtxt holds characters the text format does not allow")
    return out


def parse(text: str) -> dict[str, list[Any]]:
    """The protobuf text format as a dict: each field name -> its values (a list: any field may repeat);
    a message is a dict of the same kind, a scalar its text (strings unquoted)."""
    tokens = _tokens(text)
    pos = 0

    def take(expected: str | None = None) -> tuple[str, int]:
        nonlocal pos
        if pos >= len(tokens):
            raise ConfigError(f"config.pbtxt ends early{f' (expected {expected!r})' if expected else ''}")
        token = tokens[pos]
        if expected and token[0] != expected:
            raise ConfigError(f"config.pbtxt line {token[1]}: expected {expected!r}, found {token[0]!r}")
        pos += 1
        return token

    def message(end: str | None) -> dict[str, list[Any]]:
        fields: dict[str, list[Any]] = {}
        while pos < len(tokens) and tokens[pos][0] != end:
            name, line = take()
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ConfigError(f"config.pbtxt line {line}: {name!r} is not a field name")
            if pos < len(tokens) and tokens[pos][0] == ":":
                take(":")
            fields.setdefault(name, []).extend(values(line))
            if pos < len(tokens) and tokens[pos][0] in (",", ";"):
                take()
        if end is not None:
            take(end)
        return fields

    def values(line: int) -> list[Any]:
        if pos >= len(tokens):
            raise ConfigError(f"config.pbtxt line {line}: a field without a value")
        token = tokens[pos][0]
        if token in ("{", "<"):
            take()
            return [message("}" if token == "{" else ">")]
        if token == "[":
            take("[")
            out: list[Any] = []
            while tokens[pos][0] != "]":
                out.extend(values(line))
                if tokens[pos][0] == ",":
                    take(",")
            take("]")
            return out
        scalar, _ = take()
        if scalar in ("}", ">", "]", ":", ","):
            raise ConfigError(f"config.pbtxt line {line}: a field without a value")
        return [scalar[1:-1] if scalar[:1] in "\"'" else scalar]

    parsed = message(None)
    return parsed


def _one(fields: dict[str, list[Any]], name: str, default: Any = "") -> Any:
    return fields.get(name, [default])[-1]


def _tensors(fields: dict[str, list[Any]], kind: str) -> tuple[Tensor, ...]:
    out = []
    for entry in fields.get(kind, []):
        if not isinstance(entry, dict):
            raise ConfigError(f"config.pbtxt: each {kind} is a {{ name, data_type, dims }} block")
        name, data_type = _one(entry, "name"), _one(entry, "data_type")
        if not name or data_type not in DATA_TYPES:
            raise ConfigError(f"config.pbtxt: {kind} {name or '?'} needs a name and a data_type (TYPE_FP32 ...)")
        try:
            dims = tuple(int(d) for d in entry.get("dims", []))
        except ValueError:
            raise ConfigError(f"config.pbtxt: {kind} {name}: dims must be whole numbers") from None
        out.append(Tensor(str(name), DATA_TYPES[data_type], dims))
    return tuple(out)


def read_config(text: str) -> TritonModelConfig:
    """config.pbtxt's fields the provisioner uses, checked."""
    fields = parse(text)
    backend = str(_one(fields, "backend")) or PLATFORM_BACKENDS.get(str(_one(fields, "platform")), "")
    if not backend:
        raise ConfigError('config.pbtxt names no backend (backend: "python") or known platform')
    try:
        max_batch_size = int(_one(fields, "max_batch_size", "0"))
    except ValueError:
        raise ConfigError("config.pbtxt: max_batch_size must be a whole number") from None
    inputs, outputs = _tensors(fields, "input"), _tensors(fields, "output")
    if not inputs or not outputs:
        raise ConfigError("config.pbtxt needs its inputs and outputs (input [...], output [...])")
    return TritonModelConfig(str(_one(fields, "name")), backend, max_batch_size, inputs, outputs)


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


def files(path: Path) -> dict[str, bytes]:
    """The directory's files (relative path -> bytes), as they are; no caches of Python's."""
    return {
        str(f.relative_to(path)): f.read_bytes()
        for f in sorted(path.rglob("*"))
        if f.is_file() and "__pycache__" not in f.relative_to(path).parts
    }
