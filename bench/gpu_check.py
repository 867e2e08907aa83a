"""The GPU path on the machine this runs on, in one short run (issue 32 part 3): what the provisioner's
facts read from the real nvidia-smi, what its rules choose, and whether this machine's own torch agrees.

    python -m bench.gpu_check [--out DIR] [--source "what this machine is"] [--device cuda:0]

On the lent GPU machine (../.library/device: Python 3.12 with torch, no pyinfra, no network), the
controller's own packages travel as wheels made here:

    .venv/bin/pip download -d .gpu-wheels --python-version 3.12 --only-binary=:all: \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
        pyinfra==3.10.0 distro==1.9.0                                   # 14 MB; .gpu-wheels/ is ignored
    # run(carry=[".gpu-wheels"], timeout_s=300), one command:
    python3 -m pip install -q --no-index --find-links .gpu-wheels --target /tmp/deps pyinfra==3.10.0 \
        distro==1.9.0 && PYTHONPATH=/tmp/deps python3 -m bench.gpu_check --out $OUT --source "lent H200"

Steps, each ok, skipped (with why) or FAILED:
  nvidia  the Nvidia fact's own command (remote/facts/nvidia.sh) run here, read by its process()
  rules   the torch variant tasks/venv/torch_choice.py chooses for that driver and those GPUs, for the
          product's torch minor and for this machine's own torch minor
  torch   this machine's torch: its variant is the one the rules choose for its minor, it sees the GPUs
          (torch.cuda.is_available()), get_arch_list() covers each GPU's sm_XY, and planner/tables.py's
          TORCH_CUDA_ARCHS for that wheel lists what the wheel itself reports
  config  config.pbtxt rendered by tasks/models/repository.py for this machine's GPUs (KIND_GPU, its gpus) or CPU
  memory  the ModelMemory fact's command with a model held on the GPU by a child process named as
          Triton's stub (so the fact's own pid-to-model join is exercised): the GPU's free memory and the
          model's, read from the real nvidia-smi
  model   the provisioner's model code (templates/models/hf/hf_pipeline.py) on cuda:0 and on the CPU with
          the same weights: the same labels, scores within 1e-3
Without nvidia-smi the GPU steps are skipped and the rest runs: that is the CPU half, which the unit tests
run (tests/unit/test_gpu_check.py). Writes DIR/gpu_check.json and each fact's output as a fixture in the
unit tests' format (tests/fixtures/facts/), with where it came from. Exit status 1 where a step failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypedDict

from pyinfra.api import StringCommand

from bench.gpu_torch import torch_findings, torch_minor, torch_report
from config.layout import Layout
from config.models import parse_models
from config.settings import Settings, load
from facts.memory import ModelMemory
from facts.nvidia import Nvidia
from planner import tables
from tasks.venv.torch_choice import choose_torch_variant, driver_cuda

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "templates" / "models" / "hf" / "hf_pipeline.py"
STUB_NAME = "triton_python_backend_stub"  # what the ModelMemory fact looks for in a process's command line


class Step(TypedDict):
    name: str
    status: str  # ok, skipped, FAILED
    detail: str


def run_fact_command(command: StringCommand | str) -> list[str]:
    """A fact's command run here as pyinfra runs it on a host (sh -c), its output lines."""
    text = command.get_raw_value() if isinstance(command, StringCommand) else command
    done = subprocess.run(["sh", "-c", text], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"the fact's command exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return [line.rstrip("\n") for line in done.stdout.splitlines()]


def fixture(command: StringCommand, args: list[Any], output: list[str], result: Any, source: str) -> dict:
    """A fact's real output in the unit tests' fixture format (tests/capture_fixture.py writes the same)."""
    from tests.unit.test_facts import command_text

    return {"args": args, "source": source, "output": output, "fact": result, "command": command_text(command)}


class Check:
    """The steps' results, printed as they come and written at the end."""

    def __init__(self, out: Path, source: str) -> None:
        self.out, self.source, self.steps = out, source, list[Step]()
        self.data: dict[str, Any] = {}

    def step(self, name: str, body: Callable[[], tuple[str, str]]) -> None:
        t0 = time.monotonic()
        try:
            status, detail = body()
        except Exception as exc:  # a step's failure is reported, and the next steps run
            status, detail = "FAILED", f"{type(exc).__name__}: {exc}"
        self.steps.append(Step(name=name, status=status, detail=detail))
        print(f"{name:7} {status:8} {detail}  ({time.monotonic() - t0:.1f} s)", flush=True)

    def save_fixture(self, fact: str, case: str, spec: dict) -> None:
        folder = self.out / "fixtures" / fact
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{case}.json").write_text(json.dumps(spec, indent=2) + "\n")


@dataclass(frozen=True)
class _Run:
    """What the steps share: the check that records them, the default settings, the command line, where the
    figures come from, and what one step leaves for the next (state: nvidia, torch, chosen)."""

    check: Check
    settings: Settings
    args: argparse.Namespace
    source: str
    state: dict[str, Any]


def _nvidia(run: _Run) -> tuple[str, str]:
    """The GPUs and driver nvidia-smi reports (its output kept as a fact fixture)."""
    command = Nvidia().command()
    output = run_fact_command(command)
    fact = Nvidia().process(output) if output else None
    run.state["nvidia"] = fact
    run.check.data["nvidia"] = fact
    if fact is None:
        return "skipped", "no nvidia-smi here: the GPU steps are skipped (the CPU half runs)"
    case = (fact["gpus"][0]["name"].split()[-1].lower() if fact["gpus"] else "no-gpu") + f"-{fact['driver_version']}"
    run.check.save_fixture("nvidia.Nvidia", case, fixture(command, [], output, fact, run.source))
    if not fact["gpus"]:
        return "FAILED", f"nvidia-smi runs but lists no GPU: {fact['error']}"
    gpus = ", ".join(
        f"{g['name']} (sm_{(g['compute_capability'] or '?').replace('.', '')}, {g['memory_mib']} MiB)"
        for g in fact["gpus"]
    )
    return "ok", f"driver {fact['driver_version']}, CUDA {driver_cuda(fact)}: {gpus}"


def _rules(run: _Run) -> tuple[str, str]:
    """The torch variant the rules choose for this host, for the pinned torch and this Python's."""
    fact, report = run.state["nvidia"], run.state["torch"]
    minors = [torch_minor(run.settings.torch_version)]
    if report and torch_minor(report["version"]) not in minors:
        minors.append(torch_minor(report["version"]))
    said, chosen = [], {}
    for minor in minors:
        variants = tables.TORCH_CUDA_VARIANTS.get(minor)
        if not (fact or {}).get("gpus"):
            chosen[minor], why = "cpu", "no GPU"
        elif variants is None:
            chosen[minor], why = None, f"no CUDA variant table for torch {minor}"
        else:
            chosen[minor], why = choose_torch_variant(fact, minor, variants)
        said.append(f"torch {minor}: {chosen[minor]} ({why})")
    run.state["chosen"] = chosen
    run.check.data["rules"] = chosen
    return ("ok" if all(chosen.values()) else "FAILED"), "; ".join(said)


def _torch(run: _Run) -> tuple[str, str]:
    """This Python's torch against the rules' choice: its CUDA, whether it sees the GPU, its kernels."""
    report = run.state["torch"]
    run.check.data["torch"] = report
    if report is None:
        return "skipped", "no torch in this Python"
    chosen = run.state.get("chosen", {}).get(torch_minor(report["version"]))
    problems = torch_findings(run.state["nvidia"], chosen, report)
    seen = f"{report['version']} (CUDA {report['cuda']}), sees a GPU: {report['available']}"
    if report["arch_list"]:
        seen += f", kernels {' '.join(report['arch_list'])}"
    return ("FAILED", seen + "; " + "; ".join(problems)) if problems else ("ok", seen + "; as the rules choose")


def _config(run: _Run) -> tuple[str, str]:
    """A hub model's config.pbtxt as the provisioner writes it: KIND_GPU where there is a GPU."""
    gpu_ids = [g["index"] for g in (run.state["nvidia"] or {}).get("gpus", [])]
    specs, problems = parse_models([{"name": "classifier", "source": "hub:org/model@main"}])
    assert not problems, problems
    from tasks.models.repository import render_config

    text = render_config(specs[0], Layout(run.settings), gpu_ids)
    (run.args.out / "config.pbtxt").write_text(text)
    group = next(line for line in text.splitlines() if line.startswith("instance_group"))
    want = "KIND_GPU" if gpu_ids else "KIND_CPU"
    return ("ok" if want in group else "FAILED"), group


def _memory(run: _Run) -> tuple[str, str]:
    """ModelMemory with a stub-named child holding 256 MiB of the GPU (its output kept as a fixture)."""
    if not (run.state["nvidia"] or {}).get("gpus"):
        return "skipped", "no GPU"
    with tempfile.TemporaryDirectory() as models_dir:
        holder = _gpu_holder(models_dir, run.args.device)
        try:
            command = ModelMemory().command(models_dir)
            output = run_fact_command(command)
        finally:
            holder.kill()
            holder.wait()
    fact = ModelMemory().process(output)
    run.check.data["memory"] = fact
    spec = fixture(command, [models_dir], output, fact, run.source)
    run.check.save_fixture("memory.ModelMemory", "gpu-model-held", spec)
    if not fact["gpu_free_mib"]:
        return "FAILED", "nvidia-smi gave no free memory per GPU"
    held = fact["gpu_mib"].get("held")
    said = f"free per GPU {fact['gpu_free_mib']} MiB; the held model {held} MiB"
    return ("ok" if held else "FAILED"), said + ("" if held else " (nvidia-smi lists no process's memory here)")


def _model(run: _Run) -> tuple[str, str]:
    """The template's Pipeline on the device and on the CPU: the same labels, scores within 1e-3."""
    report = run.state["torch"]
    if run.args.device.startswith("cuda") and not (report and report["available"]):
        return "skipped", "torch sees no GPU"
    return _model_on_device_and_cpu(run.args.device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/gpu_check"))
    parser.add_argument("--source", default="", help="what this machine is, for the fixtures' provenance")
    parser.add_argument("--device", default="cuda:0", help="where the memory and model steps put the model")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    today = datetime.date.today().isoformat()
    source = f"{args.source or platform.node()}, bench.gpu_check, captured {today}"
    check = Check(args.out, source)
    run = _Run(check, load({}), args, source, {"nvidia": None, "torch": torch_report()})
    for name, body in (
        ("nvidia", _nvidia), ("rules", _rules), ("torch", _torch), ("config", _config), ("memory", _memory),
        ("model", _model),
    ):  # fmt: skip
        check.step(name, partial(body, run))
    result = {"source": source, "steps": check.steps, **check.data}
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    failed = [s["name"] for s in check.steps if s["status"] == "FAILED"]
    print(
        f"gpu_check: {len(check.steps) - len(failed)} of {len(check.steps)} steps not failed; {args.out}/gpu_check.json"
    )
    return 1 if failed else 0


# 256 MiB on the device, held until stdin closes; one line, as it shows in the child's command line
_HOLD = (
    "import sys, torch; x = torch.ones(256 << 20, dtype=torch.uint8, device=sys.argv[1]); "
    "x.sum().item(); print('held', flush=True); sys.stdin.read()"
)


def _gpu_holder(models_dir: str, device: str) -> subprocess.Popen:
    """A child holding memory on device whose command line reads as a stub of model "held" in models_dir."""
    argv = [sys.executable, "-c", _HOLD, device, STUB_NAME, f"{models_dir}/held/1/model.py"]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    if child.stdout.readline().strip() != "held":
        child.kill()
        raise RuntimeError("the child could not take GPU memory")
    return child


def _model_on_device_and_cpu(device: str) -> tuple[str, str]:
    """The template's Pipeline on device and on the CPU over a tiny classifier made here."""
    import importlib.util

    import numpy as np

    from tests import tiny_models

    spec = importlib.util.spec_from_file_location("hf_pipeline", PIPELINE)
    assert spec and spec.loader
    pipeline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pipeline)
    texts = ["a fine day", "terrible, awful", "ok", "Triton without Docker"]
    with tempfile.TemporaryDirectory() as folder:
        tiny_models.make("classifier", Path(folder) / "clf", seed=1)
        source = f"path:{folder}/clf"
        on_gpu = pipeline.Pipeline("text-classification", source, device=device).run(texts)
        on_cpu = pipeline.Pipeline("text-classification", source, device="cpu").run(texts)
    same_labels = list(on_gpu["LABEL"].ravel()) == list(on_cpu["LABEL"].ravel())
    gap = float(np.abs(on_gpu["SCORE"] - on_cpu["SCORE"]).max())
    labels = "equal" if same_labels else "DIFFER"
    said = f"{len(texts)} texts on {device} and the CPU: labels {labels}, scores within {gap:.1e}"
    return ("ok" if same_labels and gap <= 1e-3 else "FAILED"), said


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
