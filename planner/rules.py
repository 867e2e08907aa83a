"""The compatibility rules: host facts + settings -> an assessment (audit items and the decisions
provisioning acts on). Pure functions; every number comes from planner/tables.py.

The audit prints what `assess()` finds; provisioning acts on its decisions and refuses to start
while any item is a blocker. Each subject decides in its own module and returns its result:
tasks/triton/build.py (build, artifact, OS, C runtime, host libraries), tasks/python/choice.py,
tasks/venv/torch_choice.py, planner/installed.py (disk, install, venv, environment, ports).
"""

from __future__ import annotations

from config.layout import Layout
from config.settings import Settings
from planner import tables
from planner.assessment import Assessment, Decisions, HostFacts
from planner.installed import (
    check_disk,
    check_environment,
    check_install_paths,
    check_model_envs,
    check_persist_dir,
    check_ports,
    check_server_user,
    check_triton,
    check_venv,
    persist_wiped,
)
from planner.items import Item
from tasks.apt.distro import package_for
from tasks.models.serving import check_model_backends, model_pins, model_serving
from tasks.python.choice import PythonChoice, choose_python, stub_fix
from tasks.triton.build import (
    check_c_runtime,
    check_host_libraries,
    check_image,
    check_platform,
    choose_artifact,
    front_packages,
    stub_pythons,
    wanted_build,
)
from tasks.venv.plan import model_env_targets
from tasks.venv.torch_choice import choose_torch

__all__ = ["Assessment", "Decisions", "HostFacts", "Item", "assess", "package_for"]


def standalone_to_install(facts: HostFacts, python: PythonChoice) -> bool:
    """A standalone CPython is chosen and not installed yet (its disk is still to be found)."""
    if python.source == "standalone":
        return not facts.standalone_python_exists
    return python.source == "uv" and python.python not in facts.uv_pythons


def assess(facts: HostFacts, settings: Settings) -> Assessment:
    """Check a host against the settings; decide what to install; list what is wrong and the fix."""
    build, release = wanted_build(settings, facts.image)
    wiped = persist_wiped(facts, settings)
    items: list[Item] = [wiped] if wiped else []  # the first thing to fix on a notebook
    items += check_platform(facts, settings, release) + check_image(facts, settings)
    if build:
        items += check_c_runtime(facts, build, image=settings.triton_source == "image")
    numpy_lt2 = build is not None and build.numpy_spec == "<2"
    python, python_items = choose_python(
        facts,
        settings,
        stub_pythons(release),
        numpy_lt2,
        release.bundled_libpython if release else (),
        build.version if build else "",
    )
    library_items, library_packages = check_host_libraries(facts, build)
    torch, torch_items = choose_torch(facts, settings)
    # with the model folders' requirements; a folder whose pins clash gets an environment of its own
    venv_pins, pin_items, model_envs = model_pins(settings.models, torch.pins, numpy_lt2)
    triton_items, triton_packages = check_triton(facts, settings, build, python.python)
    items += python_items + library_items + torch_items
    items += check_disk(facts, settings, torch.variant, standalone_to_install(facts, python))
    items += triton_items
    items += check_venv(facts, settings, build, python, venv_pins)
    items += check_environment(facts, settings)
    items += check_persist_dir(facts, settings)
    items += check_install_paths(facts, settings)
    items += check_server_user(facts, settings)
    items += check_ports(facts, settings)
    items += check_model_backends(settings.models, settings.triton_source) + pin_items
    decisions = Decisions(
        artifact=choose_artifact(settings, Layout(settings)),
        python=python.python,
        python_path=python.python_path,
        libpython_dir=python.libpython_dir,
        python_source=python.source,
        script_python=python.script_python,
        machine=facts.machine,
        python_passed_over=python.passed_over,
        pip_cert=python.pip_cert,
        stub_fixes={minor: stub_fix(facts, minor, python.python) for minor in tables.STUB_PYTHON_MINORS},
        torch_variant=torch.variant,
        torch_requirement=torch.requirement,
        torch_index=torch.index,
        apt_packages=sorted({*python.apt_packages, *library_packages, *triton_packages, *front_packages(settings)}),
        venv_pins=venv_pins,
        model_envs=model_envs,
        first_fixes=(f"{wiped.name}: {wiped.detail}; fix: {wiped.fix}",) if wiped else (),
        model_serving=model_serving(settings.models, facts.cpus, bool((facts.nvidia or {}).get("gpus"))),
    )
    if decisions.python_path and decisions.model_envs:  # built where the rules chose: their folders are known now
        targets = model_env_targets(settings, Layout(settings), decisions)
        items += check_model_envs(facts, targets, decisions.model_envs)
    return Assessment(items=items, decisions=decisions)
