"""The provisioner's settings: defaults from group_data/all.py, types and checks here.

`load()` turns a host's pyinfra data into a typed, validated `Settings`, or raises
`SettingsError` naming every bad key with the fix, before anything on a host changes.
"""

from __future__ import annotations

import difflib
import os
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from pyinfra.api.connectors import get_all_connectors
from pyinfra.api.exceptions import PyinfraError

from config.checks import CHECKS, coerce, cross_checks
from config.hub_folders import HubAccess
from config.models import ModelSpec, parse_models
from config.secrets import mask

DEFAULTS_FILE = Path(__file__).resolve().parents[1] / "group_data" / "all.py"
SECRETS = frozenset({"hf_token", "triton_registry_api_key"})  # never printed, not even in an error


def record_name(host_name: str) -> str:
    """A host's file name on the controller (its records, its facts list): its name with anything but
    letters, digits, '.', '-', '_' replaced."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in host_name).lstrip(".") or "_"


def host_key(host_name: str, machine_id: str) -> str:
    """A host's key among the controller's records of many inventories: its name and who it is (facts.system.
    MachineId), so that two inventories' `gpu1` keep their digests apart; its name alone where it has no id, and
    for @local (the controller itself: one machine, whatever the inventory)."""
    return f"{host_name}@{machine_id}" if machine_id and host_name != "@local" else host_name  # @local: here


class SettingsError(ValueError, PyinfraError):
    """One or more settings are wrong; the message lists each with its fix. A PyinfraError: pyinfra's command
    line shows it as one block (`--> pyinfra error: ...`) and exits non-zero, no traceback."""


@dataclass(frozen=True)
class Settings:
    """Every setting, typed. Names and meanings: group_data/all.py."""

    triton_source: str
    triton_pytriton_version: str
    triton_pytriton_sha256: str
    triton_pytriton_url: str
    triton_tarball_url: str
    triton_tarball_sha256: str
    triton_tarball_strip_components: int
    triton_image: str  # and its digest, registry URL: group_data/all.py
    triton_image_digest: str
    triton_image_registry_url: str
    triton_home: str
    venv_dir: str
    persist_dir: str
    triton_python: str
    python_standalone_url: str
    python_standalone_sha256: str
    python_standalone_version: str
    python_install_mirror: str
    python_downloads_json_url: str
    uv_wheel_url: str
    torch_version: str
    torch_variant: str
    torch_index_url: str
    pip_find_links: str
    pip_index_url: str
    numpy_version: str
    transformers_version: str
    tokenizers_version: str
    huggingface_hub_version: str
    tritonclient_version: str
    triton_user: str
    triton_log_max_mb: int
    triton_log_keep: int
    triton_log_check_s: int
    triton_http_address: str
    triton_http_port: int
    triton_grpc_port: int
    triton_metrics_port: int
    triton_upgrade: str
    triton_metrics_handover_port: int
    triton_model_load_threads: int
    triton_omp_wait_policy: str
    venv_snapshot: bool
    venv_snapshot_compression: str
    venv_installer: str
    venv_lock_dir: str
    lock_trust_on_first_use: str
    triton_keep_versions: int
    purge_persist: bool
    rolling_batch: str
    rolling_max_failures: str
    audit_report_path: str
    step_timings_path: str
    status_report_path: str
    provision_records_dir: str
    downloads_via_controller: str = "auto"
    apt_relay_origins: str = "auto"
    controller_cache_dir: str = "~/.cache/triton-provisioner/downloads"
    controller_state_dir: str = "auto"  # resolved by load() to a directory: this tree, or persist_dir's
    http_proxy: str = ""
    https_proxy: str = ""
    no_proxy: str = ""
    offline: bool = False
    models: tuple[ModelSpec, ...] = ()
    hf_endpoint: str = ""
    hub_folder_cache: str = "hub-folders"
    hf_token: str = field(default="", repr=False)  # a secret: never printed, written 0600
    triton_registry_api_key: str = field(default="", repr=False)  # a secret, as hf_token
    triton_registry_user: str = ""

    @property
    def lock_trusted(self) -> frozenset[str]:
        """The packages (normalised names) whose files the lock may hold with no digest an index publishes."""
        return frozenset(re.sub(r"[-_.]+", "-", n).lower() for n in self.lock_trust_on_first_use.split(",") if n)

    @property
    def http_connect_host(self) -> str:
        """Where a client on the host reaches the HTTP endpoint: loopback when bound to every address."""
        return "127.0.0.1" if self.triton_http_address in ("0.0.0.0", "::") else self.triton_http_address

    @property
    def base_url(self) -> str:
        """Where a client on the host reaches the HTTP endpoint: http://127.0.0.1:8000 by default."""
        host = self.http_connect_host
        return f"http://{f'[{host}]' if ':' in host else host}:{self.triton_http_port}"

    @property
    def triton_ports(self) -> tuple[tuple[str, int], ...]:
        """The server's three ports with their labels: (("http", 8000), ("grpc", 8001), ("metrics", 8002))."""
        return (("http", self.triton_http_port), ("grpc", self.triton_grpc_port), ("metrics", self.triton_metrics_port))

    @property
    def proxy_env(self) -> dict[str, str]:
        """The proxy variables every download runs with, in both spellings (curl and apt read the
        lower-case ones, some tools only the upper-case); exported by the network shell (tasks/network.py)."""
        env = {}
        for name in ("http_proxy", "https_proxy", "no_proxy"):
            value = getattr(self, name)
            if value:
                env[name] = value
                env[name.upper()] = value
        return env

    @property
    def registry_credentials(self) -> str:
        """What the image pull authenticates with: "USER\nSECRET" (USER `$oauthtoken`, NGC's, where none is set);
        "" for an anonymous pull. A secret: only ever in a root-only file or the controller's memory."""
        if not self.triton_registry_api_key:
            return ""
        return f"{self.triton_registry_user or '$oauthtoken'}\n{self.triton_registry_api_key}"

    @property
    def network_env(self) -> dict[str, str]:
        """What the steps that download run with (tasks/network.py): the proxies, and the hub's endpoint."""
        return {**self.proxy_env, **({"HF_ENDPOINT": self.hf_endpoint} if self.hf_endpoint else {})}

    def on_controller(self, path: str) -> Path | None:
        """A controller path from a setting: "~" is the controller user's home, relative ones are to
        controller_state_dir (this tree, or persist_dir's on a notebook); None for "" (not kept)."""
        if not path:
            return None
        p = Path(path).expanduser()
        return p if p.is_absolute() else Path(self.controller_state_dir) / p

    @property
    def python_standalone_minor(self) -> str:
        """The standalone CPython's minor version, "3.12" of "3.12.12" (or of "3.12"); "" where unset."""
        return ".".join(self.python_standalone_version.split(".")[:2])


def defaults() -> dict[str, Any]:
    """The defaults, read from group_data/all.py: the one place they are written."""
    namespace: dict[str, Any] = {}
    exec(compile(DEFAULTS_FILE.read_text(), str(DEFAULTS_FILE), "exec"), namespace)
    names = {f.name for f in fields(Settings)}
    return {k: v for k, v in namespace.items() if k in names}


def load(data: Mapping[str, Any], host_name: str = "") -> Settings:
    """Validate a host's data (inventory + group data + --data) into Settings, or raise SettingsError."""
    values = defaults()
    problems: list[str] = []
    kinds = {"int": int, int: int, "bool": bool, bool: bool}
    types = {f.name: kinds.get(f.type, str) for f in fields(Settings) if f.name != "models"}
    if "models" in data:
        values["models"] = data["models"]
    for key, value in data.items():
        if key in types or key == "models":
            values[key] = value
        elif not pyinfra_name(key) and not foreign_name(key):
            close = difflib.get_close_matches(key, [*types, "models"], n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]}?" if close else "; group_data/all.py lists every setting"
            problems.append(f"{key}: unknown setting (a typo?){hint}")
    if not values.get("hf_token") and os.environ.get("HF_TOKEN"):  # the controller's, as huggingface_hub reads it
        values["hf_token"] = os.environ["HF_TOKEN"]
    for key, kind in types.items():
        value, err = coerce(key, values.get(key), kind)
        if err is None:
            err = CHECKS[key](value)
        if err:
            shown = "<hidden>" if key in SECRETS else mask(repr(values.get(key)))
            problems.append(f"{key} = {shown}: {err}")
        values[key] = value
    if not problems:  # before the hub folders are read: they lie under it
        values["controller_state_dir"] = controller_state_dir(
            values["controller_state_dir"], values["persist_dir"], host_name
        )
    # a triton:hub: model's folder is fetched once the other settings (the hub's among them) are sound
    specs, model_problems = parse_models(values.get("models", []), None if problems else _hub_access(values))
    problems.extend(model_problems)
    if not problems:
        problems.extend(cross_checks(values))
    if problems:
        where = f" for host {host_name}" if host_name else ""
        listing = "\n  - ".join(problems)
        raise SettingsError(
            f"bad settings{where} (nothing was changed):\n  - {listing}\n"
            "Fix them in the inventory, group_data/all.py or --data."
        )
    values["models"] = specs
    return Settings(**values)


def controller_state_dir(value: str, persist_dir: str, host_name: str, euid: int | None = None) -> str:
    """Where the controller's state lies (controller_state_dir): "auto" is this tree, but persist_dir/controller
    where the controller is the host (@local) and runs as root, as in a notebook whose reset wipes the clone;
    a relative path is to this tree."""
    tree = DEFAULTS_FILE.parents[1]
    if value == "auto":
        as_root = (os.geteuid() if euid is None else euid) == 0
        return f"{persist_dir.rstrip('/')}/controller" if host_name == "@local" and as_root else str(tree)
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else tree / path)


def _hub_access(values: dict[str, Any]) -> HubAccess:
    """How the controller fetches a triton:hub: model's folder: the hosts' hub settings, its own cache."""
    cache = Path(values["hub_folder_cache"])
    return HubAccess(
        endpoint=values["hf_endpoint"],
        token=values["hf_token"],
        cache=cache if cache.is_absolute() else Path(values["controller_state_dir"]) / cache,
        offline=values["offline"],
    )


@cache
def _connector_names() -> tuple[frozenset[str], tuple[str, ...]]:
    """pyinfra's connector data names (ssh_port, docker_identifier ...) and each connector's prefix."""
    connectors = get_all_connectors()
    names = frozenset(name for c in connectors.values() for name in (getattr(c, "data_meta", None) or {}))
    return names, tuple(f"{name}_" for name in connectors)


def pyinfra_name(key: str) -> bool:
    """A host data name pyinfra itself reads: a global argument (_sudo, _env ...) or a connector's
    (ssh_*, docker_* ...). Every other name must be a setting of ours."""
    names, prefixes = _connector_names()
    return key.startswith("_") or key in names or key.startswith(prefixes)


# How close an unknown name must be to one of ours to be taken for its typo (difflib's ratio: "ofline" to
# "offline" is 0.92, "triton_htp_port" to "triton_http_port" 0.97; "nginx_port" to "triton_http_port" 0.62).
NEAR_MISS = 0.8


@cache
def our_prefixes() -> tuple[str, ...]:
    """The first words that name several of our settings ("triton_", "venv_" ...): a name under one of
    them is ours or a typo of ours, never a user's own."""
    words = [name.split("_", 1)[0] for name in _setting_names() if "_" in name]
    return tuple(sorted(f"{word}_" for word in set(words) if words.count(word) > 1))


@cache
def _setting_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Settings))


def foreign_name(key: str) -> bool:
    """A host data name that is neither ours, pyinfra's, under our prefixes nor close to one of ours: a
    user's own, for their other deploys sharing the inventory (nginx_port). Left alone."""
    if key in _setting_names() or pyinfra_name(key) or key.startswith(our_prefixes()):
        return False
    return not difflib.get_close_matches(key, _setting_names(), n=1, cutoff=NEAR_MISS)


_VALIDATED: weakref.WeakSet = weakref.WeakSet()  # inventories load_inventory passed (each host's deploy asks again)


def load_inventory(inventory: Any) -> None:
    """Validate every host of the inventory, so a bad one stops the run before any host is read; once
    per run, though each host's deploy asks. Names not ours and not near ours are left alone, said once
    with -v."""
    if inventory in _VALIDATED:
        return
    left: set[str] = set()
    for each in inventory:
        data = each.data.dict()
        load(data, each.name)
        left.update(key for key in data if foreign_name(key))
    _VALIDATED.add(inventory)
    state = getattr(inventory, "state", None)
    if left and state is not None and state.print_fact_info:
        print(f"--> settings: not ours, left alone: {', '.join(sorted(left))}", flush=True)
