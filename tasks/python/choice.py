"""Which Python the venv and the python backend stub use: a host Python with a stub whose numpy
pin has wheels for it, else a standalone CPython; what it still needs from apt."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from config.layout import Layout
from config.settings import Settings
from config.versions import version_key
from facts.python import PythonInterpreter
from planner import tables
from planner.assessment import HostFacts
from planner.items import Item, blocker, missing, ok
from tasks.apt.distro import distro_key, package_for, release_known


@dataclass(frozen=True)
class PythonChoice:
    """The chosen Python (None where none can be used) and what comes with it."""

    python: str | None = None  # "3.11"
    python_path: str | None = None
    libpython_dir: str | None = None  # to add to LD_LIBRARY_PATH (not in the linker cache)
    source: str = "host"  # or "standalone"
    script_python: str | None = None  # a host python3 for the installer's own scripts
    pip_cert: str = ""
    apt_packages: list[str] = field(default_factory=list)
    passed_over: tuple[str, ...] = ()  # interpreters the server's user cannot run, each with why


def python_fits(version: str, stubs: tuple[str, ...], numpy_lt2: bool) -> bool:
    """This build has a stub for the Python minor, and the stub's numpy pin has wheels for it."""
    return version in stubs and not (numpy_lt2 and version_key(version) > version_key(tables.NUMPY_LT2_MAX_PYTHON))


def by_minor(pythons: list[PythonInterpreter]) -> dict[str, PythonInterpreter]:
    """One interpreter per minor version: the first the server's user can run, else the first found."""
    chosen: dict[str, PythonInterpreter] = {}
    for py in pythons:
        held = chosen.get(py["version"])
        if held is None or (held["blocked_by"] and not py["blocked_by"]):
            chosen[py["version"]] = py
    return chosen


def unreachable(py: PythonInterpreter, user: str) -> str:
    """Why the server's user cannot run an interpreter, in words."""
    where = py["blocked_by"]
    if where == py["path"] or where == py.get("libpython"):
        return f"{user} cannot run or read {where}"
    return f"{user} cannot enter {where}"


def _candidates(
    facts: HostFacts,
    settings: Settings,
    stubs: tuple[str, ...],
    numpy_lt2: bool,
    bundled: tuple[str, ...],
    distro_pythons: tuple[str, ...],
) -> tuple[list[tuple[tuple, str, PythonInterpreter]], list[PythonInterpreter]]:
    """The host Pythons that fit the stub and the settings, each with its score (installable, with libpython,
    with venv, the distribution's, newest), and those passed over because the server's user cannot run them."""
    candidates, passed_over = [], []
    for py in facts.pythons:
        version = py["version"]
        if not python_fits(version, stubs, numpy_lt2):
            continue
        if settings.triton_python != "auto" and version != settings.triton_python:
            continue
        if py["blocked_by"] and settings.triton_user != "root":  # root reaches every one
            passed_over.append(py)
            continue
        installable = py["libpython"] is not None or version in bundled or version in distro_pythons
        score = (
            installable,
            py["libpython"] is not None,
            py["can_venv"],
            version in distro_pythons,
            version_key(version),
        )
        candidates.append((score, version, py))
    return candidates, passed_over


def choose_python(
    facts: HostFacts,
    settings: Settings,
    stubs: tuple[str, ...],
    numpy_lt2: bool,
    bundled: tuple[str, ...],
    build_version: str = "",
) -> tuple[PythonChoice, list[Item]]:
    """Pick the Python for the venv and the stub (bundled: minors whose libpython the build ships)
    among those the server's user can run; refuse, naming how to get one, where there is none."""
    script_python = None
    if facts.pythons:  # any host Python 3.8+ runs the installer's own scripts (fetch, unpack, wait), as root
        script_python = max(facts.pythons, key=lambda p: version_key(p["version"]))["path"]
    if settings.triton_python == "standalone":
        return use_standalone(facts, settings, stubs, numpy_lt2, script_python, "triton_python = standalone")
    distro_pythons = tables.DISTRO_PYTHONS.get(distro_key(facts.os), ())
    user = settings.triton_user
    candidates, passed_over = _candidates(facts, settings, stubs, numpy_lt2, bundled, distro_pythons)
    passed = tuple(f"{py['path']} ({unreachable(py, user)})" for py in passed_over)
    skipped = "; ".join(f"passed over {py['path']}: {unreachable(py, user)}" for py in passed_over)
    have = ", ".join(sorted({p["version"] for p in facts.pythons}, key=version_key)) or "none"
    if not candidates:
        want = (
            settings.triton_python
            if settings.triton_python != "auto"
            else "one of " + ", ".join(v for v in stubs if python_fits(v, stubs, numpy_lt2))
        )
        why = f"the python backend needs Python {want}; the host has {have}"
        if passed_over:
            why += f", and the server's user {user} can run none that fits ({skipped})"
        if numpy_lt2 and any(
            version_key(p["version"]) > version_key(tables.NUMPY_LT2_MAX_PYTHON) for p in facts.pythons
        ):
            why += (
                f" (Python > {tables.NUMPY_LT2_MAX_PYTHON} has no numpy<2, which the Triton {build_version} stub needs)"
            )
        usable_distro = [v for v in distro_pythons if python_fits(v, stubs, numpy_lt2)]
        if settings.triton_python == "auto" and (script_python or settings.python_standalone_url or not usable_distro):
            choice, items = use_standalone(
                facts, settings, stubs, numpy_lt2, script_python, f"no host Python fits: {why}"
            )
            return replace(choice, passed_over=passed), items
        fix = _no_python_fix(facts, stubs, numpy_lt2, distro_pythons)
        if passed_over:
            first = passed_over[0]
            fix = f"{fix}; or let {user} reach {first['path']} (it is blocked at {first['blocked_by']})"
        return PythonChoice(script_python=script_python), [blocker("python", why, fix)]
    candidates.sort(key=lambda c: c[0], reverse=True)
    _, version, py = candidates[0]
    rule = (
        "triton_python" if settings.triton_python != "auto" else f"the best host Python with a stub (host has {have})"
    )
    reach = f"; {user} can run it" if user != "root" else ""
    detail = f"Python {py['full_version']} at {py['path']} (stub {version}; chosen by {rule}{reach})"
    items = [ok("python", detail + (f"; {skipped}" if skipped else ""))]
    lib_items, lib_dir, lib_packages = _libpython(facts, version, py, version in bundled)
    venv_items, venv_packages = _venv_module(facts, version, py, distro_pythons)
    choice = PythonChoice(
        python=version,
        python_path=py["path"],
        libpython_dir=lib_dir,
        script_python=py["path"],
        # pip of a Python that is not the distribution's (pyenv, conda ...) trusts certifi's bundle,
        # not the host's: behind a TLS-inspecting proxy whose CA the host trusts, that fails
        pip_cert=tables.SYSTEM_CA_BUNDLE if facts.system_ca_bundle and not _distro_owned(py["path"]) else "",
        apt_packages=lib_packages + venv_packages,
        passed_over=passed,
    )
    return choice, items + lib_items + venv_items


def _distro_owned(path: str) -> bool:
    """An interpreter of the distribution's packages (whose pip reads the host's CA bundle)."""
    return path.startswith(("/usr/bin/", "/bin/"))


def _no_python_fix(facts: HostFacts, stubs: tuple[str, ...], numpy_lt2: bool, distro_pythons) -> str:
    usable = [v for v in distro_pythons if python_fits(v, stubs, numpy_lt2)]
    top = tables.NUMPY_LT2_MAX_PYTHON if numpy_lt2 else stubs[-1]
    if usable:
        pkg = f"python{usable[0]}"
        lib = package_for(f"libpython{usable[0]}.so.1.0", facts.os)
        return f"apt-get install {pkg} {pkg}-venv {lib}, or set triton_python"
    # the distribution's own Python is too new (or too old) for this build's stub
    return (
        f"set triton_python = auto or standalone (uv installs a standalone CPython {top}); "
        f"or install a Python {stubs[0]}-{top} built with --enable-shared and set triton_python"
    )


def _libpython(
    facts: HostFacts, version: str, py: PythonInterpreter, bundled: bool
) -> tuple[list[Item], str | None, list[str]]:
    """The stub links libpython3.X: found (its directory when the loader does not search it),
    shipped with the build, installable from apt, or a blocker."""
    soname = f"libpython{version}.so.1.0"
    if py["libpython"]:
        lib_dir = py["libpython"].rsplit("/", 1)[0] if soname not in facts.linker_cache else None
        return [ok(soname, py["libpython"])], lib_dir, []
    if bundled:
        return [ok(soname, "shipped with the Triton build")], None, []
    pkg = package_for(soname, facts.os)
    if pkg:
        why = f"the python backend stub links {soname}, which is not installed"
        return [missing(soname, why, f"apt-get install {pkg}")], None, [pkg]
    return (
        [
            blocker(
                soname,
                f"the python backend stub links {soname}; {py['path']} has no shared libpython",
                "use a Python built with --enable-shared, the distribution's python3, or triton_python = standalone",
            )
        ],
        None,
        [],
    )


def _venv_module(
    facts: HostFacts, version: str, py: PythonInterpreter, distro_pythons: tuple[str, ...]
) -> tuple[list[Item], list[str]]:
    if py["can_venv"]:
        return [], []
    why = f"{py['path']} cannot make a venv (no ensurepip)"
    if version in distro_pythons and release_known(facts.os):
        pkg = f"python{version}-venv"
        return [missing("python venv", why, f"apt-get install {pkg}")], [pkg]
    return [
        blocker("python venv", why, "use a Python that ships venv and ensurepip, or triton_python = standalone")
    ], []


def stub_fix(facts: HostFacts, stub: str, venv: str | None) -> str:
    """A fix that exists on this host when a build's only stub is for Python `stub`."""
    py = by_minor(facts.pythons).get(stub)
    if py and not py["blocked_by"]:
        return f"set triton_python = {stub} ({py['path']} is on this host)"
    if stub in tables.DISTRO_PYTHONS.get(distro_key(facts.os), ()) and release_known(facts.os):
        lib = package_for(f"libpython{stub}.so.1.0", facts.os)
        return f"apt-get install python{stub} python{stub}-venv {lib}, then set triton_python = {stub}"
    other = f"; or use a Triton tarball whose stub is for Python {venv}" if venv else ""
    return f'set triton_python = standalone with python_standalone_version = "{stub}" (uv installs it){other}'


def use_standalone(
    facts: HostFacts,
    settings: Settings,
    stubs: tuple[str, ...],
    numpy_lt2: bool,
    script_python: str | None,
    rule: str,
) -> tuple[PythonChoice, list[Item]]:
    """A standalone CPython (its own libpython, venv and stdlib): the archive of python_standalone_url,
    else one uv installs (python_standalone_version, or the newest minor this build's stub takes)."""
    top = tables.NUMPY_LT2_MAX_PYTHON if numpy_lt2 else stubs[-1]
    minor = settings.python_standalone_minor or top
    if not python_fits(minor, stubs, numpy_lt2):
        fix = (
            f"point python_standalone_url at a CPython {top} build (and its sha256 and version)"
            if settings.python_standalone_url
            else f'set python_standalone_version = "{top}" (or "")'
        )
        return PythonChoice(script_python=script_python), [
            blocker(
                "python",
                f"python_standalone_version {settings.python_standalone_version}: this Triton build's stub "
                f"takes Python {stubs[0]}-{top}",
                fix,
            )
        ]
    if script_python is None:
        return PythonChoice(), [
            blocker("python", "the host has no python3 (3.8+) to run the installer's steps", "apt-get install python3")
        ]
    pip_cert = tables.SYSTEM_CA_BUNDLE if facts.system_ca_bundle else ""  # its pip trusts certifi's bundle alone
    if settings.python_standalone_url:
        home = Layout(settings).python_standalone_home
        source = "standalone"
        detail = (
            f"standalone CPython {settings.python_standalone_version} at {home} from "
            f"{settings.python_standalone_url} (chosen by {rule})"
        )
    else:
        arch = facts.machine
        if arch not in tables.UV_WHEELS:
            return PythonChoice(script_python=script_python), [
                blocker("python", f"no uv wheel is pinned for {arch}", "set python_standalone_url, _sha256, _version")
            ]
        home = Layout(settings).uv_python_home(minor, arch)
        source = "uv"
        wanted = settings.python_standalone_version or f"{minor} (the newest {minor}.x uv {tables.UV_VERSION} knows)"
        where = settings.python_downloads_json_url or settings.python_install_mirror or "python-build-standalone"
        detail = (
            f"standalone CPython {wanted} at {home}, installed by uv {tables.UV_VERSION} from {where} with the sha256 "
            f"uv checks (chosen by {rule})"
        )
    choice = PythonChoice(
        python=minor,
        python_path=f"{home}/bin/python{minor}",
        libpython_dir=f"{home}/lib",
        source=source,
        script_python=script_python,
        pip_cert=pip_cert,
    )
    installed = facts.standalone_python_exists if source == "standalone" else minor in facts.uv_pythons
    if installed:
        return choice, [ok("python", detail), ok(f"libpython{minor}.so.1.0", f"{home}/lib")]
    return choice, [missing("python", detail, "run deploy/provision.py (downloads, checks and installs it)")]
