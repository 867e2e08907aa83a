"""Facts about NVIDIA GPUs and their driver, from nvidia-smi. No driver means no GPU, not an error."""

from __future__ import annotations

import re
from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class Gpu(TypedDict):
    index: int
    name: str
    memory_mib: int | None
    compute_capability: str | None  # "9.0"; None where the driver is too old to report it


class NvidiaData(TypedDict):
    driver_version: str | None  # "550.54.15"
    cuda_version: str | None  # the highest CUDA the driver supports, "12.4"
    gpus: list[Gpu]
    error: str | None  # nvidia-smi present but failing: what it said


class Nvidia(FactBase[NvidiaData | None]):
    """The driver, its CUDA version and each GPU; None where nvidia-smi is not installed."""

    def command(self) -> StringCommand:
        return shell("nvidia.sh")

    def process(self, output: list[str]) -> NvidiaData | None:
        if not output:
            return None
        data = NvidiaData(driver_version=None, cuda_version=None, gpus=[], error=None)
        section = ""
        for line in output:
            if line in ("@query", "@header"):
                section = line
                continue
            if section == "@query":
                gpu = _parse_gpu_row(line)
                if gpu:
                    data["gpus"].append(gpu[0])
                    data["driver_version"] = data["driver_version"] or gpu[1]
                elif "failed" in line.lower() or "not found" in line.lower():
                    data["error"] = data["error"] or line.strip()
            elif section == "@header":
                m = re.search(r"CUDA (?:UMD )?Version:\s*(\d+\.\d+)", line)  # "CUDA UMD" from driver 610
                if m:
                    data["cuda_version"] = m.group(1)
                m = re.search(r"(?:Driver|KMD) Version:\s*(\d+(?:\.\d+)+)", line)
                if m:
                    data["driver_version"] = data["driver_version"] or m.group(1)
        if data["gpus"]:
            data["error"] = None
        return data


def _parse_gpu_row(line: str) -> tuple[Gpu, str] | None:
    """One CSV row: index, name (may hold commas), memory MiB, driver[, compute capability]."""
    cells = [c.strip() for c in line.split(",")]
    if len(cells) < 4 or not cells[0].isdigit():
        return None
    cap = None
    if re.fullmatch(r"\d+\.\d+", cells[-1]) and len(cells) >= 5:
        cap = cells.pop()
    driver = cells.pop()
    memory = cells.pop()
    if not re.fullmatch(r"\d+(?:\.\d+)+", driver):
        return None
    return (
        Gpu(
            index=int(cells[0]),
            name=", ".join(cells[1:]),
            memory_mib=int(memory) if memory.isdigit() else None,
            compute_capability=cap,
        ),
        driver,
    )
