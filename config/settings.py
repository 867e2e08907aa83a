"""The provisioner's settings: defaults from group_data/all.py, types and checks here.

`load()` turns a host's pyinfra data into a typed, validated `Settings`, or raises
`SettingsError` naming every bad key with the fix, before anything on a host changes.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyinfra.api.connectors import get_all_connectors

from config.models import ModelSpec, parse_models
from config.secrets import mask

DEFAULTS_FILE = Path(__file__).resolve().parents[1] / "group_data" / "all.py"
SECRETS = frozenset({"hf_token"})  # never printed, not even in an error
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")  # exact pins: X.Y.Z
_PYTHON = re.compile(r"^3\.\d{1,2}$")
_VARIANT = re.compile(r"^(auto|cpu|cu\d{3})$")


def record_name(host_name: str) -> str:
    """A host's file name on the controller (its records, its facts list): its name with anything but
    letters, digits, '.', '-', '_' replaced."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in host_name).lstrip(".") or "_"


class SettingsError(ValueError):
    """One or more settings are wrong; the message lists each with its fix."""


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
    venv_snapshot: bool
    venv_snapshot_compression: str
    venv_installer: str
    venv_lock_dir: str
    triton_keep_versions: int
    purge_persist: bool
    audit_report_path: str
    step_timings_path: str
    status_report_path: str
    provision_records_dir: str
    http_proxy: str = ""
    https_proxy: str = ""
    no_proxy: str = ""
    offline: bool = False
    models: tuple[ModelSpec, ...] = ()
    hf_endpoint: str = ""
    hf_token: str = field(default="", repr=False)  # a secret: never printed, written 0600

    @property
    def http_connect_host(self) -> str:
        """Where a client on the host reaches the HTTP endpoint: loopback when bound to every address."""
        return "127.0.0.1" if self.triton_http_address in ("0.0.0.0", "::") else self.triton_http_address

    @property
    def triton_ports(self) -> tuple[tuple[str, int], ...]:
        """The server's three ports with their labels: (("http", 8000), ("grpc", 8001), ("metrics", 8002))."""
        return (("http", self.triton_http_port), ("grpc", self.triton_grpc_port), ("metrics", self.triton_metrics_port))

    @property
    def proxy_env(self) -> dict[str, str]:
        """The proxy variables every download runs with, in both spellings (curl and apt read the
        lower-case ones, some tools only the upper-case); passed as pyinfra's _env, which exports
        them inside sudo's shell."""
        env = {}
        for name in ("http_proxy", "https_proxy", "no_proxy"):
            value = getattr(self, name)
            if value:
                env[name] = value
                env[name.upper()] = value
        return env

    def on_controller(self, path: str) -> Path | None:
        """A controller path from a setting: relative ones are to this tree; None for "" (not kept)."""
        if not path:
            return None
        p = Path(path)
        return p if p.is_absolute() else DEFAULTS_FILE.parents[1] / p

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


def _abs_path(value: str) -> str | None:
    if not value.startswith("/") or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return "must be an absolute path without control characters, such as /opt/triton"
    return None


# Characters bash splits on or expands. Triton's python backend starts each model's stub through
# `bash -c` with the backend and model paths unquoted (seen: a triton_home "/opt/tri ton" gave
# "bash: line 1: /opt/tri: No such file or directory" and no model loaded), so triton_home holds none.
_SHELL_SPECIAL = frozenset(" \t'\"\\`$;&|<>()*?[]!#~{}")


def _install_path(value: str) -> str | None:
    bad = sorted({ch for ch in value if ch in _SHELL_SPECIAL})
    if bad:
        shown = " ".join("space" if ch == " " else repr(ch) for ch in bad)
        return (
            f"must not hold {shown}: Triton's python backend starts each model's stub through `bash -c` "
            "with this path unquoted; choose a path of letters, digits and - _ . / % + , : @ ="
        )
    return _abs_path(value)


def _version(value: str) -> str | None:
    return None if _VERSION.match(value) else "must be an exact version X.Y.Z, such as 2.8.0"


def _sha256(value: str) -> str | None:
    return None if _SHA256.match(value) else "must be 64 lower-case hex digits (sha256sum prints it)"


def _optional(check: Callable[[str], str | None]) -> Callable[[str], str | None]:
    return lambda v: None if v == "" else check(v)


def _url(value: str) -> str | None:
    u = urlparse(value)
    if u.scheme in ("http", "https") and u.netloc:
        return None
    if u.scheme == "file" and u.path.startswith("/"):
        return None
    return "must be an http(s):// or file:/// URL"


def _no_credentials(value: str) -> str | None:
    """uv reads these from its environment, which a command line shows: no password may be in them."""
    u = urlparse(value)
    if u.username or u.password:
        return "must not hold a user or password (uv takes it from its environment, which `ps` shows)"
    return None


def _proxy(value: str) -> str | None:
    u = urlparse(value)
    if u.scheme in ("http", "https") and u.hostname and not any(ch.isspace() for ch in value):
        try:
            u.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            return "has a port that is not a number"
        return None
    return "must be a proxy URL: http://HOST:PORT (or http://USER:PASSWORD@HOST:PORT)"


def _find_links(value: str) -> str | None:
    if value.startswith("upload:"):
        return None if Path(value[7:]).is_dir() else "upload: needs an existing directory on the controller"
    if value.startswith("/"):
        return _abs_path(value)
    return _url(value)


def _address(value: str) -> str | None:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return "must be an IP address such as 127.0.0.1 (or 0.0.0.0 to listen everywhere)"
    return None


def _port(value: int) -> str | None:
    return None if 1 <= value <= 65535 else "must be a TCP port, 1 to 65535"


def _strip(value: int) -> str | None:
    return None if 0 <= value <= 10 else "must be 0 to 10"


def _one_of(*choices: str) -> Callable[[str], str | None]:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "triton_source": _one_of("pytriton", "tarball"),
    "triton_pytriton_version": _version,
    "triton_pytriton_sha256": _sha256,
    "triton_pytriton_url": _optional(_url),
    "triton_tarball_url": _optional(_url),
    "triton_tarball_sha256": _optional(_sha256),
    "triton_tarball_strip_components": _strip,
    "triton_home": _install_path,
    "venv_dir": _abs_path,
    "persist_dir": _abs_path,
    "triton_python": lambda v: (
        None
        if v in ("auto", "standalone") or _PYTHON.match(v)
        else "must be auto, standalone or a minor version such as 3.12"
    ),
    "python_standalone_url": _optional(_url),
    "python_standalone_sha256": _optional(_sha256),
    "python_standalone_version": lambda v: (
        None if v == "" or re.fullmatch(r"3\.\d{1,2}(\.\d{1,3})?", v) else "must be a Python version: 3.12 or 3.12.12"
    ),
    "python_install_mirror": _optional(lambda v: _url(v) or _no_credentials(v)),
    "python_downloads_json_url": _optional(lambda v: _url(v) or _no_credentials(v)),
    "uv_wheel_url": _optional(lambda v: _url(v) or _no_credentials(v)),
    "torch_version": _version,
    "torch_variant": lambda v: None if _VARIANT.match(v) else "must be auto, cpu or cuXYZ (cu124, cu126 ...)",
    "torch_index_url": _optional(_url),
    "pip_find_links": _optional(_find_links),
    "pip_index_url": _optional(_url),
    "numpy_version": _version,
    "transformers_version": _version,
    "tokenizers_version": _version,
    "huggingface_hub_version": _version,
    "tritonclient_version": _version,
    "triton_user": lambda v: (
        None
        if re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", v)
        else "must be a user name: lower-case letters, digits, - and _"
    ),
    "triton_log_max_mb": lambda v: None if 1 <= v <= 100_000 else "must be 1 to 100000 (MiB)",
    "triton_log_keep": lambda v: None if 0 <= v <= 100 else "must be 0 to 100 (0 keeps no rotated copy)",
    "triton_log_check_s": lambda v: None if 1 <= v <= 86_400 else "must be 1 to 86400 seconds",
    "triton_http_address": _address,
    "triton_http_port": _port,
    "triton_grpc_port": _port,
    "triton_metrics_port": _port,
    "venv_snapshot": lambda v: None,
    "venv_snapshot_compression": _one_of("auto", "zstd", "gzip", "none"),
    "venv_installer": _one_of("uv", "pip"),
    "offline": lambda v: None,
    "purge_persist": lambda v: None,
    "triton_keep_versions": lambda v: None if 1 <= v <= 100 else "must be 1 to 100 (1 keeps only what runs)",
    "venv_lock_dir": lambda v: None if "\0" not in v and "\n" not in v else "must be a directory on the controller",
    "audit_report_path": lambda v: None if v and "\0" not in v else "must be a file name",
    "step_timings_path": lambda v: None if "\0" not in v else "must be a file name (or empty)",
    "status_report_path": lambda v: None if v and "\0" not in v else "must be a file name",
    "provision_records_dir": lambda v: None if "\0" not in v and "\n" not in v else "must be a directory (or empty)",
    "http_proxy": _optional(lambda v: _proxy(v)),
    "https_proxy": _optional(lambda v: _proxy(v)),
    "no_proxy": lambda v: (
        None
        if re.fullmatch(r"[A-Za-z0-9.*:/\[\]_-]*(,[A-Za-z0-9.*:/\[\]_-]+)*", v)
        else "must be host names or addresses separated by commas, no spaces: localhost,.corp,10.0.0.5"
    ),
    "hf_endpoint": _optional(_url),
    "hf_token": lambda v: None if "\n" not in v and " " not in v else "must be one token, no spaces or newlines",
}


def _coerce(name: str, value: Any, kind: type) -> tuple[Any, str | None]:
    """CLI --data gives strings: accept "8000" for an int, "true"/"false" for a bool; refuse other types."""
    if kind is bool:
        if isinstance(value, bool):
            return value, None
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true", None
        return value, f"must be true or false, got {type(value).__name__} {value!r}"
    if kind is int:
        if isinstance(value, bool):
            return value, "must be a whole number, not true/false"
        if isinstance(value, str) and re.fullmatch(r"\d+", value.strip()):
            return int(value), None
        if isinstance(value, int):
            return value, None
        return value, f"must be a whole number, got {type(value).__name__} {value!r}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        # pyinfra's --data reads 3.10 as the number 3.1: what was meant cannot be told back from it
        return value, (
            f"must be a string, got the number {value!r} (pyinfra's --data reads numbers, 3.10 as 3.1: quote "
            f"it as JSON, such as --data '{name}=\"3.10\"')"
        )
    if not isinstance(value, str):
        return value, f"must be a string, got {type(value).__name__} {value!r}"
    return value.strip(), None


def load(data: Mapping[str, Any], host_name: str = "") -> Settings:
    """Validate a host's data (inventory + group data + --data) into Settings, or raise SettingsError."""
    values = defaults()
    problems: list[str] = []
    kinds = {"int": int, int: int, "bool": bool, bool: bool}
    types = {f.name: kinds.get(f.type, str) for f in fields(Settings) if f.name != "models"}
    if "models" in data:
        values["models"] = data["models"]
    specs, model_problems = parse_models(values.get("models", []))
    problems.extend(model_problems)
    for key, value in data.items():
        if key in types or key == "models":
            values[key] = value
        elif not pyinfra_name(key):
            close = difflib.get_close_matches(key, [*types, "models"], n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]}?" if close else "; group_data/all.py lists every setting"
            problems.append(f"{key}: unknown setting (a typo?){hint}")
    if not values.get("hf_token") and os.environ.get("HF_TOKEN"):  # the controller's, as huggingface_hub reads it
        values["hf_token"] = os.environ["HF_TOKEN"]
    for key, kind in types.items():
        value, err = _coerce(key, values.get(key), kind)
        if err is None:
            err = _CHECKS[key](value)
        if err:
            shown = "<hidden>" if key in SECRETS else mask(repr(values.get(key)))
            problems.append(f"{key} = {shown}: {err}")
        values[key] = value
    if not problems:
        problems.extend(_cross_checks(values))
    if problems:
        where = f" for host {host_name}" if host_name else ""
        listing = "\n  - ".join(problems)
        raise SettingsError(
            f"bad settings{where} (nothing was changed):\n  - {listing}\n"
            "Fix them in the inventory, group_data/all.py or --data."
        )
    values["models"] = specs
    return Settings(**values)


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


def load_inventory(inventory: Any) -> None:
    """Validate every host of the inventory, so a bad one stops the run before any host is read."""
    for each in inventory:
        load(each.data.dict(), each.name)


def _cross_checks(v: dict[str, Any]) -> list[str]:
    out = []
    if v["triton_source"] == "tarball" and not (v["triton_tarball_url"] and v["triton_tarball_sha256"]):
        out.append("triton_source = 'tarball' needs triton_tarball_url and triton_tarball_sha256")
    standalone = [v[k] for k in ("python_standalone_url", "python_standalone_sha256", "python_standalone_version")]
    if (v["python_standalone_url"] or v["python_standalone_sha256"]) and not (
        all(standalone) and _VERSION.match(v["python_standalone_version"])
    ):
        out.append(
            "python_standalone_url, python_standalone_sha256 and python_standalone_version go together: "
            "set all three (the URL of a python-build-standalone install_only archive, its sha256, its full "
            "version X.Y.Z), or none and uv installs a standalone CPython (python_standalone_version may name it)"
        )
    ports = [v["triton_http_port"], v["triton_grpc_port"], v["triton_metrics_port"]]
    if len(set(ports)) != 3:
        out.append(f"triton_http_port, triton_grpc_port and triton_metrics_port must differ, got {ports}")
    if not v["torch_index_url"] and not v["pip_find_links"]:
        out.append("torch_index_url and pip_find_links are both empty: pip has nowhere to get torch from")
    home = v["triton_home"].rstrip("/")
    persist = v["persist_dir"].rstrip("/")
    if persist == home or persist.startswith(home + "/"):
        out.append(f"persist_dir ({persist}) must not be inside triton_home ({home}): a reset would wipe it")
    if v["venv_dir"].rstrip("/").startswith(persist + "/"):
        out.append(f"venv_dir ({v['venv_dir']}) is on the persistent path: keep the venv on local disk")
    return out
