"""Each setting's own check (a value that is wrong whatever the other settings say) and how a value from
pyinfra's --data is coerced to its type. config/settings.py applies them, then checks settings together."""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from config.ports import port_conflicts
from config.secrets import mask

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
VERSION = re.compile(r"^\d+\.\d+\.\d+$")  # exact pins: X.Y.Z
_PYTHON = re.compile(r"^3\.\d{1,2}$")
_VARIANT = re.compile(r"^(auto|cpu|cu\d{3})$")


def _abs_path(value: str) -> str | None:
    if not value.startswith("/") or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return "must be an absolute path without control characters, such as /opt/triton"
    return None


# Characters bash splits on or expands. Triton's python backend starts each model's stub through
# `bash -c` with the backend and model paths unquoted (seen: a triton_home "/opt/tri ton" gave
# "bash: line 1: /opt/tri: No such file or directory" and no model loaded), so triton_home holds none.
_SHELL_SPECIAL = frozenset(" \t'\"\\`$;&|<>()*?[]!#~{}")


# Trees the system and its packages own: an install there would mix with theirs, and uninstall would remove
# it whole. /usr/local/<name> is allowed, but not its own bin, lib, share ... (the admin's).
_SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys",
    "/usr", "/var/log", "/var/lib/dpkg", "/var/lib/apt", "/var/cache/apt", "/var/spool", "/var/mail",
    "/var/backups", "/tmp", "/var/tmp",
)  # fmt: skip
_TOP_LEVEL = ("/", "/opt", "/var", "/var/lib", "/var/cache", "/home", "/srv", "/mnt", "/media", "/root", "/content")
_USR_LOCAL_OWN = ("bin", "sbin", "lib", "lib64", "share", "include", "etc", "src", "man", "games")


def system_path(value: str) -> str | None:
    """Why a path may not hold our install or caches (a top-level directory, or in a tree the system owns;
    /tmp and /var/tmp: anyone may make a name there first); None where it may."""
    norm = posixpath.normpath(value)
    parts = norm.strip("/").split("/")
    if norm in _TOP_LEVEL or (len(parts) == 2 and parts[0] == "home"):
        return (
            "is a top-level directory (uninstall would remove it whole): use a folder of its own, such as /opt/triton"
        )
    if norm.startswith("/usr/local/") and parts[2] not in _USR_LOCAL_OWN:
        return None
    if any(norm == tree or norm.startswith(tree + "/") for tree in _SYSTEM_TREES):
        return (
            "is in a directory the system owns (or anyone may write, /tmp): packages and uninstall would "
            "collide there; use a folder of its own, such as /opt/triton"
        )
    return None


def _own_path(value: str) -> str | None:
    return _abs_path(value) or system_path(value)


def _install_path(value: str) -> str | None:
    bad = sorted({ch for ch in value if ch in _SHELL_SPECIAL})
    if bad:
        shown = " ".join("space" if ch == " " else repr(ch) for ch in bad)
        return (
            f"must not hold {shown}: Triton's python backend starts each model's stub through `bash -c` "
            "with this path unquoted; choose a path of letters, digits and - _ . / % + , : @ ="
        )
    return _own_path(value)


def _version(value: str) -> str | None:
    return None if VERSION.match(value) else "must be an exact version X.Y.Z, such as 2.8.0"


def _sha256(value: str) -> str | None:
    return None if _SHA256.match(value) else "must be 64 lower-case hex digits (sha256sum prints it)"


def _pattern(regex: str, why: str) -> Callable[[str], str | None]:
    """A check that the whole value matches regex, else why."""
    return lambda v: None if re.fullmatch(regex, v) else why


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


def _controller_dir(what: str) -> Callable[[str], str | None]:
    """A folder the controller keeps: any non-empty path with no NUL or newline."""
    return lambda v: None if v and "\0" not in v and "\n" not in v else f"must be {what}"


# REGISTRY/REPOSITORY:TAG, as `docker pull` names an image; the registry (a dotted host name, an address or
# localhost) is required: there is no Docker Hub default
_NAME_PART = r"[a-z0-9]+(?:[._-][a-z0-9]+)*"
_IMAGE = re.compile(
    rf"^(?:[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+|localhost)(:[0-9]{{1,5}})?/{_NAME_PART}(/{_NAME_PART})*:[A-Za-z0-9_][A-Za-z0-9._-]{{0,127}}$"
)
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _image(value: str) -> str | None:
    return (
        None if _IMAGE.match(value) else "must be REGISTRY/REPOSITORY:TAG, e.g. nvcr.io/nvidia/tritonserver:25.01-py3"
    )


def _one_of(*choices: str) -> Callable[[str], str | None]:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


CHECKS: dict[str, Callable[[Any], str | None]] = {
    "triton_source": _one_of("pytriton", "tarball", "image"),
    "triton_pytriton_version": _version,
    "triton_pytriton_sha256": _sha256,
    "triton_pytriton_url": _optional(_url),
    "triton_tarball_url": _optional(_url),
    "triton_tarball_sha256": _optional(_sha256),
    "triton_tarball_strip_components": _strip,
    "triton_image": _optional(_image),
    "triton_image_digest": _optional(lambda v: None if _DIGEST.match(v) else "must be sha256: and 64 hex digits"),
    "triton_image_registry_url": _optional(lambda v: _url(v) or _no_credentials(v)),
    "triton_registry_api_key": lambda v: None if "\n" not in v and " " not in v else "must be one key, no spaces",
    "triton_registry_user": _pattern(r"[!-9;-~]*", "must be a user name: no spaces or ':'"),
    "triton_home": _install_path,
    "venv_dir": _own_path,
    "persist_dir": _own_path,
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
    "triton_model_load_threads": lambda v: None if 1 <= v <= 64 else "must be 1 to 64",
    "triton_http_address": _address,
    "triton_http_port": _port,
    "triton_grpc_port": _port,
    "triton_metrics_port": _port,
    "triton_upgrade": _one_of("auto", "front", "handover", "restart"),
    "triton_omp_wait_policy": _one_of("passive", "active", ""),
    "triton_metrics_handover_port": lambda v: None if v == 0 else _port(v),
    "venv_snapshot": lambda v: None,
    "venv_snapshot_compression": _one_of("auto", "zstd", "gzip", "none"),
    "venv_installer": _one_of("uv", "pip"),
    "offline": lambda v: None,
    "purge_persist": lambda v: None,
    "triton_keep_versions": lambda v: None if 1 <= v <= 100 else "must be 1 to 100 (1 keeps only what runs)",
    "rolling_batch": _pattern(r"|[1-9][0-9]*|([1-9][0-9]?|100)%", 'must be a count ("2"), a share ("25%") or ""'),
    "rolling_max_failures": _pattern(r"[0-9]+|([0-9][0-9]?|100)%", 'must be a count ("0", "1") or a share ("10%")'),
    "lock_trust_on_first_use": _pattern(
        r"([A-Za-z0-9][A-Za-z0-9._-]*(,[A-Za-z0-9][A-Za-z0-9._-]*)*)?",
        "must be package names separated by commas, no spaces: torch or torch,mypkg",
    ),
    "downloads_via_controller": _one_of("auto", "yes", "no"),
    "apt_relay_origins": _pattern(
        r"(auto|https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?)(,(auto|https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?))*",
        'must be "auto" or origins (http(s)://host[:port], no path or user) separated by commas',
    ),
    "controller_cache_dir": _controller_dir("a directory on the controller"),
    "controller_state_dir": _controller_dir('"auto" or a directory on the controller'),
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
    "hub_folder_cache": _controller_dir("a directory on the controller"),
    "hf_token": lambda v: None if "\n" not in v and " " not in v else "must be one token, no spaces or newlines",
}


def coerce(name: str, value: Any, kind: type) -> tuple[Any, str | None]:
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


def _loopback(hostname: str) -> bool:
    """localhost or an address of the loopback range (127.0.0.0/8, ::1)."""
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def cross_checks(v: dict[str, Any]) -> list[str]:
    """What the settings say together that each alone cannot: one message per conflict, with its fix."""
    out = []
    if v["triton_source"] == "tarball" and not (v["triton_tarball_url"] and v["triton_tarball_sha256"]):
        out.append("triton_source = 'tarball' needs triton_tarball_url and triton_tarball_sha256")
    if v["triton_source"] == "image" and not (v["triton_image"] and v["triton_image_digest"]):
        out.append("triton_source = 'image' needs triton_image and triton_image_digest (sha256:..., its pin)")
    standalone = [v[k] for k in ("python_standalone_url", "python_standalone_sha256", "python_standalone_version")]
    if (v["python_standalone_url"] or v["python_standalone_sha256"]) and not (
        all(standalone) and VERSION.match(v["python_standalone_version"])
    ):
        out.append(
            "python_standalone_url, python_standalone_sha256 and python_standalone_version go together: "
            "set all three (the URL of a python-build-standalone install_only archive, its sha256, its full "
            "version X.Y.Z), or none and uv installs a standalone CPython (python_standalone_version may name it)"
        )
    out += port_conflicts(v)
    if not v["torch_index_url"] and not v["pip_find_links"]:
        out.append("torch_index_url and pip_find_links are both empty: pip has nowhere to get torch from")
    registry = urlparse(v["triton_image_registry_url"] or "https://x")
    if v["triton_registry_api_key"] and registry.scheme == "http" and not _loopback(registry.hostname or ""):
        out.append(
            f"triton_image_registry_url {v['triton_image_registry_url']} is plain http: the registry's API key "
            "would cross the network readable; use https, or a registry on 127.0.0.1"
        )
    endpoint = urlparse(v["hf_endpoint"]) if v["hf_endpoint"] else None
    if v["hf_token"] and endpoint and endpoint.scheme == "http" and not _loopback(endpoint.hostname or ""):
        out.append(
            f"hf_endpoint {mask(v['hf_endpoint'])} is plain http: the HF token (hf_token or the controller's "
            "HF_TOKEN) would cross the network readable; use https, or a mirror on 127.0.0.1"
        )
    for name in ("python_downloads_json_url", "python_install_mirror"):  # the checksums and the archives both
        source = urlparse(v[name]) if v[name] else None
        if source and source.scheme == "http" and not _loopback(source.hostname or ""):
            out.append(
                f"{name} {v[name]} is plain http: the CPython archives and the sha256s they are checked against "
                "would come from one unauthenticated source, which anyone on the way could rewrite together; use "
                "https, or a mirror on 127.0.0.1"
            )
    home = v["triton_home"].rstrip("/")
    persist = v["persist_dir"].rstrip("/")
    if persist == home or persist.startswith(home + "/"):
        out.append(f"persist_dir ({persist}) must not be inside triton_home ({home}): a reset would wipe it")
    if v["venv_dir"].rstrip("/").startswith(persist + "/"):
        out.append(f"venv_dir ({v['venv_dir']}) is on the persistent path: keep the venv on local disk")
    return out
