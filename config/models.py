"""The `models` setting: which models to serve and how (HuggingFace models through the provisioner's
template, or Triton model folders users bring), parsed and checked."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from config import hub_folders, triton_model

MODEL_TASKS = ("text-classification", "feature-extraction", "text-generation")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_REVISION = re.compile(r"^[\w./-]{1,128}$")
ENVIRONMENTS = ("auto", "own", "shared")
# what an entry for a Triton model folder may set: the rest is the folder's config.pbtxt
TRITON_KEYS = {"name", "source", "environment"}


@dataclass(frozen=True)
class ModelSpec:
    """One served model. What it leaves unset of copies, threads and batch sizes comes from the host
    (tasks/models/serving.py)."""

    name: str
    # "hub:<repo id>@<revision>", "path:<directory on the controller>", "triton:<model folder>" or
    # "triton:hub:<repo id>@<revision>" (a hub repository holding a Triton model folder)
    source: str
    task: str = "text-classification"
    max_batch_size: int | None = None  # None: from the host (tasks/models/serving.py); 0: no batching
    dynamic_batching: bool = True
    preferred_batch_sizes: tuple[int, ...] = ()  # (): half the max and the max
    max_queue_delay_us: int = 2000
    instance_count: int = 0  # 0: from the host (tasks/models/serving.py); else that many copies
    intra_op_threads: int = 0  # torch's threads per copy; 0: from the host
    instance_kind: str = "auto"  # auto: KIND_GPU where the host has a GPU, else KIND_CPU
    normalize: bool = False  # feature-extraction: L2-normalise the pooled embedding
    max_length: int = 128  # tokenizer truncation
    max_new_tokens: int = 16  # text-generation
    # the Python environment its stubs run in (a Triton model folder's): "auto" its own where its requirements.txt
    # pins what the shared venv pins otherwise, "own" always its own, "shared" the venv (a clash is refused)
    environment: str = "auto"
    folder: str = ""  # triton: where the model folder is on the controller (set by parse_models, not a setting)

    @property
    def kind(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def ref(self) -> str:
        return self.source.split(":", 1)[1]

    @property
    def from_hub(self) -> bool:
        """A Triton model folder that a hub repository holds (triton:hub:...)."""
        return self.kind == "triton" and self.ref.startswith(hub_folders.PREFIX)

    @property
    def repo(self) -> str:
        return self._hub_ref.split("@", 1)[0]

    @property
    def revision(self) -> str:
        return self._hub_ref.split("@", 1)[1] if "@" in self._hub_ref else "main"

    @property
    def _hub_ref(self) -> str:
        return self.ref.removeprefix(hub_folders.PREFIX) if self.from_hub else self.ref

    @property
    def model_folder(self) -> Path:
        """A triton: model's folder on the controller (the user's, or the hub fetch's in the cache)."""
        return Path(self.folder or self.ref)


def parse_models(value: Any, hub: hub_folders.HubAccess | None = None) -> tuple[tuple[ModelSpec, ...], list[str]]:
    """The models setting -> specs, and a problem per bad entry (with the fix). hub: how the controller
    fetches a triton:hub: model's folder (None: not fetched, nor checked, while other settings are bad)."""
    if not isinstance(value, list | tuple):
        return (), [f"models must be a list of dicts, got {type(value).__name__}"]
    specs, problems, known = [], [], {f.name: f for f in fields(ModelSpec) if f.name != "folder"}
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
        if str(entry.get("source", "")).startswith("triton:") and set(entry) - TRITON_KEYS:
            extra = ", ".join(sorted(set(entry) - TRITON_KEYS))
            problems.append(
                f"{where} ({entry.get('name')}): a Triton model folder brings its own config.pbtxt; set {extra} there"
            )
            continue
        data = dict(entry)
        if "preferred_batch_sizes" in data and isinstance(data["preferred_batch_sizes"], list):
            data["preferred_batch_sizes"] = tuple(data["preferred_batch_sizes"])
        spec = ModelSpec(**data)
        spec, fetched = _model_folder(spec, hub)
        if fetched is not None:
            problems.extend(f"{where} ({entry.get('name')}): {p}" for p in fetched or _check(spec))
        specs.append(spec)
    names = [s.name for s in specs]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"models: the name {name!r} is used twice; each model needs its own")
    return tuple(specs), problems


def _model_folder(spec: ModelSpec, hub: hub_folders.HubAccess | None) -> tuple[ModelSpec, list[str] | None]:
    """A triton: spec with its folder on the controller: the path it names, or (triton:hub:) the folder
    fetched from the hub into the controller's cache; else the problem (None: not fetched, no hub)."""
    if not isinstance(spec.source, str) or spec.kind != "triton":
        return spec, []
    if not spec.from_hub:
        return replace(spec, folder=spec.ref), []
    problems = _hub_ref_problems(spec)
    if problems:
        return spec, problems
    if hub is None:
        return spec, None
    path, why = hub_folders.folder(hub, spec.repo, spec.revision, spec.name)
    return (replace(spec, folder=str(path)), []) if path else (spec, [f"source {spec.source!r}: {why}"])


def _hub_ref_problems(spec: ModelSpec) -> list[str]:
    if not _REPO.match(spec.repo) or ("@" in spec._hub_ref and not _REVISION.match(spec.revision)):
        return [
            f"source {spec.source!r}: expected {spec.kind}:{'hub:' if spec.from_hub else ''}<org>/<name>@<revision>"
        ]
    if _climbs(spec.repo) or _climbs(spec.revision):
        # huggingface_hub makes cache paths of both (refs/<revision>, models--<org>--<name>)
        return [
            f"source {spec.source!r}: a repo id or revision with '..', '.' or an empty part could name a "
            "path outside the HF cache; use the revision's commit or branch name"
        ]
    return []


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
            "source must be 'hub:<repo id>@<revision>', 'path:<directory on the controller>', "
            "'triton:<Triton model folder on the controller>' or 'triton:hub:<repo id>@<revision>'"
        )
    elif spec.kind == "hub":
        out += _hub_ref_problems(spec)
    elif spec.from_hub:
        out += triton_model.check_dir(spec.name, spec.model_folder)[1]
    elif not Path(spec.ref).is_absolute() or not Path(spec.ref).is_dir():
        out.append(f"source {spec.source!r}: no such directory on the controller (use an absolute path)")
    elif spec.kind == "triton":
        out += triton_model.check_dir(spec.name, spec.model_folder)[1]
    if spec.environment not in ENVIRONMENTS:
        out.append(f"environment must be one of {', '.join(ENVIRONMENTS)}")
    elif spec.environment == "own" and spec.kind != "triton":
        out.append(
            "environment: only a Triton model folder (triton:) may have an environment of its own; "
            "this model runs in the shared venv"
        )
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
