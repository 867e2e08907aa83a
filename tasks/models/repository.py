"""The model repository: each configured HuggingFace model rendered from templates, its weights
uploaded (path:) or downloaded into HF_HOME (hub:) on the persistent path."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from jinja2 import Environment, StrictUndefined
from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation
from pyinfra.operations import files

import remote
from config import triton_model
from config.hub_folders import HubAccess
from config.layout import Layout
from config.models import ModelSpec
from facts.files import TreeEntries
from facts.hub import HubSnapshot
from remote._common import marker_name
from tasks import small_files
from tasks.downloads import private_upload, upload
from tasks.models import hub_relay
from tasks.models.serving import Serving, model_serving
from tasks.network import NetworkArgs

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "models"
_JINJA = Environment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


def path_version(spec: ModelSpec, layout: Layout) -> str:
    """Where a path: model's files go on the host: a folder per content (`model_sources/NAME/DIGEST`), so a
    change is written beside what serves, which stays for a rollback (its unchanged files are linked)."""
    return f"{layout.model_sources}/{spec.name}/{upload.tree_digest(spec.ref)[:16]}"


def host_source(spec: ModelSpec, layout: Layout) -> str:
    """Where the model is on the host: path: models live under the persistent path, a folder per content."""
    return f"path:{path_version(spec, layout)}" if spec.kind == "path" else spec.source


def instance_kind(spec: ModelSpec, gpu_ids: list[int]) -> str:
    """KIND_GPU or KIND_CPU: "auto" is the GPU where the host has one."""
    if spec.instance_kind == "auto":
        return "KIND_GPU" if gpu_ids else "KIND_CPU"
    return spec.instance_kind


def render_config(spec: ModelSpec, layout: Layout, gpu_ids: list[int], serving: Serving | None = None) -> str:
    """config.pbtxt of one model; serving: its copies, threads and batch sizes the rules chose for this
    host (without: as for a host of unknown CPUs)."""
    kind = instance_kind(spec, gpu_ids)
    serving = serving or model_serving((spec,), None, bool(gpu_ids))[spec.name]
    template = _JINJA.from_string((TEMPLATES / "hf" / "config.pbtxt.j2").read_text())
    values = {k: getattr(spec, k) for k in spec.__dataclass_fields__}
    values.update(
        instance_kind=kind,
        gpus=gpu_ids or [0],
        host_source=host_source(spec, layout),
        dynamic_batching=spec.dynamic_batching and serving.max_batch_size > 0,
        instance_count=serving.instances,
        intra_op_threads=serving.threads,
        max_batch_size=serving.max_batch_size,
        preferred_batch_sizes=serving.preferred_batch_sizes,
    )
    return template.render(**values)


def repository_files(
    specs: tuple[ModelSpec, ...],
    layout: Layout,
    gpu_ids: list[int],
    serving: dict[str, Serving] | None = None,
    envs: Mapping[str, str] | None = None,
) -> dict[str, bytes]:
    """Relative path -> content for the whole repository: the smoke model and every configured one. envs:
    the models with an environment of their own -> where it is (named in their config.pbtxt)."""
    out = {
        "smoke/config.pbtxt": (TEMPLATES / "smoke" / "config.pbtxt").read_bytes(),
        "smoke/1/model.py": (TEMPLATES / "smoke" / "model.py").read_bytes(),
    }
    for spec in specs:
        if spec.kind == "triton":  # a model folder the user brings: its files as they are
            out.update({f"{spec.name}/{rel}": data for rel, data in triton_model.files(spec.model_folder).items()})
            # a version folder with no file (a backend's that reads none) is carried by an empty
            # file: the repository holds files only, and Triton loads no version whose folder is missing
            for version in triton_model.empty_versions(spec.model_folder):
                out[f"{spec.name}/{version}/{triton_model.KEEP_FILE}"] = b""
            if envs and spec.name in envs:
                config = out[f"{spec.name}/config.pbtxt"].decode(errors="replace")
                out[f"{spec.name}/config.pbtxt"] = triton_model.with_execution_env(config, envs[spec.name]).encode()
            continue
        out[f"{spec.name}/config.pbtxt"] = render_config(spec, layout, gpu_ids, (serving or {}).get(spec.name)).encode()
        for name in ("model.py", "hf_pipeline.py"):
            out[f"{spec.name}/1/{name}"] = (TEMPLATES / "hf" / name).read_bytes()
    return out


class ModelCheck(TypedDict, total=False):
    """One model as tasks/server/scripts/verify_models.py calls it (it reads the list as JSON)."""

    name: str
    task: str  # a pipeline task, or "triton" for a model folder users bring
    source: str
    normalize: bool
    max_length: int
    max_new_tokens: int
    max_batch_size: int
    device: str  # where the in-process check runs: "cpu" or "cuda:N", as the server's instances
    digest: str  # the model's, under which its in-process answers are kept
    inputs: list[dict[str, Any]]  # a model folder's: name, datatype, dims
    outputs: list[str]


def verify_spec(
    specs: tuple[ModelSpec, ...],
    layout: Layout,
    gpu_ids: list[int],
    serving: dict[str, Serving] | None = None,
    digests: dict[str, str] | None = None,
) -> list[ModelCheck]:
    """What the verifier needs to call each model, and to run it in-process on the device the
    server runs it on (the first GPU of its instances, or the CPU). A Triton model folder is
    called with inputs made from its config.pbtxt (its inputs' names, types and shapes). digests: each
    model's (tasks/models/control.digests), under which its in-process answers are kept."""
    return [_triton_verify(s) for s in specs if s.kind == "triton"] + [
        {
            "name": s.name,
            "task": s.task,
            "source": host_source(s, layout),
            "normalize": s.normalize,
            "max_length": s.max_length,
            "max_new_tokens": s.max_new_tokens,
            "max_batch_size": (serving or model_serving(specs, None, bool(gpu_ids)))[s.name].max_batch_size,
            "device": f"cuda:{gpu_ids[0]}" if instance_kind(s, gpu_ids) == "KIND_GPU" and gpu_ids else "cpu",
            **({"digest": digests[s.name]} if digests and s.name in digests else {}),
        }
        for s in specs
        if s.kind != "triton"
    ]


def _triton_verify(spec: ModelSpec) -> ModelCheck:
    config, _ = triton_model.check_dir(spec.name, spec.model_folder)
    if config is None:
        raise ValueError(
            f"model {spec.name}: {spec.model_folder} is not a Triton model folder"
        )  # the settings refused it
    return {
        "name": spec.name,
        "task": "triton",
        "max_batch_size": config.max_batch_size,
        "inputs": [{"name": i.name, "datatype": i.datatype, "dims": list(i.dims)} for i in config.inputs],
        "outputs": [o.name for o in config.outputs],
    }


def fetch_command(
    python: str,
    hf_home: str,
    hf_cache: str,
    markers: str,
    repo: str,
    revision: str,
    user: str,
    network_file: str,
    relayed_from: str = "",
) -> StringCommand:
    """hub_fetch.py as user (never root where the server has its own: the cache is that user's, and what
    the hub sends is handled by code that cannot write anywhere else), with an empty environment: the token
    and the network settings (proxy and endpoint passwords) are files of root's that root's shell opens as
    descriptors 3 and 4 for it, never in its environment, which other processes of that user (a model's
    code) read in /proc. It prints its record, which root's shell writes into root's own file; root checks
    it (tasks/models/scripts/hub_record.py) and writes the marker from it: no file of that user's is adopted.
    relayed_from: the folder the controller's copies are in (tasks/models/hub_relay.py), else ""."""
    marker = f"{markers}/{marker_name(repo, revision)}"
    part, token, net = QuoteString(f"{marker}.fetching"), QuoteString(f"{hf_home}/token"), QuoteString(network_file)
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": hf_home, "HF_HUB_CACHE": hf_cache, "HUB_SECRET_FDS": "3 4"}
    if relayed_from:
        env["HUB_RELAY_DIR"] = relayed_from
    # the environment emptied before the user is taken (root's shell holds the network settings it read)
    clean: list = ["env", "-i", *(QuoteString(f"{k}={v}") for k, v in env.items())]
    drop = remote.as_user(user) if user != "root" else []
    fetch = remote.python(python, "hub_fetch.py", repo, revision, "-")
    record = remote.python("python3", "hub_record.py", hf_cache, repo, revision, f"{marker}.fetching", marker)
    return StringCommand(
        "mkdir", "-p", "-m", "755", QuoteString(markers), "&&", "rm", "-f", part, "&&",
        "tok=/dev/null", "&&", "{", "[", "!", "-s", token, "]", "||", StringCommand("tok=", token, _separator=""),
        ";", "}", "&&",
        "netf=/dev/null", "&&", "{", "[", "!", "-s", net, "]", "||", StringCommand("netf=", net, _separator=""),
        ";", "}", "&&",
        *clean, *drop, fetch, '3<"$tok"', '4<"$netf"', ">", part, "&&", record,
    )  # fmt: skip


@operation()
def hub_snapshot(
    python: str,
    hf_home: str,
    hf_cache: str,
    markers: str,
    repo: str,
    revision: str,
    user: str,
    network_file: str,
    relay: HubAccess | None = None,
):
    """The files the model's task loads at this revision are in the HF cache, fetched once and verified
    against the hub's digests (tasks/models/scripts/hub_fetch.py), as the server's user; the commit the revision
    resolved to and the files' digests are recorded where only root writes. relay: where the controller
    fetches the files once for every host (tasks/models/hub_relay.py), else None."""
    if host.get_fact(HubSnapshot, markers, repo, revision):
        host.noop(f"{repo}@{revision} is in the HuggingFace cache")
        return
    stage = f"{markers}/{marker_name(repo, revision)}.from-controller" if relay else ""
    if relay:
        yield StringCommand("mkdir", "-p", "-m", "755", QuoteString(markers))
        yield from hub_relay.staged(relay, repo, revision, stage)
    fetch = fetch_command(python, hf_home, hf_cache, markers, repo, revision, user, network_file, stage)
    yield remote.live(fetch)  # progress shown
    if relay:
        yield hub_relay.removed(stage)


@deploy("Model sources")
def sources(
    specs: tuple[ModelSpec, ...],
    layout: Layout,
    hf_token: str,
    net: NetworkArgs,
    python: str,
    user: str,
    relay: HubAccess | None = None,
) -> None:
    """path: models uploaded (changed files only); hub: models fetched into the HF cache as user (with
    the network shell's settings, net; through the controller where relay says how); the token 0600, and no
    token file left once the setting is cleared."""
    token = f"{layout.hf_home}/token"
    if hf_token:
        private_upload.written(name="HuggingFace token (0600)", dest=token, secret=hf_token)
    else:
        files.file(name="No HuggingFace token (hf_token is empty)", path=token, present=False)
    for spec in specs:
        if spec.kind == "triton":
            continue  # its files go into the model repository as they are
        if spec.kind == "path":
            upload.directory(
                spec.ref,
                path_version(spec, layout),
                f"Model {spec.name}",
                seed_from=f"{layout.model_sources}/{spec.name}",
            )
        else:
            hub_snapshot(
                name=f"Model {spec.name}: {spec.source} in HF_HOME",
                python=python,
                hf_home=layout.hf_home,
                hf_cache=layout.hf_cache,
                markers=layout.hub_markers,
                repo=spec.repo,
                revision=spec.revision,
                user=user,
                network_file=layout.network_settings_file,
                relay=relay,
                **net,
            )


@operation()
def only_configured(models_dir: str, names: list[str], python: str = "python3"):
    """Nothing in the repository but the configured models: Triton loads every model it holds.
    Entries are read NUL-safe; the host's prune.py removes only what lies inside models_dir."""
    extra = sorted(set(host.get_fact(TreeEntries, models_dir, "children")) - set(names))
    if not extra:
        host.noop("the model repository holds only configured models")
        return
    yield remote.python(python, "prune.py", models_dir, *(remote.hex_name(n) for n in extra))


def repository_dir(layout: Layout, repo_files: dict[str, bytes], venv: str) -> str:
    """The repository of these files for this venv, beside the one the server reads: named by both, so a
    change is written to a new directory (new files: Triton reloads a model whose files' times changed,
    which a new venv needs too) and the old one stays for a rollback."""
    h = hashlib.sha256(f"venv={venv}\0".encode())
    for path, content in sorted(repo_files.items()):
        h.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
    return f"{layout.repositories}/{h.hexdigest()[:16]}"


@deploy("Model repository")
def repository(directory: str, repo_files: dict[str, bytes]) -> None:
    """Each file of the repository, rewritten only when it differs; nothing else in it (Triton loads
    every model a repository holds)."""
    names = sorted({rel.split("/", 1)[0] for rel in repo_files})
    only_configured(name="Model repository holds only configured models", models_dir=directory, names=names)
    small_files.written(
        name="Model repository files",
        files={f"{directory}/{rel}": (content, "644") for rel, content in sorted(repo_files.items())},
    )
