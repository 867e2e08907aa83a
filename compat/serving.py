"""How each model is served on this host where its entry does not say: how many copies (instances),
how many torch threads each, and the batch sizes, from the host's CPUs and whether the model runs
on a GPU. The numbers are compat/tables.py's, measured (BENCHMARKS.md, section 8)."""

from __future__ import annotations

from dataclasses import dataclass

from compat import tables
from compat.items import Item, blocker, ok
from config import triton_model
from config.models import ModelSpec


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


def model_pins(specs: tuple[ModelSpec, ...], pins: dict[str, str]) -> tuple[dict[str, str], list[Item]]:
    """The venv's pins with those of each Triton model folder's requirements.txt added; a pin that
    differs from the venv's own (torch, numpy, transformers ...) or another model's is refused, naming
    both (torch's +variant aside: torch==2.13.0 is the venv's 2.13.0+cpu)."""
    merged, owner, items = dict(pins), dict.fromkeys(pins, "the venv"), []
    for spec in specs:
        if spec.kind != "triton":
            continue
        wanted, _ = triton_model.requirements(spec.model_folder)
        for name, version in sorted(wanted.items()):
            have = merged.get(name)
            if have is None:
                merged[name], owner[name] = version, f"model {spec.name}"
            elif have.split("+")[0] != version.split("+")[0]:
                setting = PIN_SETTINGS.get(name)
                fix = f"pin {name}=={have.split('+')[0]} in {spec.model_folder}/requirements.txt" + (
                    f', or set {setting} = "{version}" if this build takes it' if setting else ""
                )
                items.append(
                    blocker(
                        f"model {spec.name}",
                        f"its requirements.txt pins {name}=={version}; {owner[name]} pins {name}=={have}",
                        fix,
                    )
                )
        if wanted and not any(i.name == f"model {spec.name}" for i in items):
            shown = ", ".join(f"{k}=={v}" for k, v in sorted(wanted.items()))
            items.append(ok(f"model {spec.name} pins", f"its requirements.txt adds to the venv: {shown}"))
    return merged, items
