"""Serving, shared by deploy/provision.py and deploy/serve.py: model sources, the repository,
and the server (re)started only when what it runs changed, then proven by inference."""

from __future__ import annotations

from pyinfra import host

from compat.assessment import Decisions
from config.layout import Layout
from config.settings import Settings
from facts.server import ServerState
from facts.system import InitSystem
from tasks import models, network, server_process, server_unit, server_user, switch, venv_plan
from tasks.triton_install import installed_dir


def links(
    settings: Settings, layout: Layout, d: Decisions, repo_files: dict[str, bytes]
) -> tuple[tuple[str, str], ...]:
    """(link, target) for what the server is to run: the Triton install, the venv, the model repository."""
    targets = (
        installed_dir(layout, d),
        venv_plan.target(settings, layout, d),
        models.repository_dir(layout, repo_files),
    )
    return tuple(zip(layout.links, targets, strict=True))


def wanted_hash(settings: Settings, layout: Layout, decisions: Decisions, repo_files: dict[str, bytes]) -> str:
    """What the server will run (its arguments, user and log watcher, the repository's files, the
    install, the venv and its pins), as one hash: a change restarts it, nothing else does."""
    server = server_process.plan(settings, layout)
    run_as = [
        *server.args,
        f"user={server.user}",
        *server.log_watch,
        *(t for _, t in links(settings, layout, decisions, repo_files)),
    ]
    return server_unit.config_hash(run_as, repo_files, installed_dir(layout, decisions), decisions.venv_pins)


def server_change(settings: Settings, layout: Layout, decisions: Decisions, gpu_ids: list[int]) -> str:
    """In words, what will happen to the server: keeps running, starts, or restarts and why."""
    p = server_process.plan(settings, layout)
    state = host.get_fact(ServerState, p.run_dir, p.http_host, p.http_port, p.models_dir)
    why = server_process.why_start(
        state,
        host.get_fact(InitSystem)["systemd"],
        p,
        wanted_hash(
            settings,
            layout,
            decisions,
            models.repository_files(settings.models, layout, gpu_ids, decisions.model_serving),
        ),
    )
    if not why:
        return f"keeps running (pid {state['pid']})"
    return "will start" if why == "not running" else f"will restart (pid {state['pid']}): {why}"


def serve(settings: Settings, layout: Layout, decisions: Decisions, gpu_ids: list[int]) -> tuple[tuple[str, str], ...]:
    """Add the serving operations for one host; returns what the server is to run, (link, target) pairs."""
    venv_python = f"{venv_plan.target(settings, layout, decisions)}/bin/python3"
    # the server's user first: the hub's files are fetched as that user, into its cache
    server_user.present(settings.triton_user, layout.run, layout.hf_cache, layout.made_users)
    net = network.shell_args(layout.network_settings_file, settings.network_env)
    models.sources(
        specs=settings.models,
        layout=layout,
        hf_token=settings.hf_token,
        net=net,
        python=venv_python,
        user=settings.triton_user,
    )
    repo_files = models.repository_files(settings.models, layout, gpu_ids, decisions.model_serving)
    models.repository(models.repository_dir(layout, repo_files), repo_files)
    for path, versions in ((layout.venv, layout.venvs), (layout.models, layout.repositories)):
        switch.adopted(name=f"{path}: a link", path=path, versions=versions)
    server = server_process.plan(settings, layout)
    wanted = wanted_hash(settings, layout, decisions, repo_files)
    targets = links(settings, layout, decisions, repo_files)
    server_process.running(
        name="Triton server running, ready and proven",
        plan=server,
        wanted_hash=wanted,
        links=targets,
        models=["smoke", *(m.name for m in settings.models)],
        verify=models.verify_spec(settings.models, layout, gpu_ids, decisions.model_serving),
        python=decisions.script_python,
    )
    return targets
