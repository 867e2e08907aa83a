"""Serving, shared by deploy/provision.py and deploy/serve.py: model sources, the repository, and the
server (re)started only when what the process runs changed; a change of models or venv is loaded
into the running server instead (tasks/models/control.py); then proven by inference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyinfra import host, state

from config.layout import Layout
from config.settings import Settings
from facts.server import ServerState
from facts.system import InitSystem
from planner.assessment import Decisions
from planner.reading import read_host_timed
from run import run_summary
from tasks import network, server_user
from tasks.downloads.relay import relay_dir
from tasks.models import control as model_control
from tasks.models import hub_relay
from tasks.models import repository as models
from tasks.server import front, switch
from tasks.server import handover as server_handover
from tasks.server import process as server_process
from tasks.server import unit as server_unit
from tasks.server.unit import server_plan, why_start
from tasks.triton.install import installed_dir
from tasks.venv import plan as venv_plan


def links(
    settings: Settings, layout: Layout, decisions: Decisions, repo_files: dict[str, bytes]
) -> tuple[tuple[str, str], ...]:
    """(link, target) for what the server is to run: the Triton install, the venv, the model repository."""
    targets = (
        installed_dir(layout, decisions),
        venv_plan.target(settings, layout, decisions),
        models.repository_dir(layout, repo_files, venv_plan.target(settings, layout, decisions)),
    )
    return tuple(zip(layout.links, targets, strict=True))


def wanted_hash(settings: Settings, layout: Layout, decisions: Decisions) -> str:
    """What the server process runs (its arguments, user, log watcher and OpenMP wait policy, the Triton
    install, the venv's Python), as one hash: a change restarts it. The models and the venv are reloaded
    instead (model_digests)."""
    server = server_plan(settings, layout)
    run_as = [*server.args, f"user={server.user}", *server.log_watch]
    run_as.append(f"omp_wait_policy={settings.triton_omp_wait_policy}")  # the stubs inherit it from the server
    return server_unit.server_hash(
        run_as, installed_dir(layout, decisions), decisions.python or "", decisions.libpython_dir or ""
    )


def model_digests(
    settings: Settings, layout: Layout, decisions: Decisions, repo_files: dict[str, bytes]
) -> dict[str, str]:
    """Each model's digest: its repository files and the venv (or environment of its own) its stubs run on
    (tasks/models/control.py)."""
    envs = venv_plan.model_env_targets(settings, layout, decisions)
    return model_control.digests(repo_files, venv_plan.target(settings, layout, decisions), envs)


def repository_files(settings: Settings, layout: Layout, decisions: Decisions, gpu_ids: list[int]) -> dict[str, bytes]:
    """The model repository's files for this host, each own environment named in its model's config.pbtxt."""
    envs = venv_plan.model_env_targets(settings, layout, decisions)
    return models.repository_files(settings.models, layout, gpu_ids, decisions.model_serving, envs)


def server_change(settings: Settings, layout: Layout, decisions: Decisions, gpu_ids: list[int]) -> str:
    """In words, what will happen to the server: keeps running, starts, restarts and why, or keeps running
    while models are loaded, reloaded or unloaded."""
    server = server_plan(settings, layout)
    state = host.get_fact(ServerState, server.run_dir, server.http_host, server.http_port, server.models_dir)
    why = why_start(state, host.get_fact(InitSystem)["systemd"], server, wanted_hash(settings, layout, decisions))
    if not why:
        repo_files = repository_files(settings, layout, decisions, gpu_ids)
        wanted = model_digests(settings, layout, decisions, repo_files)
        change = model_control.planned(state["models"], wanted, server.models_dir)
        if change:
            return f"keeps running (pid {state['pid']}); models: {change.words()}"
        return f"keeps running (pid {state['pid']})"
    if why == "not running":
        return "will start"
    refused = server_handover.refusal(server, state)
    if not refused:
        return f"will hand over to a new server beside it (pid {state['pid']}): {why}; no request fails"
    return f"will restart (pid {state['pid']}): {why}" + ("" if refused == "-" else f"; not handed over: {refused}")


def serve(settings: Settings, layout: Layout, decisions: Decisions, gpu_ids: list[int]) -> tuple[tuple[str, str], ...]:
    """Add the serving operations for one host; returns what the server is to run, (link, target) pairs. A
    hub model's files come through the controller where relay_dir says (deploy/serve.py's run too)."""
    relay = relay_dir(settings, host)
    venv_python = f"{venv_plan.target(settings, layout, decisions)}/bin/python3"
    # the server's user first: the hub's files are fetched as that user, into its cache
    server_user.present(
        user=settings.triton_user,
        run_dir=layout.run,
        hf_cache=layout.hf_cache,
        bytecode=layout.python_bytecode,
        made_users=layout.made_users,
    )
    net = network.shell_args(layout.network_settings_file, settings.network_env)
    models.sources(
        specs=settings.models,
        layout=layout,
        hf_token=settings.hf_token,
        net=net,
        python=venv_python,
        user=settings.triton_user,
        relay=None if settings.offline else hub_relay.access(relay, settings.hf_endpoint, settings.hf_token),
    )
    model_control.access(layout, settings.triton_user)  # the key the repository API asks for, the launcher
    repo_files = repository_files(settings, layout, decisions, gpu_ids)
    venv = venv_plan.target(settings, layout, decisions)
    models.repository(models.repository_dir(layout, repo_files, venv), repo_files)
    for path, versions in ((layout.venv, layout.venvs), (layout.models, layout.repositories)):
        switch.adopted(name=f"{path}: a link", path=path, versions=versions)
    server = server_plan(settings, layout)
    targets = links(settings, layout, decisions, repo_files)
    digests = model_digests(settings, layout, decisions, repo_files)  # what is loaded, and what the proof keys
    server_process.running(
        name="Triton server running, ready and proven",
        plan=server,
        wanted_hash=wanted_hash(settings, layout, decisions),
        links=targets,
        models=["smoke", *(m.name for m in settings.models)],
        loaded=digests,
        verify=models.verify_spec(settings.models, layout, gpu_ids, decisions.model_serving, digests),
        python=decisions.script_python,
    )
    if server.front:  # after the server: a first start's server is proven on its slot, then the front comes up
        front.running(name="the front (HAProxy) on the server's ports", front=server.front, user=settings.triton_user)
    return targets


def serve_host(overrides: Mapping[str, Any] | None = None) -> Settings | None:
    """Serve the configured models on the current (provisioned) host, as deploy/serve.py does; refused,
    naming the fix, on a host not provisioned. overrides: settings over the host's data (a packaged
    deploy's arguments). Returns the settings it served with; None where it refused."""
    reading = read_host_timed(host, overrides)
    assessment = reading.assessment
    missing = assessment.not_provisioned  # a model's own environment among them: serve builds none
    run_summary.summary(state)  # one line per host at the end: OK / BLOCKED / FAILED and why
    if assessment.blockers or missing:
        names = ", ".join(i.name for i in [*assessment.blockers, *missing])
        reason = f"not provisioned for serving ({names}): run deploy/provision.py first"
        run_summary.refuse(state, host, reason, "serve")
        return None
    # the network settings as they are now (a hub model fetched here runs in that shell)
    layout = reading.layout
    network.env_written(
        name="network settings (root-only file)", path=layout.network_settings_file, env=reading.settings.network_env
    )
    serve(reading.settings, layout, assessment.decisions, reading.gpu_ids)
    return reading.settings
