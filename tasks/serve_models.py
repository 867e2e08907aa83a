"""Serving, shared by deploy/provision.py and deploy/serve.py: model sources, the repository,
and the server (re)started only when what it runs changed, then proven by inference."""

from __future__ import annotations

from compat.assessment import Decisions
from config.layout import Layout
from config.settings import Settings
from tasks import models, server_process, server_user
from tasks.triton_install import installed_dir


def serve(settings: Settings, layout: Layout, d: Decisions, gpu_ids: list[int]) -> None:
    """Add the serving operations for one host."""
    models.sources(settings.models, layout, settings.hf_token, settings.proxy_env)
    repo_files = models.repository_files(settings.models, layout, gpu_ids)
    models.repository(layout, repo_files)
    server_user.present(settings.triton_user, layout.run, layout.hf_cache)
    server = server_process.plan(settings, layout)
    run_as = [*server.args, f"user={server.user}"]  # a change of user restarts the server too
    wanted = server_process.config_hash(run_as, repo_files, installed_dir(layout, d), d.venv_pins)
    server_process.running(
        name="Triton server running, ready and proven",
        plan=server,
        wanted_hash=wanted,
        models=["smoke", *(m.name for m in settings.models)],
        verify=models.verify_spec(settings.models, layout, gpu_ids),
        python=d.script_python,
    )
