"""Provisioning one host, shared by deploy/provision.py and the packaged deploy (tasks/deploys.py): the
host read and the rules applied, a refusal before any change on a blocker, the plan, then every install
step as an idempotent operation, in order."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from pyinfra import host, state
from pyinfra.facts.files import Sha256File
from pyinfra.facts.server import Which
from pyinfra.operations import files

from config.layout import Layout
from config.settings import Settings, host_key
from facts.http import UrlSize
from planner import offline, preflight
from planner.assessment import Decisions
from planner.reading import HostReading, read_host_timed
from planner.tables import UV_VERSION, UV_WHEELS
from reports import assessment as report
from run import run_summary
from tasks import environment, network, retention, serve_models
from tasks.apt import packages as apt_packages
from tasks.downloads import operations as downloads
from tasks.downloads import relay as controller_downloads
from tasks.downloads import upload
from tasks.models import repository as models
from tasks.network import NetworkArgs
from tasks.python import standalone as python_standalone
from tasks.retention import name_in
from tasks.serve_models import serve
from tasks.triton import image_relay
from tasks.triton import install as triton_install
from tasks.triton.build import cache_proof, image_parts, image_registry_url
from tasks.venv import lock_digests, model_envs, wheelhouse
from tasks.venv import operations as venv
from tasks.venv.plan import VenvPlan, apt_digest_store


def provision_host(overrides: Mapping[str, Any] | None = None) -> Settings | None:
    """Provision the current host, as deploy/provision.py does: read it, apply the rules and refuse on a
    blocker before any change, print the plan, then every step. overrides: settings over the host's data
    (a packaged deploy's arguments). Returns the settings it provisioned with; None where it refused."""
    reading = read_host_timed(host, overrides)
    settings, layout, assessment = reading.settings, reading.layout, reading.assessment
    records = settings.on_controller(settings.provision_records_dir)
    if records:  # the outcome, kept on the controller for deploy/status.py
        run_summary.summary(state).records[host.name] = records
    run_summary.summary(state)  # one line per host at the end: OK / BLOCKED / FAILED and why
    if assessment.blockers:
        # Refused before any change; the other hosts of the run go on (a failing step drops this one).
        print(report.table(host.name, assessment), flush=True)
        reasons = "; ".join(f"{i.name}: {i.detail} (fix: {i.fix})" for i in assessment.blockers)
        run_summary.refuse(state, host, reasons, "provision")
        return None
    decisions = assessment.decisions
    artifact = decisions.chosen_artifact
    # the artifact is read (its sha256, the whole file) only where its install is not complete: a no-op run
    # does not read hundreds of MB on a slow notebook drive; the download step reuses what this found
    installed = triton_install.installed_from(layout, decisions)
    cached = not installed and host.get_fact(Sha256File, path=cache_proof(artifact)) == artifact.sha256
    has_zstd = preflight.wants_zstd(settings) and bool(host.get_fact(Which, command="zstd"))
    key = host_key(host.name, reading.facts.machine_id)  # its records among every inventory's on the controller
    venv_plan = preflight.venv_plan(settings, layout, decisions, has_zstd, secrets.token_hex(6), key)
    # the models' own environments (a Triton folder whose pins clash with the venv's), planned as the venv is
    env_plans = {
        model: preflight.venv_plan(settings, layout, decisions, has_zstd, "", key, model)
        for model in decisions.model_envs
    }
    gaps = (
        offline.gaps(settings, layout, decisions, venv_plan, cached or installed, reading.facts.uv_pythons, env_plans)
        if settings.offline
        else []
    )
    # a first lock (none kept yet): pins whose version the index has no wheel of are refused now, not at the download
    pins = {name: version for name, version in decisions.venv_pins.items() if name != "torch"}  # torch: its own index
    sdists = (
        ()
        if venv_plan.lock or settings.offline
        else lock_digests.sdist_only(pins, venv_plan.index_url, lock_digests.urllib_fetch)
    )
    relay = controller_downloads.relay_dir(settings, host)  # one download for many hosts
    if relay:  # the wheels too, but from a find-links folder of the host's own (the controller cannot read it)
        venv_plan = controller_downloads.wheels_relayed(venv_plan, relay, decisions.machine, settings.uv_wheel_url)
        env_plans = {
            model: controller_downloads.wheels_relayed(plan, relay, decisions.machine, settings.uv_wheel_url)
            for model, plan in env_plans.items()
        }
    plans = [venv_plan, *env_plans.values()]
    unsafe_lock = controller_downloads.unsafe_lock(plans) if relay else (venv_plan.lock_store, "")
    refused = preflight.refusal(host.name, settings, has_zstd, gaps, sdists, unsafe_lock)
    if refused:
        print("\n".join(refused.shown), flush=True)
        run_summary.refuse(state, host, refused.reason, "provision")
        return None
    # the artifact's size, asked from the host through its proxy (never with a URL's credentials, nor a
    # proxy's on a command line: only once the network shell holds them)
    ask = preflight.asks_artifact_size(settings, decisions, cached or installed)
    via = network.fact_args(layout.network_settings_file, settings.network_env) if ask else None
    size = host.get_fact(UrlSize, url=artifact.url, **via) if via is not None else None
    server = serve_models.server_change(settings, layout, decisions, reading.gpu_ids)
    print(report.plan(host.name, settings, decisions, cached, server, size, installed, relay), flush=True)
    install(reading, venv_plan, cached, installed, env_plans)
    return settings


def install(
    reading: HostReading,
    venv_plan: VenvPlan,
    artifact_verified: bool,
    artifact_installed: bool,
    env_plans: Mapping[str, VenvPlan] | None = None,
) -> None:
    """Every step, each an idempotent operation, in order, for the host as read (its settings, layout, the
    rules' decisions). env_plans: the models' own environments (model name -> its plan). Where each file
    comes from, the host or the controller's relay, each step asks relay.relay_dir: one call decides."""
    settings, layout, decisions = reading.settings, reading.layout, reading.assessment.decisions
    env_plans = env_plans or {}
    # a venv snapshot kept on the persistent path starts unpacking now, while apt and Triton install
    venv.restore_started(name="venv snapshot unpacking (background)", plan=venv_plan)
    net = network_settings(settings, layout)
    apt_store = apt_digest_store(settings, host_key(host.name, reading.facts.machine_id))  # by name and who it is
    apt_libraries(settings, layout, decisions, net, apt_store)
    triton_server(settings, layout, decisions, artifact_verified, artifact_installed, net)
    standalone_python(settings, layout, decisions, decisions.machine, net)
    environment.configured(layout=layout, libpython_dir=decisions.libpython_dir, python=decisions.script_python)
    python_packages(settings, layout, venv_plan, net)
    model_envs.built(env_plans, net)
    # 755: the server's user reads it; as root (a notebook's drive, whose modes stay 0700 whatever chmod asks) none
    mode = None if settings.triton_user == "root" else "755"
    files.directory(name="HF_HOME on the persistent path", path=layout.hf_home, mode=mode)
    # models, the repository and the server: restarted only when what it runs changed
    serving = dict(serve(settings, layout, decisions, reading.gpu_ids))
    # the venv's snapshot, taken once the server has run: it then holds the bytecode that the stub's
    # imports (torch, numpy) compiled, so a server started after a reset skips that work
    if settings.venv_snapshot:
        venv.snapshot_saved(name="venv snapshot on the persistent path", plan=venv_plan)
        model_envs.snapshots_saved(env_plans)
    older_versions_pruned(settings, layout, decisions, venv_plan, serving, decisions.machine, env_plans)


def network_settings(settings: Settings, layout: Layout) -> NetworkArgs:
    """The network settings, exported by a root-only shell for every step that downloads (no command line):
    the arguments those steps run with."""
    network.env_written(
        name="network settings (root-only file)", path=layout.network_settings_file, env=settings.network_env
    )
    return network.shell_args(layout.network_settings_file, settings.network_env)


def apt_libraries(settings: Settings, layout: Layout, decisions: Decisions, net: NetworkArgs, apt_store: str) -> None:
    """apt runtime libraries the build and the stub need on this distro (cached on the persistent path; the
    .debs through the controller where relay_dir says); apt_store: where the controller keeps the apt cache's
    digest ("" for nowhere)."""
    apt_packages.installed(
        name="apt runtime libraries",
        packages=decisions.apt_packages,
        cache_dir=layout.apt_cache,
        offline=settings.offline,
        state_dir=layout.apt_state,
        manifest_sha256=apt_packages.manifest_digest_kept(apt_store),
        digest_store=apt_store,
        relay=controller_downloads.relay_dir(settings, host),
        relay_origins=settings.apt_relay_origins,
        **net,
    )


def triton_server(
    settings: Settings,
    layout: Layout,
    decisions: Decisions,
    artifact_verified: bool,
    artifact_installed: bool,
    net: NetworkArgs,
) -> None:
    """Triton from a checksummed artifact, cached on the persistent path, unpacked beside the one in use."""
    artifact = decisions.chosen_artifact  # decided once, by the rules (tasks/triton/build.py)
    relay = controller_downloads.relay_dir(settings, host)
    _, repository, _ = image_parts(settings.triton_image)
    if settings.triton_source == "image" and relay:  # one pull for many hosts: the controller's
        image_relay.image_sent(
            name="Triton image in the cache",
            registry_url=image_registry_url(settings),
            repository=repository,
            digest=settings.triton_image_digest,
            cache=artifact.archive,
            relay=relay,
            machine=decisions.machine,
            api_key=settings.registry_credentials,
            needed=not artifact_installed,
        )
    elif settings.triton_source == "image":
        downloads.image_pulled(
            name="Triton image in the cache",
            registry_url=image_registry_url(settings),
            repository=repository,
            digest=settings.triton_image_digest,
            cache=artifact.archive,
            python=decisions.chosen_script_python,
            api_key=settings.registry_credentials,
            needed=not artifact_installed,
            **net,
        )
    else:
        downloads.cached(
            name="Triton artifact in the cache",
            url=artifact.url,
            sha256=artifact.sha256,
            dest=artifact.archive,
            python=decisions.chosen_script_python,
            verified=artifact_verified,
            needed=not artifact_installed,
            relay=relay,
            **net,
        )
    triton_install.installed(
        name="Triton server installed",
        source=settings.triton_source,
        archive=artifact.archive,
        sha256=artifact.sha256,
        version=artifact.version,
        stub_python=decisions.chosen_python,
        versions_dir=layout.versions,
        strip_components=artifact.strip_components,
        python=decisions.chosen_script_python,
        stub_fixes=decisions.stub_fixes,
        backends=artifact.backends,
    )


def standalone_python(settings: Settings, layout: Layout, decisions: Decisions, arch: str, net: NetworkArgs) -> None:
    """Where no host Python fits: a standalone CPython (triton_python, python_standalone_url), or one the
    pinned uv installs (the default), its archive cached; nothing where a host Python serves."""
    relay = controller_downloads.relay_dir(settings, host)
    if decisions.python_source == "standalone":
        downloads.cached(
            name="Standalone Python in the cache",
            url=settings.python_standalone_url,
            sha256=settings.python_standalone_sha256,
            dest=layout.python_standalone_archive,
            python=decisions.chosen_script_python,
            relay=relay,
            **net,
        )
        python_standalone.unpacked(
            name="Standalone Python unpacked",
            archive=layout.python_standalone_archive,
            home=layout.python_standalone_home,
            minor=decisions.chosen_python,
            python=decisions.chosen_script_python,
        )
    if decisions.python_source == "uv":
        uv_url, uv_sha = UV_WHEELS[arch]
        downloads.cached(
            name="uv in the cache",
            url=settings.uv_wheel_url or uv_url,
            sha256=uv_sha,
            dest=layout.uv_wheel(UV_VERSION, arch),
            python=decisions.chosen_script_python,
            relay=relay,
            **net,
        )
        python_standalone.uv_installed(
            name="Standalone Python installed by uv",
            wheel=layout.uv_wheel(UV_VERSION, arch),
            tools=layout.tools,
            install_dir=layout.uv_pythons,
            archives=layout.uv_python_cache,
            cache=layout.uv_cache,
            want=settings.python_standalone_version or decisions.chosen_python,
            minor=decisions.chosen_python,
            arch=arch,
            mirror=settings.python_install_mirror,
            downloads_list=settings.python_downloads_json_url,
            offline=settings.offline,
            **net,
        )


def python_packages(settings: Settings, layout: Layout, venv_plan: VenvPlan, net: NetworkArgs) -> None:
    """The venv with the pinned torch variant, from a wheelhouse on the persistent path."""
    if settings.pip_find_links.startswith("upload:"):
        upload.directory(
            src=settings.pip_find_links[7:], dest=layout.uploaded_wheels, label="Wheels uploaded from the controller"
        )
    venv.created(name="venv", plan=venv_plan)
    wheelhouse.filled(name="Wheels in the persistent wheelhouse", plan=venv_plan, **net)
    venv.packages_installed(name="venv packages", plan=venv_plan)


def older_versions_pruned(
    settings: Settings,
    layout: Layout,
    decisions: Decisions,
    venv_plan: VenvPlan,
    serving: dict[str, str],
    arch: str,
    env_plans: Mapping[str, VenvPlan],
) -> None:
    """Older versions removed: the newest triton_keep_versions of each, never what is in use (the models' own
    environments and their wheelhouses too)."""
    downloads_used = [decisions.chosen_artifact.archive]
    if decisions.python_source == "standalone":
        downloads_used.append(layout.python_standalone_archive)
    if decisions.python_source == "uv":
        downloads_used.append(layout.uv_wheel(UV_VERSION, arch))
    retention.pruned(
        name="Older versions pruned",
        folders=[
            retention.Kept(
                layout.versions, "directory", (name_in(serving[layout.current]),), (layout.current,), ".tmp"
            ),
            retention.Kept(layout.venvs, "directory", (name_in(serving[layout.venv]),), (layout.venv,)),
            retention.Kept(layout.repositories, "directory", (name_in(serving[layout.models]),), (layout.models,)),
            retention.Kept(
                layout.wheelhouse_root,
                "directory",
                (name_in(venv_plan.wheelhouse), *(name_in(p.wheelhouse) for p in env_plans.values())),
            ),
            retention.Kept(layout.model_envs, "directory", tuple(name_in(p.venv_dir) for p in env_plans.values())),
            retention.Kept(layout.downloads, "file", tuple(name_in(path) for path in downloads_used)),
            # each path: model's versions (the one this run serves kept)
            *(
                retention.Kept(
                    f"{layout.model_sources}/{m.name}", "directory", (name_in(models.path_version(m, layout)),)
                )
                for m in settings.models
                if m.kind == "path"
            ),
        ],
        keep=settings.triton_keep_versions,
        report=f"{layout.run}/pruned.txt",
        python=decisions.chosen_script_python,
    )
