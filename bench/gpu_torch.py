"""What a torch says of itself, and what is wrong between that and the torch variant the rules choose
(tasks/venv/torch_choice.py) for the same driver and GPUs: the core of bench/gpu_check.py, kept pure."""

from __future__ import annotations

from typing import TypedDict

from facts.nvidia import NvidiaData
from planner import tables
from tasks.venv.torch_choice import covers


class TorchReport(TypedDict):
    """What a torch says of itself (torch_report())."""

    version: str  # "2.11.0+cu130"
    cuda: str | None  # torch.version.cuda: "13.0"; None in a CPU wheel
    available: bool  # torch.cuda.is_available()
    arch_list: list[str]  # torch.cuda.get_arch_list(): ["sm_75", "sm_80", ..., "compute_120"]
    capabilities: list[str]  # each visible device's (major, minor) as "9.0"


def torch_minor(version: str) -> str:
    """ "2.11.0+cu130" -> "2.11"."""
    return ".".join(version.split("+")[0].split(".")[:2])


def torch_variant(report: TorchReport) -> str:
    """The wheel's variant: its local version ("+cu130"), else from torch.version.cuda; "cpu" without CUDA."""
    local = report["version"].partition("+")[2]
    if local:
        return local
    return "cu" + report["cuda"].replace(".", "") if report["cuda"] else "cpu"


def wheel_archs_reported(arch_list: list[str]) -> tuple[str, ...]:
    """get_arch_list() in the table's form: ["sm_90", "compute_120", "sm_120"] -> ("9.0", "12.0+PTX")."""
    kernels = {a.removeprefix("sm_") for a in arch_list if a.startswith("sm_")}
    ptx = {a.removeprefix("compute_") for a in arch_list if a.startswith("compute_")}

    def dotted(digits: str) -> str:
        return f"{digits[:-1]}.{digits[-1]}"

    return tuple(dotted(d) + ("+PTX" if d in ptx else "") for d in sorted(kernels | ptx, key=lambda d: (len(d), d)))


def torch_findings(nvidia: NvidiaData | None, chosen: str | None, report: TorchReport) -> list[str]:
    """What is wrong between the rules' choice for this machine's torch minor and that torch itself; []
    where they agree. chosen: the rules' variant for the GPU (None: none can run), "cpu" without one."""
    gpus = (nvidia or {}).get("gpus") or []
    variant = torch_variant(report)
    minor = torch_minor(report["version"])
    problems = []
    if not gpus:
        if report["available"]:
            problems.append("torch sees a GPU that the Nvidia fact does not")
        return problems
    if chosen != variant:
        problems.append(
            f"the rules choose {chosen} for torch {minor} on this driver; this machine's torch is {variant}"
        )
    if variant == "cpu":
        return problems
    if not report["available"]:
        problems.append(f"torch {report['version']} does not see the GPU (torch.cuda.is_available() is False)")
    reported = wheel_archs_reported(report["arch_list"])
    for gpu in gpus:
        cc = gpu.get("compute_capability")
        if cc and not covers(reported, cc):
            problems.append(f"GPU {gpu['index']} is sm_{cc.replace('.', '')}; the wheel has kernels for {reported}")
    table = tables.TORCH_CUDA_ARCHS.get(minor, {}).get(variant)
    if table is not None and set(table) != set(reported):
        problems.append(
            f"planner/tables.py TORCH_CUDA_ARCHS[{minor!r}][{variant!r}] is {table}; the wheel reports {reported}"
        )
    return problems


def torch_report() -> TorchReport | None:
    """This interpreter's torch, or None where it has none."""
    try:
        import torch
    except ImportError:
        return None
    available = bool(torch.cuda.is_available())
    count = torch.cuda.device_count() if available else 0
    return TorchReport(
        version=torch.__version__,
        cuda=torch.version.cuda,
        available=available,
        arch_list=list(torch.cuda.get_arch_list()) if available else [],
        capabilities=[".".join(map(str, torch.cuda.get_device_capability(i))) for i in range(count)],
    )
