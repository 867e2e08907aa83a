"""Compatibility rules: host facts + settings -> decisions and problems. Pure functions.

The audit prints what `assess()` finds; provisioning acts on its decisions and refuses to
start while any item is a blocker. Every number comes from compat/tables.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from compat import tables as t
from config.layout import Layout
from config.settings import Settings

Status = Literal["ok", "missing", "incompatible"]


def vkey(version: str) -> tuple[int, ...]:
    """ "2.35" -> (2, 35); non-numeric parts (a "+cu124" local tag) are dropped."""
    out = []
    for part in version.split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


@dataclass
class HostFacts:
    """The facts the rules read, as gathered from one host (see facts/)."""

    os: dict | None
    c_runtime: dict
    pythons: dict[str, dict]
    nvidia: dict | None
    linker_cache: dict[str, list[str]]
    free_install: dict | None = None  # FreeSpace of triton_home
    free_venv: dict | None = None  # FreeSpace of venv_dir
    free_persist: dict | None = None  # FreeSpace of persist_dir
    triton: dict | None = None  # TritonInstall of the server home
    triton_missing_libs: dict[str, list[str]] = field(default_factory=dict)
    venv: dict | None = None  # VenvPackages of venv_dir
    ports: dict[int, list[dict]] = field(default_factory=dict)
    init: dict | None = None
    hf_home_exists: bool = False
    env_files_exist: bool = False
    system_ca_bundle: bool = False  # compat.tables.SYSTEM_CA_BUNDLE exists on the host
    standalone_python_exists: bool = False  # the configured standalone CPython is unpacked


@dataclass(frozen=True)
class Item:
    """One line of the audit: a thing checked, its status, why, and the fix."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    blocker: bool = False  # provisioning cannot fix it: provision refuses to start


@dataclass
class Decisions:
    """What provisioning will install on this host."""

    triton_version: str | None = None
    python: str | None = None  # "3.11"
    python_path: str | None = None
    libpython_dir: str | None = None  # to add to LD_LIBRARY_PATH (not in the linker cache)
    python_source: str = "host"  # "host", or "standalone": the CPython of python_standalone_url
    script_python: str | None = None  # a host python3 that runs the installer's own host scripts
    pip_cert: str = ""  # a CA bundle for pip (the host's, for a standalone Python's pip)
    stub_fixes: dict[str, str] = field(default_factory=dict)  # stub's Python minor -> fix on this host
    torch_variant: str | None = None  # "cpu", "cu124"
    torch_requirement: str | None = None  # "torch==2.8.0+cpu"
    torch_index: str | None = None  # full index URL, or None
    apt_packages: list[str] = field(default_factory=list)
    venv_pins: dict[str, str] = field(default_factory=dict)  # name -> exact version in the venv


@dataclass
class Assessment:
    items: list[Item]
    decisions: Decisions

    @property
    def blockers(self) -> list[Item]:
        return [i for i in self.items if i.blocker]

    @property
    def problems(self) -> list[Item]:
        return [i for i in self.items if i.status != "ok"]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": not self.problems,
            "items": [i.__dict__ for i in self.items],
            "decisions": self.decisions.__dict__,
        }


def distro_key(os: dict | None) -> tuple[str, str]:
    if not os:
        return ("", "")
    version = os["version_id"]
    if os["id"] == "debian":
        version = version.split(".")[0]
    return (os["id"], version)


def release_known(os: dict | None) -> bool:
    """The package tables know this distribution release (compat/tables.py KNOWN_RELEASES)."""
    return distro_key(os) in t.KNOWN_RELEASES


def package_for(soname: str, os: dict | None) -> str | None:
    """The apt package that ships soname on this release; None where none does or none is known."""
    key = distro_key(os)
    if key not in t.KNOWN_RELEASES:
        return None
    if soname.startswith("libpython3.") and soname.endswith(".so.1.0"):
        minor = soname[len("libpython") : -len(".so.1.0")]
        if minor not in t.DISTRO_PYTHONS.get(key, ()):
            return None  # a release ships only its own Pythons
        return f"libpython{minor}{t.LIBPYTHON_PACKAGE_SUFFIX.get(key, '')}"
    return t.SONAME_PACKAGES.get(soname, {}).get(key)


def _unknown_package_fix(soname: str, os: dict | None) -> str:
    distro = " ".join(distro_key(os)) or "this distribution"
    if release_known(os):
        return (
            f"no package of {distro} ships {soname}: use a Triton build made for this release, or "
            "Debian 12 / Ubuntu 22.04 (never symlink another soname to it)"
        )
    return (
        f"no package name for {soname} is known for {distro} (compat/tables.py covers Debian 11-13 and "
        f"Ubuntu 20.04-24.04): install the package that ships it (`apt-file search {soname}`) by hand"
    )


def wanted_build(settings: Settings) -> tuple[t.TritonBuild | None, t.PytritonRelease | None]:
    """The Triton build the settings ask for (None for a tarball, known only once unpacked)."""
    if settings.triton_source != "pytriton":
        return None, None
    release = t.PYTRITON_RELEASES.get(settings.triton_pytriton_version)
    if release is None:
        return None, None
    return t.TRITON_BUILDS.get(release.triton), release


def _stub_pythons(release: t.PytritonRelease | None) -> tuple[str, ...]:
    if release:
        return release.stub_pythons
    return t.PYTRITON_RELEASES["0.7.0"].stub_pythons  # tarball: a layout with python_backend_stubs/


def assess(f: HostFacts, s: Settings) -> Assessment:
    """Check a host against the settings; decide what to install; list what is wrong and the fix."""
    items: list[Item] = []
    d = Decisions()
    build, release = wanted_build(s)

    items.extend(_check_platform(f, s, build, release))
    if build:
        d.triton_version = build.version
        items.extend(_check_c_runtime(f, build))
    items.extend(_choose_python(f, s, build, release, d))
    items.extend(_check_host_libraries(f, s, build, d))
    items.extend(_choose_torch(f, s, d))
    items.extend(_check_disk(f, s, d))
    items.extend(_check_installed(f, s, build, d))
    items.extend(_check_ports(f, s))
    d.stub_fixes = {minor: stub_fix(f, minor, d.python) for minor in t.STUB_PYTHON_MINORS}
    d.apt_packages = sorted(set(d.apt_packages))
    return Assessment(items=items, decisions=d)


def _check_platform(f: HostFacts, s: Settings, build, release) -> list[Item]:
    items = []
    distro = distro_key(f.os)[0]
    if f.os is None:
        items.append(
            Item(
                "os",
                "incompatible",
                "no /etc/os-release: cannot tell the distribution",
                "use Debian or Ubuntu",
                blocker=True,
            )
        )
    elif distro not in ("debian", "ubuntu"):
        items.append(
            Item(
                "os",
                "incompatible",
                f"{f.os['pretty_name'] or distro} is not Debian or Ubuntu",
                "use Debian 12+ or Ubuntu 22.04+ (apt is how runtime libraries are installed)",
                blocker=True,
            )
        )
    else:
        items.append(Item("os", "ok", f"{f.os['pretty_name']} ({f.os['arch']})"))
    if s.triton_source == "pytriton":
        if release is None:
            known = ", ".join(sorted(t.PYTRITON_RELEASES))
            items.append(
                Item(
                    "triton build",
                    "incompatible",
                    f"nvidia-pytriton {s.triton_pytriton_version} is not in the compatibility table",
                    f"set triton_pytriton_version to one of: {known}",
                    blocker=True,
                )
            )
        elif f.os and f.os["arch"] not in release.archs:
            items.append(
                Item(
                    "triton build",
                    "incompatible",
                    f"nvidia-pytriton {release.version} ships {', '.join(release.archs)} only, host is {f.os['arch']}",
                    "use triton_source=tarball with a build for this architecture (e.g. a Jetson release)",
                    blocker=True,
                )
            )
        elif release.sha256 != s.triton_pytriton_sha256:
            items.append(
                Item(
                    "triton build",
                    "incompatible",
                    f"triton_pytriton_sha256 differs from the published sha256 of nvidia-pytriton {release.version}",
                    f"set triton_pytriton_sha256 = {release.sha256}",
                    blocker=True,
                )
            )
        else:
            items.append(Item("triton build", "ok", f"Triton {release.triton} from nvidia-pytriton {release.version}"))
    return items


def _check_c_runtime(f: HostFacts, build: t.TritonBuild) -> list[Item]:
    items = []
    glibc = f.c_runtime.get("glibc")
    if glibc is None:
        items.append(
            Item(
                "glibc",
                "incompatible",
                "no GNU libc found (musl?)",
                "use a glibc distribution: Debian 12+ or Ubuntu 22.04+",
                blocker=True,
            )
        )
    elif vkey(glibc) < vkey(build.min_glibc):
        items.append(
            Item(
                "glibc",
                "incompatible",
                f"glibc {glibc} is older than {build.min_glibc}, which Triton {build.version} needs",
                f"use a host with glibc >= {build.min_glibc} (Debian 12+, Ubuntu 22.04+), or "
                "triton_source=tarball with an older build (Triton 2.30-2.33 needs glibc 2.31)",
                blocker=True,
            )
        )
    else:
        items.append(Item("glibc", "ok", f"{glibc} >= {build.min_glibc}"))
    glibcxx = f.c_runtime.get("glibcxx")
    if glibcxx and vkey(glibcxx) < vkey(build.min_glibcxx):
        items.append(
            Item(
                "libstdc++",
                "incompatible",
                f"libstdc++ provides GLIBCXX_{glibcxx}; Triton {build.version} needs GLIBCXX_{build.min_glibcxx}",
                "use a host whose libstdc++6 comes from gcc 12 or newer (Debian 12+, Ubuntu 22.04+)",
                blocker=True,
            )
        )
    elif glibcxx:
        items.append(Item("libstdc++", "ok", f"GLIBCXX_{glibcxx} >= {build.min_glibcxx}"))
    return items


def _python_fits(version: str, stubs: tuple[str, ...], numpy_lt2: bool) -> bool:
    """This build has a stub for the Python minor, and the stub's numpy pin has wheels for it."""
    return version in stubs and not (numpy_lt2 and vkey(version) > vkey(t.NUMPY_LT2_MAX_PYTHON))


def _choose_python(f: HostFacts, s: Settings, build, release, d: Decisions) -> list[Item]:
    """Pick the Python for the venv and the stub: a host Python with a stub whose numpy pin has
    wheels for it; else (auto) the standalone CPython when one is configured; else refuse, naming how."""
    stubs = _stub_pythons(release)
    numpy_lt2 = build is not None and build.numpy_spec == "<2"
    if f.pythons:  # any host Python 3.8+ runs the installer's own scripts (fetch, unpack, wait)
        d.script_python = max(f.pythons.values(), key=lambda p: vkey(p["version"]))["path"]
    if s.triton_python == "standalone":
        return _use_standalone(f, s, stubs, numpy_lt2, d, "triton_python = standalone")
    distro_pythons = t.DISTRO_PYTHONS.get(distro_key(f.os), ())
    candidates = []
    for version, py in f.pythons.items():
        if not _python_fits(version, stubs, numpy_lt2):
            continue
        if s.triton_python != "auto" and version != s.triton_python:
            continue
        installable = (
            py["libpython"] is not None
            or (release and version in release.bundled_libpython)
            or version in distro_pythons
        )
        score = (
            bool(installable),
            py["libpython"] is not None,
            py["can_venv"],
            version in distro_pythons,
            vkey(version),
        )
        candidates.append((score, version, py))
    have = ", ".join(sorted(f.pythons, key=vkey)) or "none"
    if not candidates:
        want = (
            s.triton_python
            if s.triton_python != "auto"
            else "one of " + ", ".join(v for v in stubs if _python_fits(v, stubs, numpy_lt2))
        )
        why = f"the python backend needs Python {want}; the host has {have}"
        if numpy_lt2 and any(vkey(v) > vkey(t.NUMPY_LT2_MAX_PYTHON) for v in f.pythons):
            why += f" (Python > {t.NUMPY_LT2_MAX_PYTHON} has no numpy<2, which the Triton {build.version} stub needs)"
        if s.triton_python == "auto" and s.python_standalone_url:
            return _use_standalone(f, s, stubs, numpy_lt2, d, f"no host Python fits: {why}")
        usable = [v for v in distro_pythons if _python_fits(v, stubs, numpy_lt2)]
        top = t.NUMPY_LT2_MAX_PYTHON if numpy_lt2 else stubs[-1]
        if usable:
            pkg = f"python{usable[0]}"
            lib = package_for(f"libpython{usable[0]}.so.1.0", f.os)
            fix = f"apt-get install {pkg} {pkg}-venv {lib}, or set triton_python"
        else:  # the distribution's own Python is too new (or too old) for this build's stub
            fix = (
                f"set triton_python = standalone with python_standalone_url, _sha256 and _version naming a "
                f"python-build-standalone CPython {top} install_only archive (group_data/all.py says where); "
                f"or install a Python {stubs[0]}-{top} built with --enable-shared and set triton_python"
            )
        return [Item("python", "incompatible", why, fix, blocker=True)]
    candidates.sort(key=lambda c: c[0], reverse=True)
    _, version, py = candidates[0]
    d.python, d.python_path = version, py["path"]
    d.script_python = py["path"]
    rule = "triton_python" if s.triton_python != "auto" else f"the best host Python with a stub (host has {have})"
    items = [Item("python", "ok", f"Python {py['full_version']} at {py['path']} (stub {version}; chosen by {rule})")]
    soname = f"libpython{version}.so.1.0"
    bundled = release is not None and version in release.bundled_libpython
    if py["libpython"]:
        if soname not in f.linker_cache:
            d.libpython_dir = py["libpython"].rsplit("/", 1)[0]
        items.append(Item(soname, "ok", py["libpython"]))
    elif bundled:
        items.append(Item(soname, "ok", "shipped with the Triton build"))
    else:
        pkg = package_for(soname, f.os)
        if pkg:
            d.apt_packages.append(pkg)
            items.append(
                Item(
                    soname,
                    "missing",
                    f"the python backend stub links {soname}, which is not installed",
                    f"apt-get install {pkg}",
                )
            )
        else:
            items.append(
                Item(
                    soname,
                    "incompatible",
                    f"the python backend stub links {soname}; {py['path']} has no shared libpython",
                    "use a Python built with --enable-shared, the distribution's python3, "
                    "or triton_python = standalone",
                    blocker=True,
                )
            )
    if not py["can_venv"]:
        if version in distro_pythons and release_known(f.os):
            pkg = f"python{version}-venv"
            d.apt_packages.append(pkg)
            items.append(
                Item(
                    "python venv",
                    "missing",
                    f"{py['path']} cannot make a venv (no ensurepip)",
                    f"apt-get install {pkg}",
                )
            )
        else:
            items.append(
                Item(
                    "python venv",
                    "incompatible",
                    f"{py['path']} cannot make a venv (no ensurepip)",
                    "use a Python that ships venv and ensurepip, or triton_python = standalone",
                    blocker=True,
                )
            )
    return items


def stub_fix(f: HostFacts, stub: str, venv: str | None) -> str:
    """A fix that exists on this host when a build's only stub is for Python `stub`."""
    py = f.pythons.get(stub)
    if py:
        return f"set triton_python = {stub} ({py['path']} is on this host)"
    if stub in t.DISTRO_PYTHONS.get(distro_key(f.os), ()) and release_known(f.os):
        lib = package_for(f"libpython{stub}.so.1.0", f.os)
        return f"apt-get install python{stub} python{stub}-venv {lib}, then set triton_python = {stub}"
    other = f"; or use a Triton tarball whose stub is for Python {venv}" if venv else ""
    return (
        f"set triton_python = standalone with python_standalone_url, _sha256 and _version naming a "
        f"CPython {stub} build (python-build-standalone install_only){other}"
    )


def _use_standalone(
    f: HostFacts, s: Settings, stubs: tuple[str, ...], numpy_lt2: bool, d: Decisions, rule: str
) -> list[Item]:
    """The standalone CPython of python_standalone_url: its own libpython, venv and stdlib."""
    version, minor = s.python_standalone_version, s.python_standalone_minor
    if not _python_fits(minor, stubs, numpy_lt2):
        top = t.NUMPY_LT2_MAX_PYTHON if numpy_lt2 else stubs[-1]
        return [
            Item(
                "python",
                "incompatible",
                f"python_standalone_version {version}: this Triton build's stub takes Python {stubs[0]}-{top}",
                f"point python_standalone_url at a CPython {top} build (and its sha256 and version)",
                blocker=True,
            )
        ]
    if d.script_python is None:
        return [
            Item(
                "python",
                "incompatible",
                "the host has no python3 (3.8+) to run the installer's steps",
                "apt-get install python3",
                blocker=True,
            )
        ]
    home = Layout(s).python_standalone_home
    d.python, d.python_path, d.libpython_dir = minor, f"{home}/bin/python{minor}", f"{home}/lib"
    d.python_source = "standalone"
    d.pip_cert = t.SYSTEM_CA_BUNDLE if f.system_ca_bundle else ""
    detail = f"standalone CPython {version} at {home} from {s.python_standalone_url} (chosen by {rule})"
    if f.standalone_python_exists:
        return [Item("python", "ok", detail), Item(f"libpython{minor}.so.1.0", "ok", f"{home}/lib")]
    return [Item("python", "missing", detail, "run deploy/provision.py (downloads, checks and unpacks it)")]


def _check_host_libraries(f: HostFacts, s: Settings, build, d: Decisions) -> list[Item]:
    sonames = build.host_sonames if build else t.CONTAINER_HOST_SONAMES
    items = []
    for soname in sonames:
        if soname in t.GLIBC_SONAMES:
            continue
        if soname in f.linker_cache:
            items.append(Item(soname, "ok", f.linker_cache[soname][0]))
            continue
        pkg = package_for(soname, f.os)
        if pkg:
            d.apt_packages.append(pkg)
            items.append(
                Item(
                    soname, "missing", "needed by the Triton server, not in the linker cache", f"apt-get install {pkg}"
                )
            )
        else:
            items.append(
                Item(
                    soname,
                    "incompatible",
                    "needed by the Triton server, not in the linker cache",
                    _unknown_package_fix(soname, f.os),
                    blocker=True,
                )
            )
    return items


def _driver_cuda(nvidia: dict) -> str | None:
    """The highest CUDA the driver supports: nvidia-smi says; else from the minimum-driver table."""
    if nvidia.get("cuda_version"):
        return nvidia["cuda_version"]
    driver = nvidia.get("driver_version")
    if not driver:
        return None
    best = None
    for cuda, minimum in t.CUDA_TOOLKIT_DRIVER.items():
        if vkey(driver) >= vkey(minimum) and (best is None or vkey(cuda) > vkey(best)):
            best = cuda
    return best


def _variant_cuda(variant: str) -> str:
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def _major(cuda: str) -> str:
    return cuda.split(".")[0]


def choose_torch_variant(nvidia: dict, torch_minor: str, variants: tuple[str, ...]) -> tuple[str | None, str]:
    """(variant, the rule that chose it) for auto on a GPU host, or (None, why none can run).

    The highest variant the driver supports fully (its CUDA <= the driver's); else, by CUDA
    minor-version compatibility, the newest variant of the driver's CUDA major when the driver
    meets that major's minimum. CUDA 13 variants need every GPU at compute capability >= 7.5.
    """
    cuda = _driver_cuda(nvidia)
    driver = nvidia.get("driver_version") or "?"
    caps = [vkey(g["compute_capability"]) for g in nvidia.get("gpus", []) if g.get("compute_capability")]
    min_cc = min(caps, default=None)
    low_cc = min_cc is not None and min_cc < vkey(t.CUDA13_MIN_COMPUTE_CAPABILITY)
    usable = [v for v in variants if not (low_cc and vkey(_variant_cuda(v)) >= (13,))]
    if cuda is None:
        return None, f"driver {driver} reports no CUDA version"
    full = [v for v in usable if vkey(_variant_cuda(v)) <= vkey(cuda)]
    if full:
        best = max(full, key=lambda v: vkey(_variant_cuda(v)))
        return best, f"the driver's CUDA {cuda} runs {best} fully (the newest such variant of torch {torch_minor})"
    major = _major(cuda)
    minimum = t.CUDA_MAJOR_MIN_DRIVER.get(major)
    same = [v for v in usable if _major(_variant_cuda(v)) == major]
    if same and minimum and driver != "?" and vkey(driver) >= vkey(minimum):
        best = max(same, key=lambda v: vkey(_variant_cuda(v)))
        return best, (
            f"CUDA minor-version compatibility: {best} runs on a CUDA {major}.x driver >= {minimum} "
            f"(driver {driver}, CUDA {cuda}); no variant of torch {torch_minor} is <= {cuda}"
        )
    why = f"driver {driver} supports CUDA {cuda}; torch {torch_minor} has {', '.join(variants)}"
    if low_cc:
        why += f" and its CUDA 13 builds need compute capability >= {t.CUDA13_MIN_COMPUTE_CAPABILITY}"
    return None, why + f", none of CUDA {major}.x"


def _torch_fix(nvidia: dict, torch_minor: str, variants: tuple[str, ...]) -> str:
    """What makes GPU torch possible: an older torch with the driver's CUDA major, or a newer driver."""
    cuda = _driver_cuda(nvidia) or "0"
    older = [
        m
        for m, vs in t.TORCH_CUDA_VARIANTS.items()
        if vkey(m) < vkey(torch_minor) and choose_torch_variant(nvidia, m, vs)[0]
    ]
    lowest = min(variants, key=lambda v: vkey(_variant_cuda(v)))
    need = t.CUDA_MAJOR_MIN_DRIVER.get(_major(_variant_cuda(lowest)), "?")
    hints = []
    if older:
        hints.append(f"torch_version {max(older, key=vkey)}.x (its wheels run on CUDA {_major(cuda)}.x)")
    hints.append(f"an NVIDIA driver >= {need}")
    hints.append("torch_variant = cpu")
    return "use " + ", or ".join(hints)


def _choose_torch(f: HostFacts, s: Settings, d: Decisions) -> list[Item]:
    """The torch variant (auto: from the driver), the index it comes from, and the venv's pins."""
    minor = ".".join(s.torch_version.split(".")[:2])
    variants = t.TORCH_CUDA_VARIANTS.get(minor)
    gpus = (f.nvidia or {}).get("gpus") or []
    nv_error = (f.nvidia or {}).get("error")
    items: list[Item] = []
    if gpus:
        names = ", ".join(f"{g['name']} ({g['compute_capability'] or '?'})" for g in gpus)
        items.append(Item("gpu", "ok", f"driver {f.nvidia['driver_version']}, CUDA {_driver_cuda(f.nvidia)}: {names}"))
    elif nv_error:
        items.append(Item("gpu", "ok", f"nvidia-smi fails ({nv_error}); serving on CPU"))
    else:
        items.append(Item("gpu", "ok", "no NVIDIA driver: serving on CPU"))

    def refuse(detail: str, fix: str) -> list[Item]:
        return [*items, Item("torch", "incompatible", detail, fix, blocker=True)]

    variant = s.torch_variant
    rule = "torch_variant"
    if variant == "auto" and not gpus:
        variant, rule = "cpu", "no GPU"
    elif variant == "auto":
        if variants is None:
            return refuse(
                f"no CUDA variant table for torch {minor}, so auto cannot choose one",
                "set torch_variant (cpu or cuXYZ) or a torch_version listed in compat/tables.py",
            )
        chosen, rule = choose_torch_variant(f.nvidia, minor, variants)
        if chosen is None:
            return refuse(rule, _torch_fix(f.nvidia, minor, variants))
        variant = chosen
    elif variant != "cpu":
        if variants is not None and variant not in variants:
            return refuse(f"torch {minor} has no {variant} wheels", f"use one of: cpu, {', '.join(variants)}")
        if not gpus:
            return refuse(
                f"torch_variant = {variant} but the host has no usable GPU",
                "set torch_variant = auto or cpu, or install the NVIDIA driver",
            )
        runs, why = choose_torch_variant(f.nvidia, minor, (variant,))
        if runs is None:
            return refuse(why, "upgrade the NVIDIA driver, or set torch_variant = auto or cpu")
    d.torch_variant = variant
    d.torch_requirement = f"torch=={s.torch_version}+{variant}"
    d.torch_index = f"{s.torch_index_url.rstrip('/')}/{variant}" if s.torch_index_url else None
    d.venv_pins = {
        "torch": f"{s.torch_version}+{variant}",
        "numpy": s.numpy_version,
        "transformers": s.transformers_version,
        "tokenizers": s.tokenizers_version,
        "huggingface-hub": s.huggingface_hub_version,
        "tritonclient": s.tritonclient_version,
    }
    items.append(Item("torch", "ok", f"{d.torch_requirement} (variant {variant}: {rule})"))
    return items


def _check_disk(f: HostFacts, s: Settings, d: Decisions) -> list[Item]:
    kind = "cpu" if (d.torch_variant or "cpu") == "cpu" else "cuda"
    installed = f.triton is not None and f.triton.get("server")
    venv_ready = f.venv is not None and bool(f.venv.get("packages", {}).get("torch"))
    needs: dict[str, tuple[dict | None, int, list[str]]] = {}

    def need(space: dict | None, amount: int, what: str) -> None:
        mount = space["mount"] if space else "?"
        entry = needs.setdefault(mount, (space, 0, []))
        needs[mount] = (space, entry[1] + amount, [*entry[2], what])

    if d.python_source == "standalone" and not f.standalone_python_exists:
        need(f.free_install, t.DISK_PYTHON_STANDALONE, "standalone Python")
        need(f.free_persist, t.DISK_PYTHON_DOWNLOAD, "download cache")
    if not installed:
        need(f.free_install, t.DISK_TRITON_INSTALL, "Triton")
        need(f.free_persist, t.DISK_TRITON_DOWNLOAD, "download cache")
    if not venv_ready:
        need(f.free_venv, t.DISK_VENV[kind], f"venv ({kind} torch)")
        need(f.free_persist, t.DISK_PIP_CACHE[kind], "pip cache")
        if s.venv_snapshot:
            need(f.free_persist, t.DISK_VENV_SNAPSHOT[kind], "venv snapshot")
    items = []
    for mount, (space, amount, whats) in needs.items():
        if space is None:
            continue
        free = space["free_bytes"]
        label = f"disk {mount}"
        if free < amount:
            items.append(
                Item(
                    label,
                    "incompatible",
                    f"{_gib(free)} free, {_gib(amount)} needed for {', '.join(whats)}",
                    f"free {_gib(amount - free)} on {mount}, or point triton_home / venv_dir / "
                    "persist_dir at a larger file system",
                    blocker=True,
                )
            )
        else:
            items.append(Item(label, "ok", f"{_gib(free)} free, {_gib(amount)} needed for {', '.join(whats)}"))
    return items


def _gib(n: int) -> str:
    return f"{n / t.GIB:.2f} GiB" if n >= t.GIB else f"{n / t.MIB:.0f} MiB"


def _check_installed(f: HostFacts, s: Settings, build, d: Decisions) -> list[Item]:
    items = []
    layout = Layout(s)
    home = layout.current
    tri = f.triton
    fix = "run deploy/provision.py"
    if not tri or not tri.get("server"):
        items.append(Item("triton server", "missing", f"no Triton server at {home}", fix))
    else:
        version = tri.get("version") or "unknown"
        if build and version != build.version:
            items.append(Item("triton server", "missing", f"Triton {version} at {home}, {build.version} wanted", fix))
        else:
            items.append(Item("triton server", "ok", f"Triton {version} at {tri['real_home']}"))
        if not tri.get("python_stub"):
            items.append(
                Item("python backend stub", "missing", f"no {home}/backends/python/triton_python_backend_stub", fix)
            )
        elif d.python and tri.get("stub_python") and tri["stub_python"] != d.python:
            same_archive = s.triton_source == "tarball" and tri["manifest"].get("sha256") == s.triton_tarball_sha256
            items.append(
                Item(
                    "python backend stub",
                    "incompatible",
                    f"this build's python backend stub is for Python {tri['stub_python']} "
                    f"(it links {tri['stub_libpython']}); the venv is {d.python}",
                    stub_fix(f, tri["stub_python"], d.python),
                    blocker=same_archive,  # provisioning the same archive again cannot change its stub
                )
            )
        elif d.python and tri.get("manifest", {}).get("stub_python") not in (None, d.python):
            items.append(
                Item(
                    "python backend stub",
                    "missing",
                    f"the stub is for Python {tri['manifest']['stub_python']}, the venv uses {d.python}",
                    fix,
                )
            )
        else:
            items.append(Item("python backend stub", "ok", f"Python {d.python}"))
        for path, sonames in sorted(f.triton_missing_libs.items()):
            for soname in sonames:
                pkg = package_for(soname, f.os)
                items.append(
                    Item(
                        f"{soname}",
                        "missing",
                        f"{path} cannot load it",
                        f"apt-get install {pkg}" if pkg else "install a package that provides it",
                    )
                )
                if pkg:
                    d.apt_packages.append(pkg)
    venv = f.venv
    if venv is None:
        items.append(Item("venv", "missing", f"no venv at {s.venv_dir}", fix))
    else:
        py_minor = ".".join(venv["python"].split(".")[:2])
        if d.python and py_minor != d.python:
            items.append(
                Item(
                    "venv",
                    "incompatible",
                    f"{s.venv_dir} is Python {py_minor or '?'}, the stub needs {d.python}",
                    fix + " (it builds a new venv beside it, then switches)",
                )
            )
        else:
            items.append(Item("venv", "ok", f"{s.venv_dir} (Python {venv['python']})"))
        for name, version in d.venv_pins.items():
            have = venv["packages"].get(name)
            if have == version:
                items.append(Item(f"venv {name}", "ok", have))
            else:
                items.append(Item(f"venv {name}", "missing", f"{have or 'not installed'}, {version} wanted", fix))
        numpy = venv["packages"].get("numpy")
        if build and build.numpy_spec == "<2" and numpy and vkey(numpy) >= (2,):
            items.append(
                Item(
                    "venv numpy<2",
                    "incompatible",
                    f"numpy {numpy}: the Triton {build.version} stub fails on string tensors with numpy 2",
                    fix + f" (pins numpy {s.numpy_version})",
                )
            )
    items.append(
        Item(
            "HF_HOME",
            "ok" if f.hf_home_exists else "missing",
            layout.hf_home,
            "" if f.hf_home_exists else fix,
        )
    )
    items.append(
        Item(
            "environment",
            "ok" if f.env_files_exist else "missing",
            f"{layout.profile} and the launcher",
            "" if f.env_files_exist else fix,
        )
    )
    return items


def _check_ports(f: HostFacts, s: Settings) -> list[Item]:
    items = []
    for label, port in (("http", s.triton_http_port), ("grpc", s.triton_grpc_port), ("metrics", s.triton_metrics_port)):
        holders = f.ports.get(port) or f.ports.get(str(port)) or []  # JSON keys are strings
        others = [h for h in holders if h.get("process") != "tritonserver"]
        if others:
            who = ", ".join(f"{h.get('process') or 'unknown process'} (pid {h.get('pid') or '?'})" for h in others)
            items.append(
                Item(
                    f"port {port}",
                    "incompatible",
                    f"{label} port {port} is held by {who}",
                    f"stop that process or set triton_{label}_port to a free port",
                )
            )
        elif holders:
            items.append(Item(f"port {port}", "ok", f"{label}: served by tritonserver (pid {holders[0].get('pid')})"))
        else:
            items.append(Item(f"port {port}", "ok", f"{label}: free"))
    return items
