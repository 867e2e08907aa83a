"""Model changes without a restart: Triton runs in explicit model-control mode, and a change of the
models or of the venv loads, reloads or unloads only the models it touches through the repository API
(`POST /v2/repository/models/NAME/load`), while the server and the other models go on answering.

Triton reads a model's files through the repository link at each load, and reloads a loaded model when
its files' modification times differ: each change is written to a new repository directory (named by
its content and the venv), so a reload sees new files, and a load of an unchanged model is skipped by
Triton itself. A reload that fails leaves the loaded model serving (Triton keeps it); the run then
switches the links back and loads back what it had already changed.

The API asks for a key (tasks/server/unit.server_launcher adds the restriction): root's file, which the
server's group may read; the host script reads it, so it is never on a command line pyinfra runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.files import File

import remote
from config.layout import Layout
from facts.memory import ModelMemory, ModelMemoryData
from tasks import small_files
from tasks.server.unit import MODEL_CONTROL_HEADER, server_launcher

LOAD_TIMEOUT_S = 600  # one model's load (a large model's weights, a stub importing torch)
# Kept free beside a second copy: at least this, or a tenth of what is available (a stub's start, the
# page cache). A guess on the safe side, not a measurement.
RESERVE_KIB = 256 * 1024


def digests(repo_files: dict[str, bytes], venv: str, envs: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each model's digest: its files in the repository and the venv its stubs run on (envs: a model's own
    environment instead, so a new venv does not reload it). A model whose digest differs from what the
    server loaded is reloaded."""
    names = sorted({rel.split("/", 1)[0] for rel in repo_files})
    out = {}
    for name in names:
        h = hashlib.sha256(f"venv={(envs or {}).get(name, venv)}\0".encode())
        for path, content in sorted(repo_files.items()):
            if path.split("/", 1)[0] == name:
                h.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
        out[name] = h.hexdigest()[:16]
    return out


def loaded_text(model_digests: dict[str, str]) -> str:
    """The record of what the server loaded (`RUN_DIR/models.loaded`): a line "DIGEST NAME" per model."""
    return "".join(f"{digest} {name}\n" for name, digest in sorted(model_digests.items()))


@dataclass(frozen=True)
class Change:
    """What a change does to the loaded models: loaded anew or reloaded (load), unloaded (unload), and
    reloaded by an unload first where two copies do not fit in memory (swap: that model alone pauses)."""

    load: tuple[str, ...] = ()
    unload: tuple[str, ...] = ()
    swap: tuple[str, ...] = ()
    added: tuple[str, ...] = ()  # of load: models the server did not have
    tight: tuple[str, ...] = ()  # why each swap: what its second copy needs and what is free

    def __bool__(self) -> bool:
        return bool(self.load or self.unload or self.swap)

    def words(self) -> str:
        """The change in words, for the plan and the log."""
        parts = []
        changed = [n for n in self.load if n not in self.added]
        if changed:
            parts.append(f"reload {', '.join(changed)}")
        if self.added:
            parts.append(f"load {', '.join(self.added)}")
        if self.unload:
            parts.append(f"unload {', '.join(self.unload)}")
        if self.swap:
            why = "; ".join(self.tight)
            parts.append(f"unload then load {', '.join(self.swap)} (two copies do not fit: {why})")
        return "; ".join(parts)

    def forward(self) -> list[str]:
        """The host script's items for this change."""
        return [
            *(f"swap:{n}" for n in self.swap),
            *(f"load:{n}" for n in self.load),
            *(f"unload:{n}" for n in self.unload),
        ]

    def back(self) -> list[str]:
        """The items that undo it once the links point back: what it changed or removed is loaded back
        (unloaded first where two copies do not fit), what it added is unloaded."""
        again = [n for n in (*self.load, *self.unload) if n not in self.added]
        return [*(f"swap:{n}" for n in self.swap), *(f"load:{n}" for n in again), *(f"unload:{n}" for n in self.added)]


def tight(memory: ModelMemoryData, reloaded: list[str]) -> dict[str, str]:
    """The reloaded models whose second copy does not fit beside the running one (name -> why), in host
    memory (its stubs' resident memory against MemAvailable) or on a GPU (its stubs' GPU memory against
    the least free GPU). The copies load at once: each one's need counts against what the others left."""
    out: dict[str, str] = {}
    avail = memory["available_kb"]
    budgets = []
    if avail is not None:
        budgets.append(("memory", memory["rss_kb"], avail - max(RESERVE_KIB, avail // 10), 1024))
    if memory["gpu_free_mib"] and memory["gpu_mib"]:
        budgets.append(("GPU memory", memory["gpu_mib"], min(memory["gpu_free_mib"]), 1))
    for what, needs, budget, per_mib in budgets:
        for name in sorted(reloaded, key=lambda n: (-needs.get(n, 0), n)):
            need = needs.get(name, 0)
            if need > budget:
                out.setdefault(
                    name, f"{name} needs {need // per_mib} MiB of {what}, {max(budget, 0) // per_mib} MiB free"
                )
            else:
                budget -= need
    return out


def change(loaded: dict[str, str] | None, wanted: dict[str, str], memory: ModelMemoryData | None = None) -> Change:
    """From what the server loaded (None: not known, every model is loaded again) to what is wanted;
    memory: where a reloaded model's second copy does not fit (tight), it is unloaded, then loaded."""
    have = loaded if loaded is not None else {}
    differ = [n for n, d in sorted(wanted.items()) if loaded is None or have.get(n) != d]
    reloaded = [n for n in differ if n in have]
    swaps = tight(memory, reloaded) if memory is not None else {}
    return Change(
        load=tuple(n for n in differ if n not in swaps),
        unload=tuple(n for n in sorted(have) if n not in wanted),
        swap=tuple(n for n in differ if n in swaps),
        added=tuple(n for n in differ if loaded is not None and n not in have),
        tight=tuple(swaps[n] for n in differ if n in swaps),
    )


def planned(loaded: dict[str, str] | None, wanted: dict[str, str], models_dir: str) -> Change:
    """The change on this host: where there is one, what a second copy of each model needs and what is free
    (facts.memory) decides which models are unloaded first."""
    first = change(loaded, wanted)
    return change(loaded, wanted, host.get_fact(ModelMemory, models_dir)) if first else first


def command(
    base_url: str, grpc_url: str, key_file: str, proof_file: str, models_dir: str, items: list[str], launcher: str
) -> StringCommand:
    """The host script that loads, reloads and unloads through the repository API at base_url (loads over
    gRPC at grpc_url: tasks/models/scripts/model_control.py says why), run by the venv's Python through the launcher
    (tritonclient is there; tasks.server.process runs it as the server's user, whose group reads the key),
    its proof lines appended to proof_file; or fails naming the model, Triton's error, its cause and fix."""
    return remote.python(
        "python3",
        "model_control.py",
        base_url,
        grpc_url,
        key_file,
        MODEL_CONTROL_HEADER,
        str(LOAD_TIMEOUT_S),
        models_dir,
        *items,
        via=launcher,
        env={"TRITON_PROOF_FILE": proof_file},
    )


def recorded(run_dir: str, model_digests: dict[str, str] | None) -> StringCommand:
    """Write the record of what the server loaded, `run_dir/models.loaded` (None: remove it)."""
    path = QuoteString(f"{run_dir}/models.loaded")
    if model_digests is None:
        return StringCommand("rm", "-f", path)
    new = QuoteString(f"{run_dir}/models.loaded.new")
    return StringCommand("printf", "%s", QuoteString(loaded_text(model_digests)), ">", new, "&&", "mv", new, path)


@operation()
def key_present(path: str, group: str):
    """The model-control key: random, made once, root's and readable by the server's group only (0640);
    never rewritten (the running server holds it)."""
    info = host.get_fact(File, path)
    if info and info["user"] == "root" and info["group"] == group and info["mode"] == 640 and info["size"]:
        host.noop(f"{path}: root:{group} 0640")
        return
    q, new = QuoteString(path), QuoteString(f"{path}.new")
    yield StringCommand(
        "umask", "077", "&&", "mkdir", "-p", QuoteString(path.rsplit("/", 1)[0]), "&&",
        "{", "[", "-s", q, "]", "&&", "[", "!", "-L", q, "]", "||", "{",
        "rm", "-f", new, "&&", "head", "-c", "32", "/dev/urandom", "|", "od", "-An", "-vtx1", "|",
        "tr", "-d", QuoteString(" \n"), ">", new, "&&", "mv", new, q, ";", "}", ";", "}", "&&",
        "chown", QuoteString(f"root:{group}"), q, "&&", "chmod", "640", q,
    )  # fmt: skip


def access(layout: Layout, user: str) -> None:
    """The key the repository API asks for, and the launcher that starts tritonserver with it."""
    key_present(
        name="model-control key (root's, the server's group may read)", path=layout.model_control_key, group=user
    )
    small_files.written(
        name="the server's launcher",
        files={layout.server_launcher: (server_launcher(layout).encode(), "755")},
    )
