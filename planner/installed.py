"""What is already on the host against what is wanted: disk space for what is still to come,
the Triton install and its stub, the venv's packages, HF_HOME and the environment, the ports."""

from __future__ import annotations

from dataclasses import replace

from config.layout import Layout
from config.ports import FRONT_SLOT_OFFSETS
from config.settings import Settings
from config.versions import satisfies
from facts.disk import FreeSpaceData
from planner import disk_needs, tables
from planner.assessment import HostFacts
from planner.drives import drive_item
from planner.items import Item, blocker, incompatible, missing, ok
from tasks.apt.distro import package_for
from tasks.python.choice import PythonChoice, stub_fix
from tasks.server.front_plan import slot_ports

FIX = "run deploy/provision.py"


def _parts(items: list[Item]) -> list[Item]:
    """Mark items as parts of the install the server runs from (deploy/serve.py needs them all)."""
    return [replace(i, installed_part=True) for i in items]


def _gib(n: int) -> str:
    return f"{n / disk_needs.GIB:.2f} GiB" if n >= disk_needs.GIB else f"{n / disk_needs.MIB:.0f} MiB"


def check_disk(facts: HostFacts, settings: Settings, torch_variant: str | None, standalone: bool) -> list[Item]:
    """Free space on each file system for what provisioning will still write there (standalone: a
    standalone CPython is still to be installed)."""
    kind = "cpu" if (torch_variant or "cpu") == "cpu" else "cuda"
    installed = facts.triton is not None and facts.triton.get("server")
    venv_ready = facts.venv is not None and bool(facts.venv.get("packages", {}).get("torch"))
    needs: dict[str, tuple[FreeSpaceData | None, int, list[str]]] = {}

    def need(space: FreeSpaceData | None, amount: int, what: str) -> None:
        mount = space["mount"] if space else "?"
        entry = needs.setdefault(mount, (space, 0, []))
        needs[mount] = (space, entry[1] + amount, [*entry[2], what])

    if standalone:
        need(facts.free_install, disk_needs.DISK_PYTHON_STANDALONE, "standalone Python")
        need(facts.free_persist, disk_needs.DISK_PYTHON_DOWNLOAD, "download cache")
    if not installed:
        need(facts.free_install, disk_needs.DISK_TRITON_INSTALL, "Triton")
        need(facts.free_persist, disk_needs.DISK_TRITON_DOWNLOAD, "download cache")
    if not venv_ready:
        need(facts.free_venv, disk_needs.DISK_VENV[kind], f"venv ({kind} torch)")
        need(facts.free_persist, disk_needs.DISK_PIP_CACHE[kind], "pip cache")
        if settings.venv_snapshot:
            need(facts.free_persist, disk_needs.DISK_VENV_SNAPSHOT[kind], "venv snapshot")
    items = []
    for mount, (space, amount, whats) in needs.items():
        if space is None:
            continue
        free = space["free_bytes"]
        detail = f"{_gib(free)} free, {_gib(amount)} needed for {', '.join(whats)}"
        if free < amount:
            fix = (
                f"free {_gib(amount - free)} on {mount}, or point triton_home / venv_dir / "
                "persist_dir at a larger file system"
            )
            items.append(blocker(f"disk {mount}", detail, fix))
        else:
            items.append(ok(f"disk {mount}", detail))
    return items


def check_triton(
    facts: HostFacts, settings: Settings, build: tables.TritonBuild | None, python: str | None
) -> tuple[list[Item], list[str]]:
    """The install `current` points at, its stub's Python and the libraries it cannot load:
    (items, apt packages that add those libraries)."""
    layout = Layout(settings)
    home = layout.current
    tri = facts.triton
    left = (
        [
            incompatible(
                "leftover install",
                f"{layout.versions}/{', '.join(facts.leftover_installs)}: an unpack cut off before it finished",
                "provision removes it (its last step, Older versions pruned)",
            )
        ]
        if facts.leftover_installs
        else []
    )
    if not tri or not tri.get("server"):
        return _parts([missing("triton server", f"no Triton server at {home}", FIX)]) + left, []
    items, packages = left, []
    version = tri.get("version") or "unknown"
    if build and version != build.version:
        items.append(missing("triton server", f"Triton {version} at {home}, {build.version} wanted", FIX))
    else:
        items.append(ok("triton server", f"Triton {version} at {tri['real_home']}"))
    if not tri.get("python_stub"):
        items.append(missing("python backend stub", f"no {home}/backends/python/triton_python_backend_stub", FIX))
    elif python and tri.get("stub_python") and tri["stub_python"] != python:
        pinned = {
            "tarball": settings.triton_tarball_sha256,
            "image": settings.triton_image_digest.removeprefix("sha256:"),
        }
        same_archive = tri["manifest"].get("sha256") == pinned.get(settings.triton_source, "")
        items.append(
            Item(
                "python backend stub",
                "incompatible",
                f"this build's python backend stub is for Python {tri['stub_python']} "
                f"(it links {tri['stub_libpython']}); the venv is {python}",
                stub_fix(facts, tri["stub_python"], python),
                blocker=same_archive,  # provisioning the same archive again cannot change its stub
            )
        )
    elif python and tri.get("manifest", {}).get("stub_python") not in (None, python):
        stub = tri["manifest"]["stub_python"]
        items.append(missing("python backend stub", f"the stub is for Python {stub}, the venv uses {python}", FIX))
    else:
        items.append(ok("python backend stub", f"Python {python}"))
    for path, sonames in sorted(facts.triton_missing_libs.items()):
        for soname in sonames:
            pkg = package_for(soname, facts.os)
            fix = f"apt-get install {pkg}" if pkg else "install a package that provides it"
            items.append(missing(soname, f"{path} cannot load it", fix))
            if pkg:
                packages.append(pkg)
    return _parts(items), packages


def check_model_envs(facts: HostFacts, targets: dict[str, str], model_envs: dict[str, dict[str, str]]) -> list[Item]:
    """Each model's own environment (targets: model -> its folder; model_envs: model -> its pins) built and
    holding its pins: a part of the install its model is served from (deploy/serve.py builds none)."""
    items = []
    for model, where in sorted(targets.items()):
        env, name = facts.model_envs.get(where), f"model {model}'s environment"
        if env is None:
            items.append(missing(name, f"not built yet: {where}", FIX))
            continue
        have = env["packages"]
        differ = [
            f"{k} {have.get(k) or 'not installed'}, {v} wanted"
            for k, v in model_envs[model].items()
            if have.get(k) != v
        ]
        items.append(missing(name, f"{where}: {'; '.join(differ)}", FIX) if differ else ok(name, f"{where}, its pins"))
    return _parts(items)


def check_venv(
    facts: HostFacts, settings: Settings, build: tables.TritonBuild | None, python: PythonChoice, pins: dict[str, str]
) -> list[Item]:
    """The venv's Python and each pinned package; numpy 2 where the stub needs numpy<2."""
    venv, where = facts.venv, settings.venv_dir
    if venv is None:
        return _parts([missing("venv", f"no venv at {where}", FIX)])
    items = []
    py_minor = ".".join(venv["python"].split(".")[:2])
    if python.python and py_minor != python.python:
        why = f"{where} is Python {py_minor or '?'}, the stub needs {python.python}"
        items.append(incompatible("venv", why, FIX + " (it builds a new venv beside it, then switches)"))
    else:
        items.append(ok("venv", f"{where} (Python {venv['python']})"))
    for name, version in pins.items():
        have = venv["packages"].get(name)
        if have == version:
            items.append(ok(f"venv {name}", have))
        else:
            items.append(missing(f"venv {name}", f"{have or 'not installed'}, {version} wanted", FIX))
    numpy = venv["packages"].get("numpy")
    if build and build.numpy_spec == "<2" and numpy and not satisfies(numpy, "<2"):
        why = f"numpy {numpy}: the Triton {build.version} stub fails on string tensors with numpy 2"
        items.append(incompatible("venv numpy<2", why, FIX + f" (pins numpy {settings.numpy_version})"))
    return _parts(items)


def check_environment(facts: HostFacts, settings: Settings) -> list[Item]:
    """HF_HOME on the persistent path, and the profile and launcher."""
    layout = Layout(settings)
    hf_home = ok("HF_HOME", layout.hf_home) if facts.hf_home_exists else missing("HF_HOME", layout.hf_home, FIX)
    where = f"{layout.profile} and the launcher"
    env = ok("environment", where) if facts.env_files_exist else missing("environment", where, FIX)
    return [hf_home, *_parts([env])]


def check_persist_dir(facts: HostFacts, settings: Settings) -> list[Item]:
    """Root installs from the caches on the persistent path (the venv snapshot, wheels, apt's .debs):
    nobody but root may be able to write it; the server's user must be able to enter it (it reads the
    HF cache and the uploaded models there). A mounted Google Drive presents everything as root's, 0700
    directories and 0600 files, execute bits not kept across sessions (googlecolab/colabtools#3162),
    and lets root alone in (#906): safe for root's caches, closed to any other user."""
    d, path = facts.persist_dir, Layout(settings).persist
    user = settings.triton_user
    items = []
    if d is None:
        items.append(ok("persist_dir", f"{path} (made, owned by root, mode 755)"))
    else:
        mode = d.get("mode") or 0
        group_or_other_write = (mode // 10 % 10) & 2 or (mode % 10) & 2
        if d.get("user") != "root" or group_or_other_write:
            who = f"owned by {d.get('user')}" if d.get("user") != "root" else f"mode {mode}: group or others may write"
            fix = f"chown root: {path} && chmod go-w {path}, or set persist_dir to a path only root can write"
            return [blocker("persist_dir", f"{path} is {who}; root installs what is cached there", fix)]
        items.append(ok("persist_dir", f"{path} (owned by root, mode {mode})"))
    drive = drive_item(path, facts.free_persist.get("fs_type", "") if facts.free_persist else "")
    items += [drive] if drive else []
    if facts.persist_blocked and user != "root":
        blocked = facts.persist_blocked
        why = (
            f"the server's user {user} cannot enter {blocked}, on the way to {path}: the server reads the HF "
            "cache and the uploaded models there"
        )
        fix = f"let {user} enter {blocked} (chmod o+x), or set persist_dir to a path it can enter"
        if _notebook(facts):
            fix += "; on a notebook whose drive admits root alone (Colab's Google Drive), set triton_user = root"
        return [blocker("persist_dir", why, fix)]
    return items


def _notebook(facts: HostFacts) -> bool:
    """A notebook host (Colab, Kaggle, or one with Colab's /content): reset wipes all but a mounted drive."""
    return bool(facts.init and (facts.init.get("notebook") or facts.init.get("content_dir")))


# Where a notebook keeps files across a reset: a Google Drive mounted here (Colab's documented mount point).
NOTEBOOK_DRIVE = "/content/drive"
NOTEBOOK_PERSIST_EXAMPLE = f"{NOTEBOOK_DRIVE}/MyDrive/triton"


def persist_wiped(facts: HostFacts, settings: Settings) -> Item | None:
    """On a notebook, a persist_dir on the disk a reset wipes (the root file system, or /content outside
    the drive) keeps nothing: the first thing to fix, though the run can go on (it is merely slow after
    each reset). None where that is not so."""
    path = Layout(settings).persist
    mount = (facts.free_persist or {}).get("mount", "")
    on_drive = path == NOTEBOOK_DRIVE or path.startswith(NOTEBOOK_DRIVE + "/")
    under_content = path == "/content" or path.startswith("/content/")
    if not _notebook(facts) or on_drive or not (mount == "/" or under_content):
        return None
    return incompatible(
        "persistent path",
        f"{path} is on the disk a notebook reset wipes (file system {mount or '?'}): the caches would not outlive it",
        f"mount the drive first (from google.colab import drive; drive.mount('{NOTEBOOK_DRIVE}')), then set "
        f"persist_dir = {NOTEBOOK_PERSIST_EXAMPLE}",
    )


def check_ports(facts: HostFacts, settings: Settings) -> list[Item]:
    """Each of the server's ports (and behind the front each slot's) free, or held by a tritonserver or by our
    front (HAProxy, its pid FrontState's); another holder is named."""
    slots = FRONT_SLOT_OFFSETS if settings.triton_upgrade == "front" else ()
    public = [(name, name, port) for name, port in settings.triton_ports]
    ports = [*public, *((n, f"{n} (slot {s})", p) for s in slots for n, p in slot_ports(settings, s).items())]
    items = []
    for name, label, port in ports:
        holders = facts.ports.get(port) or facts.ports.get(str(port)) or []  # JSON keys are strings
        front = [h for h in holders if facts.front_pid and h.get("pid") == facts.front_pid]
        others = [h for h in holders if h.get("process") != "tritonserver" and h not in front]
        if others:
            who = ", ".join(f"{h.get('process') or 'unknown process'} (pid {h.get('pid') or '?'})" for h in others)
            fix = f"stop that process or set triton_{name}_port to a free port"
            items.append(incompatible(f"port {port}", f"{label} port {port} is held by {who}", fix))
        elif front:
            items.append(ok(f"port {port}", f"{label}: served by the front (HAProxy pid {facts.front_pid})"))
        elif holders:
            items.append(ok(f"port {port}", f"{label}: served by tritonserver (pid {holders[0].get('pid')})"))
        else:
            items.append(ok(f"port {port}", f"{label}: free"))
    return items


def check_install_paths(facts: HostFacts, settings: Settings) -> list[Item]:
    """Root installs into, runs from and unpacks caches into these paths: no part on the way may be one
    another user can write or replace (a user could plant a link, or the launcher root runs). The server's
    user must reach the install it runs."""
    items = []
    for label, path in (
        ("triton_home", settings.triton_home),
        ("venv_dir", settings.venv_dir),
        ("persist_dir", settings.persist_dir),
    ):
        unsafe = facts.unsafe_paths.get(path)
        if unsafe:
            mode = int(unsafe["mode"], 8)
            who = (
                f"owned by uid {unsafe['uid']}"
                if unsafe["uid"] != 0
                else f"mode {unsafe['mode']}: {'anyone' if mode & 0o002 else 'its group'} may write it"
            )
            items.append(
                blocker(
                    label,
                    f"{path}: {unsafe['part']} is {who}; another user could plant what root installs and runs there",
                    f"use a path under directories only root can write (e.g. /opt/triton), or chown root and "
                    f"chmod go-w {unsafe['part']}",
                )
            )
    if facts.home_blocked and settings.triton_user != "root":
        items.append(
            blocker(
                "triton_home",
                f"the server's user {settings.triton_user} cannot enter {facts.home_blocked}, on the way to "
                f"{settings.triton_home}: it runs the install and the venv there",
                f"choose a triton_home it can reach (e.g. /opt/triton), or let it enter {facts.home_blocked}",
            )
        )
    return items


# The one user earlier versions made without recording it (the default triton_user): adopted when it
# looks as they made it (a system uid, no home, no login), then recorded.
LEGACY_SERVER_USER = "triton-server"


def check_server_user(facts: HostFacts, settings: Settings) -> list[Item]:
    """triton_user: made by the provisioner (its record names it), or absent (it makes it). An account it
    did not make is never changed or removed: refused before any change, saying why."""
    user, account = settings.triton_user, facts.server_account
    if user == "root":
        return [ok("server user", "root (triton_user = root: the server and the models' code run as root)")]
    if account is None:
        return [
            missing(
                "server user",
                f"{user}: no such user yet",
                "provision makes it (a system user, no home, no login), and uninstall removes it",
            )
        ]
    if account["made"]:
        return [ok("server user", f"{user} (uid {account['uid']}), made by the provisioner")]
    legacy = (
        user == LEGACY_SERVER_USER
        and account["uid"] < 1000
        and account["home"] == "/nonexistent"
        and account["shell"].endswith("nologin")
    )
    if legacy:
        return [ok("server user", f"{user} (uid {account['uid']}), made by an earlier version: recorded now")]
    return [
        blocker(
            "server user",
            f"triton_user {user} is an account the provisioner did not make (uid {account['uid']}, home "
            f"{account['home']}, shell {account['shell']}): provisioning would change it (no home, no login) and "
            "uninstall would remove it",
            f"set triton_user to a name of its own (the default, {LEGACY_SERVER_USER}, is made for it), or "
            "triton_user = root",
        )
    ]
