"""The `models` setting: which models to serve and how (HuggingFace models through the provisioner's
template, or Triton model folders users bring), parsed and checked."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from config import triton_model

MODEL_TASKS = ("text-classification", "feature-extraction", "text-generation")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_REVISION = re.compile(r"^[\w./-]{1,128}$")


@dataclass(frozen=True)
class ModelSpec:
    """One served model. What it leaves unset of copies, threads and batch sizes comes from the host
    (compat/serving.py)."""

    name: str
    source: str  # "hub:<repo id>@<revision>", "path:<directory on the controller>" or "triton:<model folder>"
    task: str = "text-classification"
    max_batch_size: int | None = None  # None: from the host (compat/serving.py); 0: no batching
    dynamic_batching: bool = True
    preferred_batch_sizes: tuple[int, ...] = ()  # (): half the max and the max
    max_queue_delay_us: int = 2000
    instance_count: int = 0  # 0: from the host (compat/serving.py); else that many copies
    intra_op_threads: int = 0  # torch's threads per copy; 0: from the host
    instance_kind: str = "auto"  # auto: KIND_GPU where the host has a GPU, else KIND_CPU
    normalize: bool = False  # feature-extraction: L2-normalise the pooled embedding
    max_length: int = 128  # tokenizer truncation
    max_new_tokens: int = 16  # text-generation

    @property
    def kind(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def ref(self) -> str:
        return self.source.split(":", 1)[1]

    @property
    def repo(self) -> str:
        return self.ref.split("@", 1)[0]

    @property
    def revision(self) -> str:
        return self.ref.split("@", 1)[1] if "@" in self.ref else "main"


def parse_models(value: Any) -> tuple[tuple[ModelSpec, ...], list[str]]:
    """The models setting -> specs, and a problem per bad entry (with the fix)."""
    if not isinstance(value, list | tuple):
        return (), [f"models must be a list of dicts, got {type(value).__name__}"]
    specs, problems, known = [], [], {f.name: f for f in fields(ModelSpec)}
    for i, entry in enumerate(value):
        where = f"models[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{where} must be a dict with at least name and source")
            continue
        unknown = sorted(set(entry) - set(known))
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}")
            continue
        missing = [k for k in ("name", "source") if k not in entry]
        if missing:
            problems.append(f"{where}: needs {' and '.join(missing)}")
            continue
        if str(entry.get("source", "")).startswith("triton:") and set(entry) - {"name", "source"}:
            extra = ", ".join(sorted(set(entry) - {"name", "source"}))
            problems.append(
                f"{where} ({entry.get('name')}): a Triton model folder brings its own config.pbtxt; set {extra} there"
            )
            continue
        data = dict(entry)
        if "preferred_batch_sizes" in data and isinstance(data["preferred_batch_sizes"], list):
            data["preferred_batch_sizes"] = tuple(data["preferred_batch_sizes"])
        spec = ModelSpec(**data)
        problems.extend(f"{where} ({entry.get('name')}): {p}" for p in _check(spec))
        specs.append(spec)
    names = [s.name for s in specs]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"models: the name {name!r} is used twice; each model needs its own")
    return tuple(specs), problems


def _climbs(value: str) -> bool:
    """A path part that is "." or "..", or a leading or doubled slash: a name that could leave the cache."""
    parts = value.split("/")
    return value.startswith("/") or any(p in ("", ".", "..") for p in parts)


def _check(spec: ModelSpec) -> list[str]:
    out = []
    if not isinstance(spec.name, str) or not _NAME.match(spec.name):
        out.append("name must be letters, digits, '_', '-', '.' (it is a directory and the model's name)")
    if (
        not isinstance(spec.source, str)
        or spec.source.split(":", 1)[0] not in ("hub", "path", "triton")
        or ":" not in spec.source
    ):
        out.append(
            "source must be 'hub:<repo id>@<revision>', 'path:<directory on the controller>' or "
            "'triton:<Triton model folder on the controller>'"
        )
    elif spec.kind == "hub":
        if not _REPO.match(spec.repo) or ("@" in spec.ref and not _REVISION.match(spec.revision)):
            out.append(f"source {spec.source!r}: expected hub:<org>/<name>@<revision>")
        elif _climbs(spec.repo) or _climbs(spec.revision):
            # huggingface_hub makes cache paths of both (refs/<revision>, models--<org>--<name>)
            out.append(
                f"source {spec.source!r}: a repo id or revision with '..', '.' or an empty part could name a "
                "path outside the HF cache; use the revision's commit or branch name"
            )
    elif not Path(spec.ref).is_absolute() or not Path(spec.ref).is_dir():
        out.append(f"source {spec.source!r}: no such directory on the controller (use an absolute path)")
    elif spec.kind == "triton":
        out += triton_model.check_dir(spec.name, Path(spec.ref))[1]
    if spec.task not in MODEL_TASKS:
        out.append(f"task must be one of {', '.join(MODEL_TASKS)}")
    ints = {
        "max_batch_size": (0, 1024),
        "max_queue_delay_us": (0, 10_000_000),
        "instance_count": (0, 64),
        "intra_op_threads": (0, 256),
        "max_length": (1, 32768),
        "max_new_tokens": (1, 4096),
    }
    for key, (low, high) in ints.items():
        v = getattr(spec, key)
        if key == "max_batch_size" and v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            out.append(f"{key} must be a whole number from {low} to {high}")
    for key in ("dynamic_batching", "normalize"):
        if not isinstance(getattr(spec, key), bool):
            out.append(f"{key} must be true or false")
    sizes = spec.preferred_batch_sizes
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in sizes):
        out.append("preferred_batch_sizes must be a list of positive whole numbers")
    elif sizes and spec.max_batch_size is None:
        out.append("preferred_batch_sizes: set max_batch_size with them (without, it comes from the host)")
    elif isinstance(spec.max_batch_size, int) and any(n > spec.max_batch_size for n in sizes):
        out.append(f"preferred_batch_sizes {list(sizes)} exceed max_batch_size {spec.max_batch_size}")
    if spec.instance_kind not in ("auto", "KIND_CPU", "KIND_GPU"):
        out.append("instance_kind must be auto, KIND_CPU or KIND_GPU")
    return out
