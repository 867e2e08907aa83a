"""What a second copy of each loaded model needs, and the memory free for it: a model is reloaded beside
its running copy (tasks/models/control.py) only where both fit."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class ModelMemoryData(TypedDict):
    available_kb: int | None  # MemAvailable: what the kernel can give without swapping; None unread
    rss_kb: dict[str, int]  # model -> resident memory of its python backend stubs, summed over its copies
    gpu_mib: dict[str, int]  # model -> GPU memory its stubs use (nvidia-smi's compute apps)
    gpu_free_mib: list[int]  # free memory of each GPU


class ModelMemory(FactBase[ModelMemoryData]):
    """Per loaded model (its stubs under models_dir), its memory on the host and GPUs; the memory free."""

    def command(self, models_dir: str) -> StringCommand:
        return shell("model_memory.sh", models_dir)

    @staticmethod
    def default() -> ModelMemoryData:
        return ModelMemoryData(available_kb=None, rss_kb={}, gpu_mib={}, gpu_free_mib=[])

    def process(self, output: list[str]) -> ModelMemoryData:
        data = self.default()
        model_of: dict[str, str] = {}
        gpu_rows: list[tuple[str, int]] = []
        for line in output:
            key, _, value = line.partition("=")
            fields = value.split()
            if key == "AVAIL" and value.isdigit() and int(value):
                data["available_kb"] = int(value)
            elif key == "STUB" and len(fields) == 3 and fields[0].isdigit() and fields[1].isdigit():
                pid, rss, name = fields
                model_of[pid] = name
                data["rss_kb"][name] = data["rss_kb"].get(name, 0) + int(rss)
            elif key == "GPU" and len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
                gpu_rows.append((fields[0], int(fields[1])))
            elif key == "GPUFREE" and len(fields) == 2 and fields[1].isdigit():
                data["gpu_free_mib"].append(int(fields[1]))
        for pid, mib in gpu_rows:
            if pid in model_of:
                data["gpu_mib"][model_of[pid]] = data["gpu_mib"].get(model_of[pid], 0) + mib
        return data
