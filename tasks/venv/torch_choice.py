"""Which torch wheel the venv gets: the CUDA variant the host's driver runs (cpu without a GPU),
where it comes from, and the venv's pins."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner import tables
from planner.assessment import HostFacts
from planner.items import Item, blocker, ok
from config.settings import Settings
from config.versions import version_key
from facts.nvidia import NvidiaData


@dataclass(frozen=True)
class TorchChoice:
    """The chosen variant (None where none can run) and the venv's exact pins (torch only when chosen)."""

    variant: str | None = None  # "cpu", "cu126"
    requirement: str | None = None  # "torch==2.14.1+cu126"
    index: str | None = None  # the variant's index URL, or None (find-links / a mirror)
    pins: dict[str, str] = field(default_factory=dict)


def driver_cuda(nvidia: NvidiaData) -> str | None:
    """The highest CUDA the driver supports: nvidia-smi says; else from the minimum-driver table."""
    if nvidia.get("cuda_version"):
        return nvidia["cuda_version"]
    driver = nvidia.get("driver_version")
    if not driver:
        return None
    best = None
    for cuda, minimum in tables.CUDA_TOOLKIT_DRIVER.items():
        if version_key(driver) >= version_key(minimum) and (best is None or version_key(cuda) > version_key(best)):
            best = cuda
    return best


def variant_cuda(variant: str) -> str:
    """ "cu126" -> "12.6"."""
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def _major(cuda: str) -> str:
    return cuda.split(".")[0]


def covers(archs: tuple[str, ...], capability: str) -> bool:
    """A wheel built for `archs` has kernels for a GPU of this compute capability: one of the same major
    and a minor not above it (a cubin for X.y runs on X.z, z >= y), or PTX of one not above it [cuda-arch]."""
    cc = version_key(capability)
    for arch in archs:
        built = version_key(arch.removesuffix("+PTX"))
        if built.release[0] == cc.release[0] and built <= cc:
            return True
        if arch.endswith("+PTX") and built <= cc:
            return True
    return False


def wheel_archs(torch_minor: str, variant: str) -> tuple[str, ...] | None:
    """The architectures a torch minor's variant carries kernels for; None where the table has none."""
    return tables.TORCH_CUDA_ARCHS.get(torch_minor, {}).get(variant)


def sm_list(archs: tuple[str, ...]) -> str:
    """("7.5", "12.0+PTX") -> "sm_75, sm_120 (+PTX)"."""
    return ", ".join(
        "sm_" + a.removesuffix("+PTX").replace(".", "") + (" (+PTX)" if a.endswith("+PTX") else "") for a in archs
    )


def _fits_gpus(torch_minor: str, variant: str, capabilities: list[str]) -> bool:
    """The variant has kernels for every GPU (a GPU whose capability the driver does not report is taken
    as covered); without the table: CUDA 13 builds need compute capability 7.5 [torch-matrix]."""
    archs = wheel_archs(torch_minor, variant)
    if archs is not None:
        return all(covers(archs, cc) for cc in capabilities)
    low = any(version_key(cc) < version_key(tables.CUDA13_MIN_COMPUTE_CAPABILITY) for cc in capabilities)
    return not (low and version_key(variant_cuda(variant)) >= version_key("13"))


def choose_torch_variant(nvidia: NvidiaData, torch_minor: str, variants: tuple[str, ...]) -> tuple[str | None, str]:
    """(variant, the rule that chose it) for auto on a GPU host, or (None, why none can run).

    Only variants with kernels for every GPU count [torch-archs]. Of those, the highest the driver supports
    fully (its CUDA <= the driver's); else, by CUDA minor-version compatibility, the one of the driver's
    CUDA major closest to the driver's CUDA (it leans least on a driver older than its toolkit), when the
    driver meets that major's minimum.
    """
    cuda = driver_cuda(nvidia)
    driver = nvidia.get("driver_version") or "?"
    capabilities = [g["compute_capability"] for g in nvidia.get("gpus", []) if g.get("compute_capability")]
    usable = [v for v in variants if _fits_gpus(torch_minor, v, capabilities)]
    if cuda is None:
        return None, f"driver {driver} reports no CUDA version"
    full = [v for v in usable if version_key(variant_cuda(v)) <= version_key(cuda)]
    if full:
        best = max(full, key=lambda v: version_key(variant_cuda(v)))
        return best, f"the driver's CUDA {cuda} runs {best} fully (the newest such variant of torch {torch_minor})"
    major = _major(cuda)
    minimum = tables.CUDA_MAJOR_MIN_DRIVER.get(major)
    same = [v for v in usable if _major(variant_cuda(v)) == major]
    if same and minimum and driver != "?" and version_key(driver) >= version_key(minimum):
        best = min(same, key=lambda v: version_key(variant_cuda(v)))
        return best, (
            f"CUDA minor-version compatibility: {best} runs on a CUDA {major}.x driver >= {minimum} "
            f"(driver {driver}, CUDA {cuda}); no variant of torch {torch_minor} is <= {cuda}, {best} is the closest"
        )
    why = f"driver {driver} supports CUDA {cuda}; torch {torch_minor} has {', '.join(variants)}"
    left_out = [v for v in variants if v not in usable]
    if left_out:
        gpus = ", ".join(sorted({f"sm_{cc.replace('.', '')}" for cc in capabilities}))
        why += f"; {', '.join(left_out)} carry no kernels for this GPU ({gpus})"
    return None, why + (f", none of CUDA {major}.x" if not left_out else "")


def _torch_fix(nvidia: NvidiaData, torch_minor: str, variants: tuple[str, ...]) -> str:
    """What makes GPU torch possible: an older torch with the driver's CUDA major, or a newer driver."""
    cuda = driver_cuda(nvidia) or "0"
    older = [
        m
        for m, vs in tables.TORCH_CUDA_VARIANTS.items()
        if version_key(m) < version_key(torch_minor) and choose_torch_variant(nvidia, m, vs)[0]
    ]
    capabilities = [g["compute_capability"] for g in nvidia.get("gpus", []) if g.get("compute_capability")]
    fitting = [v for v in variants if _fits_gpus(torch_minor, v, capabilities)]  # a newer driver helps these
    hints = []
    if older:
        last = max(older, key=version_key)
        chosen = choose_torch_variant(nvidia, last, tables.TORCH_CUDA_VARIANTS[last])[0] or ""
        archs = wheel_archs(last, chosen)
        carries = f"its {chosen} carries {sm_list(archs)} and " if archs else ""
        hints.append(f"torch_version {last}.x ({carries}its wheels run on CUDA {_major(cuda)}.x)")
    if fitting:
        lowest = min(fitting, key=lambda v: version_key(variant_cuda(v)))
        hints.append(f"an NVIDIA driver >= {tables.CUDA_MAJOR_MIN_DRIVER.get(_major(variant_cuda(lowest)), '?')}")
    hints.append("torch_variant = cpu")
    return "use " + ", or ".join(hints)


def _gpu_item(nvidia: NvidiaData | None) -> Item:
    gpus = (nvidia or {}).get("gpus") or []
    if gpus:
        names = ", ".join(f"{g['name']} ({g['compute_capability'] or '?'})" for g in gpus)
        return ok("gpu", f"driver {nvidia['driver_version']}, CUDA {driver_cuda(nvidia)}: {names}")
    if (nvidia or {}).get("error"):
        return ok("gpu", f"nvidia-smi fails ({nvidia['error']}); serving on CPU")
    return ok("gpu", "no NVIDIA driver: serving on CPU")


def _variant(facts: HostFacts, settings: Settings, minor: str) -> tuple[str | None, str, str]:
    """(variant, the rule that chose it, the fix where it is None)."""
    variants = tables.TORCH_CUDA_VARIANTS.get(minor)
    gpus = (facts.nvidia or {}).get("gpus") or []
    variant = settings.torch_variant
    if variant == "cpu":
        return "cpu", "torch_variant", ""
    if variant == "auto" and not gpus:
        return "cpu", "no GPU", ""
    if variant == "auto":
        if variants is None:
            return (
                None,
                f"no CUDA variant table for torch {minor}, so auto cannot choose one",
                "set torch_variant (cpu or cuXYZ) or a torch_version listed in planner/tables.py",
            )
        chosen, rule = choose_torch_variant(facts.nvidia, minor, variants)
        return chosen, rule, "" if chosen else _torch_fix(facts.nvidia, minor, variants)
    if variants is not None and variant not in variants:
        return None, f"torch {minor} has no {variant} wheels", f"use one of: cpu, {', '.join(variants)}"
    if not gpus:
        return (
            None,
            f"torch_variant = {variant} but the host has no usable GPU",
            "set torch_variant = auto or cpu, or install the NVIDIA driver",
        )
    runs, why = choose_torch_variant(facts.nvidia, minor, (variant,))
    if runs is None:
        return None, why, "upgrade the NVIDIA driver, or set torch_variant = auto or cpu"
    return variant, "torch_variant", ""


def choose_torch(facts: HostFacts, settings: Settings) -> tuple[TorchChoice, list[Item]]:
    """The torch variant (auto: from the driver), the index it comes from, and the venv's pins.
    Where no variant can run, the pins still hold everything but torch (so the audit checks them)."""
    pins = {
        "numpy": settings.numpy_version,
        "transformers": settings.transformers_version,
        "tokenizers": settings.tokenizers_version,
        "huggingface-hub": settings.huggingface_hub_version,
        "tritonclient": settings.tritonclient_version,
    }
    minor = ".".join(settings.torch_version.split(".")[:2])
    variant, rule, fix = _variant(facts, settings, minor)
    items = [_gpu_item(facts.nvidia)]
    if variant is None:
        return TorchChoice(pins=pins), [*items, blocker("torch", rule, fix)]
    requirement = f"torch=={settings.torch_version}+{variant}"
    index = f"{settings.torch_index_url.rstrip('/')}/{variant}" if settings.torch_index_url else None
    choice = TorchChoice(variant, requirement, index, {"torch": f"{settings.torch_version}+{variant}", **pins})
    archs = wheel_archs(minor, variant) if variant != "cpu" else None
    kernels = f"; kernels for {sm_list(archs)}" if archs else ""
    return choice, [*items, ok("torch", f"{requirement} (variant {variant}: {rule}{kernels})")]
