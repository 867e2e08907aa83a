"""How each model is served on this host where its entry does not say: how many copies (instances)
and how many torch threads each, from the host's CPUs. The numbers are compat/tables.py's, measured
(BENCHMARKS.md, section 8)."""

from __future__ import annotations

from compat import tables as t
from config.models import ModelSpec


def model_serving(specs: tuple[ModelSpec, ...], cpus: int | None, gpu: bool) -> dict[str, tuple[int, int, str]]:
    """Model name -> (instances, torch threads per instance, where they come from)."""
    out = {}
    n = max(cpus or 1, 1)
    for spec in specs:
        on_gpu = spec.instance_kind == "KIND_GPU" or (spec.instance_kind == "auto" and gpu)
        if spec.instance_count:
            instances, why = spec.instance_count, "instance_count"
        elif on_gpu:
            instances, why = t.GPU_INSTANCES, "one copy per GPU"
        else:
            instances = max(1, n // t.CPU_THREADS_PER_INSTANCE)
            why = f"{n} CPUs, {t.CPU_THREADS_PER_INSTANCE} thread(s) per copy"
        threads = spec.intra_op_threads or max(1, n // instances)
        if spec.intra_op_threads:
            why += ", intra_op_threads"
        out[spec.name] = (instances, threads, why)
    return out
