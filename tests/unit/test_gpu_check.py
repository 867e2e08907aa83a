"""bench/gpu_check.py, the GPU path's proof for a machine with a GPU, run here on the CPU: without
nvidia-smi (its GPU steps skipped), and with an nvidia-smi that answers a real H100 host's published
output (every step's code run, the model on the CPU); its torch check on a wheel's own reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import gpu_torch
from bench.gpu_torch import TorchReport, torch_findings
from facts.nvidia import NvidiaData

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests" / "fixtures" / "facts"

# nvidia-smi answering as the host of a fixture did: the GPU query and header from the fixture, the
# compute apps as the process holding a model ("held"), 79,000 MiB free on GPU 0.
FAKE_NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=index,name,memory.total,driver_version*) sed -n '1,/^@header$/p' "$FIXTURE_OUTPUT" | sed '1d;$d' ;;
  *--query-compute-apps*)
    for d in /proc/[0-9]*; do
      tr '\\0' ' ' < "$d/cmdline" 2>/dev/null | grep -q 'held/1/model.py' && echo "${d#/proc/}, 256"
    done ;;
  *--query-gpu=index,memory.free*) echo "0, 79000" ;;
  "") sed -n '/^@header$/,$p' "$FIXTURE_OUTPUT" | sed '1d' ;;
esac
true
"""


def run_check(out: Path, path: str, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "PATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "bench.gpu_check", "--out", str(out), "--source", "test", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads((out / "gpu_check.json").read_text())
    return done, {s["name"]: s for s in report["steps"]} | {"report": report}


def test_without_nvidia_smi_the_gpu_steps_are_skipped_and_the_cpu_half_runs(tmp_path: Path) -> None:
    path = os.environ["PATH"]
    if shutil.which("nvidia-smi", path=path):
        path = ":".join(d for d in path.split(":") if not (Path(d) / "nvidia-smi").exists())
    done, steps = run_check(tmp_path, path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert steps["nvidia"]["status"] == "skipped"
    assert steps["rules"]["status"] == "ok" and "torch 2.14: cpu (no GPU)" in steps["rules"]["detail"]
    assert steps["torch"]["status"] == "ok" and "+cpu" in steps["torch"]["detail"]
    assert steps["config"]["detail"] == "instance_group [ { count: 1, kind: KIND_CPU } ]"
    assert (tmp_path / "config.pbtxt").read_text().count("KIND_CPU") == 1
    assert steps["memory"]["status"] == "skipped" and steps["model"]["status"] == "skipped"
    assert not (tmp_path / "fixtures").exists()


def test_with_nvidia_smi_every_step_runs_and_a_cpu_torch_is_named(tmp_path: Path) -> None:
    """Two H100s on driver 535 (CUDA 12.2): the rules choose cu126 for torch 2.14 (minor-version
    compatibility); this interpreter's CPU torch is named as not what they choose (exit 1); the config is
    KIND_GPU on GPUs 0 and 1; the memory fact joins the holder's pid to its model; the fixture is the fact's."""
    case = json.loads((FACTS / "nvidia.Nvidia" / "h100-535.json").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    output = tmp_path / "output.txt"
    output.write_text("\n".join(case["output"]) + "\n")
    os.environ["FIXTURE_OUTPUT"] = str(output)
    try:
        done, steps = run_check(tmp_path / "out", f"{bin_dir}:{os.environ['PATH']}", "--device", "cpu")
    finally:
        del os.environ["FIXTURE_OUTPUT"]
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert steps["nvidia"]["status"] == "ok", said
    assert "driver 535.129.03, CUDA 12.2: NVIDIA H100 80GB HBM3 (sm_90, 81559 MiB)" in steps["nvidia"]["detail"]
    saved = json.loads((tmp_path / "out" / "fixtures" / "nvidia.Nvidia" / "hbm3-535.129.03.json").read_text())
    assert saved["fact"] == case["fact"] and saved["output"] == case["output"]
    assert saved["command"] == case["command"]  # the fact's own command ran
    assert "torch 2.14: cu126 (CUDA minor-version compatibility" in steps["rules"]["detail"]
    assert steps["torch"]["status"] == "FAILED"
    assert "this machine's torch is cpu" in steps["torch"]["detail"]
    assert "count: 1, kind: KIND_GPU, gpus: [ 0, 1 ]" in steps["config"]["detail"]
    assert steps["memory"]["status"] == "ok", steps["memory"]
    assert steps["memory"]["detail"] == "free per GPU [79000] MiB; the held model 256 MiB"
    assert steps["model"]["status"] == "ok", steps["model"]
    assert "labels equal" in steps["model"]["detail"]


H200 = NvidiaData(
    driver_version="580.159.03",
    cuda_version="13.0",
    gpus=[{"index": 0, "name": "NVIDIA H200", "memory_mib": 143771, "compute_capability": "9.0"}],
    error=None,
)
# torch 2.11.0+cu130 as the lent machine's (../.library/device/KINDS.md); its arch list as the table has it
CU130 = TorchReport(
    version="2.11.0+cu130",
    cuda="13.0",
    available=True,
    arch_list=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"],
    capabilities=["9.0"],
)


def test_a_torch_that_is_what_the_rules_choose_and_covers_the_gpu_has_no_finding() -> None:
    assert torch_findings(H200, "cu130", CU130) == []
    assert gpu_torch.wheel_archs_reported(CU130["arch_list"]) == ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX")


def test_a_torch_the_rules_would_not_choose_or_that_lacks_the_gpus_kernels_is_named() -> None:
    assert torch_findings(H200, "cu128", CU130) == [
        "the rules choose cu128 for torch 2.11 on this driver; this machine's torch is cu130"
    ]
    no_sm90 = TorchReport(**{**CU130, "arch_list": ["sm_75", "sm_80", "sm_86", "sm_100", "sm_120"]})
    found = torch_findings(H200, "cu130", no_sm90)
    assert found[0] == "GPU 0 is sm_90; the wheel has kernels for ('7.5', '8.0', '8.6', '10.0', '12.0')"
    assert found[1].startswith("planner/tables.py TORCH_CUDA_ARCHS['2.11']['cu130'] is")
    blind = TorchReport(**{**CU130, "available": False})
    assert torch_findings(H200, "cu130", blind) == [
        "torch 2.11.0+cu130 does not see the GPU (torch.cuda.is_available() is False)"
    ]


def test_without_a_gpu_a_torch_that_sees_one_is_named() -> None:
    cpu = TorchReport(version="2.13.0+cpu", cuda=None, available=False, arch_list=[], capabilities=[])
    assert torch_findings(None, "cpu", cpu) == []
    assert torch_findings(None, "cpu", CU130) == ["torch sees a GPU that the Nvidia fact does not"]
