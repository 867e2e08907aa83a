"""How each model is served on this host where its entry does not say: how many copies (instances),
how many torch threads each, and the batch sizes, from the host's CPUs and whether the model runs
on a GPU. The numbers are planner/tables.py's, measured (BENCHMARKS.md, section 8)."""

from __future__ import annotations

from dataclasses import dataclass

from config import triton_model
from config.models import ModelSpec
from config.versions import satisfies
from planner import tables
from planner.items import Item, blocker, ok


@dataclass(frozen=True)
class Serving:
    """One model's serving values, and where they come from (the plan shows both)."""

    instances: int
    threads: int  # torch's intra-op threads per instance
    max_batch_size: int
    preferred_batch_sizes: tuple[int, ...]
    why: str


def model_serving(specs: tuple[ModelSpec, ...], cpus: int | None, gpu: bool) -> dict[str, Serving]:
    """Model name -> its serving values on a host with this many CPUs (None: unknown) and a GPU or not."""
    out = {}
    n = max(cpus or 1, 1)
    for spec in specs:
        on_gpu = spec.instance_kind == "KIND_GPU" or (spec.instance_kind == "auto" and gpu)
        why = []
        instances = spec.instance_count or (tables.GPU_INSTANCES if on_gpu else tables.CPU_INSTANCES)
        why.append("instance_count" if spec.instance_count else "GPU: one copy" if on_gpu else "CPU: one copy")
        threads = spec.intra_op_threads or max(1, n // instances)
        why.append("intra_op_threads" if spec.intra_op_threads else f"{n} CPUs / {instances} copies")
        if spec.max_batch_size is not None:
            batch = spec.max_batch_size
            why.append("max_batch_size")
        else:
            batch = tables.GPU_MAX_BATCH_SIZE if on_gpu else tables.CPU_MAX_BATCH_SIZE
            why.append(f"batch {batch} on {'GPU' if on_gpu else 'CPU'}")
        preferred = spec.preferred_batch_sizes or tuple(sorted({max(1, batch // 2), batch})) if batch else ()
        out[spec.name] = Serving(instances, threads, batch, preferred, ", ".join(why))
    return out


def model_backends(specs: tuple[ModelSpec, ...]) -> tuple[str, ...]:
    """The backends the models use: python (the smoke model, every HuggingFace model), and each Triton
    model folder's."""
    found = {"python"}
    for spec in specs:
        if spec.kind == "triton":
            config, _ = triton_model.check_dir(spec.name, spec.model_folder)
            if config is not None:
                found.add(config.backend)
    return tuple(sorted(found))


def check_model_backends(specs: tuple[ModelSpec, ...], triton_source: str) -> list[Item]:
    """Each Triton model folder (triton:) asks for a backend the chosen build carries: the pytriton wheel's
    Triton has the python backend only. (NGC's tarball carries most; Triton names any it lacks at load.)"""
    items = []
    for spec in specs:
        if spec.kind != "triton":
            continue
        config, _ = triton_model.check_dir(spec.name, spec.model_folder)
        if config is None:
            continue  # the settings refused it already, naming why
        name = f"model {spec.name}"
        if triton_source == "pytriton" and config.backend not in tables.PYTRITON_BACKENDS:
            items.append(
                blocker(
                    name,
                    f"needs the {config.backend} backend; the pytriton build (triton_source = 'pytriton') carries "
                    f"{', '.join(tables.PYTRITON_BACKENDS)} only",
                    "set triton_source = 'image' with triton_image = nvcr.io/nvidia/tritonserver:TAG (NGC's image "
                    f"carries {config.backend}), or 'tarball' with a build that has it, or serve the model through "
                    "the python backend",
                )
            )
        else:
            items.append(ok(name, f"a Triton model folder for the {config.backend} backend"))
    return items


# The venv's own pins and the settings that set them (a model's requirements.txt may not move them).
PIN_SETTINGS = {
    "torch": "torch_version",
    "numpy": "numpy_version",
    "transformers": "transformers_version",
    "tokenizers": "tokenizers_version",
    "huggingface-hub": "huggingface_hub_version",
    "tritonclient": "tritonclient_version",
}


def model_pins(
    specs: tuple[ModelSpec, ...], pins: dict[str, str], numpy_lt2: bool = False
) -> tuple[dict[str, str], list[Item], dict[str, dict[str, str]]]:
    """The venv's pins with those of each Triton model folder's requirements.txt added, and the models that
    get a Python environment of their own (name -> its pins: the venv's, its own over them). A folder
    whose pin differs from the venv's own (torch, numpy, transformers ...) or another model's gets its own
    environment (environment "auto" or "own"); with environment "shared" it is refused, naming both
    (torch's +variant aside: torch==2.13.0 is the venv's 2.13.0+cpu)."""
    merged, owner, items = dict(pins), dict.fromkeys(pins, "the venv"), []
    own_envs: dict[str, dict[str, str]] = {}
    for spec in specs:
        if spec.kind != "triton":
            continue
        wanted, _ = triton_model.requirements(spec.model_folder)
        clashes = {
            name: version
            for name, version in sorted(wanted.items())
            if name in merged and merged[name].split("+")[0] != version.split("+")[0]
        }
        if spec.environment == "own" or (clashes and spec.environment == "auto"):
            env_pins, env_items = _own_env(spec, pins, wanted, numpy_lt2)
            items += env_items
            if not any(i.blocker for i in env_items):
                own_envs[spec.name] = env_pins
            continue
        for name, version in clashes.items():
            setting = PIN_SETTINGS.get(name)
            fix = f"pin {name}=={merged[name].split('+')[0]} in {spec.model_folder}/requirements.txt" + (
                f', or set {setting} = "{version}" if this build takes it' if setting else ""
            )
            detail = f"its requirements.txt pins {name}=={version}; {owner[name]} pins {name}=={merged[name]}"
            items.append(blocker(f"model {spec.name}", detail, fix + ', or environment = "auto" for one of its own'))
        if wanted and not clashes:
            for name, version in wanted.items():
                merged.setdefault(name, version)
                owner.setdefault(name, f"model {spec.name}")
            shown = ", ".join(f"{k}=={v}" for k, v in sorted(wanted.items()))
            items.append(ok(f"model {spec.name} pins", f"its requirements.txt adds to the venv: {shown}"))
    return merged, items, own_envs


def _own_env(
    spec: ModelSpec, pins: dict[str, str], wanted: dict[str, str], numpy_lt2: bool
) -> tuple[dict[str, str], list[Item]]:
    """A model's own environment: the venv's own pins with the model's over them; torch stays the venv's
    (its variant is the host's), numpy below 2 where the stub needs it, and the environment is the
    provisioner's to name (an EXECUTION_ENV_PATH in the folder's config.pbtxt is refused)."""
    name = f"model {spec.name}"
    config, _ = triton_model.check_dir(spec.name, spec.model_folder)
    torch = wanted.get("torch")
    problems = []
    if config is not None and config.execution_env:
        problems.append(
            blocker(
                name,
                f"its config.pbtxt names its own environment ({triton_model.ENV_PARAMETER} "
                f"{config.execution_env}) and its requirements.txt asks for one",
                f"remove {triton_model.ENV_PARAMETER} from {spec.model_folder}/config.pbtxt (the provisioner builds "
                'and names it), or set environment = "shared" to use yours',
            )
        )
    if config is not None and config.backend != "python":
        problems.append(
            blocker(
                name,
                f"an environment of its own is the python backend's; it is {config.backend}",
                'set environment = "shared"',
            )
        )
    if torch and "torch" in pins and torch.split("+")[0] != pins["torch"].split("+")[0]:
        problems.append(
            blocker(
                name,
                f"its requirements.txt pins torch=={torch}; an environment of its own keeps the venv's torch "
                f"{pins['torch']} (its variant is chosen for the host's driver)",
                f"pin torch=={pins['torch'].split('+')[0]} in {spec.model_folder}/requirements.txt, "
                "or set torch_version",
            )
        )
    numpy = wanted.get("numpy", "")
    if numpy_lt2 and numpy and not satisfies(numpy, "<2"):
        problems.append(
            blocker(
                name,
                f"its requirements.txt pins numpy=={numpy}; this build's python backend stub needs numpy<2 in every "
                "environment it runs",
                f"pin numpy 1.x in {spec.model_folder}/requirements.txt (1.26.4 is the last)",
            )
        )
    if problems:
        return {}, problems
    env_pins = {**pins, **{k: v for k, v in wanted.items() if k != "torch"}}
    changed = ", ".join(f"{k}=={v}" for k, v in sorted(wanted.items()) if pins.get(k, "").split("+")[0] != v)
    why = f"its requirements.txt pins {changed or 'what the venv pins'}"
    return env_pins, [ok(f"model {spec.name} environment", f"its own, beside the venv: {why}")]
