"""Provision Triton Inference Server on every host of the inventory, idempotently.

    pyinfra INVENTORY deploy/provision.py -y

Reads the host, applies the compatibility rules (the audit's) and refuses on a blocker
before changing anything; then installs each step as an operation that changes only what
differs, serves the configured models and proves them by inference. A second run changes
nothing.
"""

import json
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state
from pyinfra.facts.files import Sha256File
from pyinfra.facts.server import Which
from pyinfra.operations import files

from compat import lock_digests, offline, preflight, report
from compat.reading import read_host
from compat.tables import UV_VERSION, UV_WHEELS
from compat.venv_plan import VenvPlan, apt_digest_store
from config.secrets import mask_output
from facts.http import UrlSize
from run import run_summary, timings
from tasks import (
    apt_packages,
    downloads,
    environment,
    models,
    network,
    python_standalone,
    retention,
    serve_models,
    triton_install,
    upload,
    venv,
    wheelhouse,
)
from tasks.serve_models import serve

mask_output()  # URL passwords are masked in every line pyinfra prints

started = time.monotonic()
reading = read_host(host, state.inventory)
timings.record(state, host.name, time.monotonic() - started, reading.settings.step_timings_path)
settings, layout, assessment = reading.settings, reading.layout, reading.assessment
records = settings.on_controller(settings.provision_records_dir)
if records:  # the outcome, kept on the controller for deploy/status.py
    run_summary.summary(state).records[host.name] = records
run_summary.summary(state)  # one line per host at the end: OK / BLOCKED / FAILED and why


def install(settings, layout, d, gpu_ids: list[int], venv_plan: VenvPlan, artifact_verified: bool, arch: str) -> None:
    """Every step, each an idempotent operation, in order."""

    # 0. a venv snapshot kept on the persistent path starts unpacking now, while apt and Triton install
    venv.restore_started(name="venv snapshot unpacking (background)", plan=venv_plan)

    # 1. apt runtime libraries the build and the stub need on this distro (cached on the persistent path)
    # the network settings, exported by a root-only shell for every step that downloads (no command line)
    network.env_written(
        name="network settings (root-only file)", path=layout.network_settings_file, env=settings.network_env
    )
    net = network.shell_args(layout.network_settings_file, settings.network_env)
    apt_store = apt_digest_store(settings, host.name)  # where the controller keeps the apt cache's digest
    apt_packages.installed(
        name="apt runtime libraries",
        packages=d.apt_packages,
        cache_dir=layout.apt_cache,
        offline=settings.offline,
        state_dir=layout.apt_state,
        manifest_sha256=apt_packages.manifest_digest_kept(apt_store),
        digest_store=apt_store,
        **net,
    )

    # 2. Triton from a checksummed artifact, cached on the persistent path, switched in when complete
    a = d.chosen_artifact  # decided once, by the rules (compat/build.py)
    downloads.cached(
        name="Triton artifact in the cache",
        url=a.url,
        sha256=a.sha256,
        dest=a.archive,
        python=d.script_python,
        verified=artifact_verified,
        **net,
    )
    triton_install.installed(
        name="Triton server installed",
        source=settings.triton_source,
        archive=a.archive,
        sha256=a.sha256,
        version=a.version,
        stub_python=d.python,
        versions_dir=layout.versions,
        strip_components=a.strip_components,
        python=d.script_python,
        stub_fixes=json.dumps(d.stub_fixes),
    )

    # 2b. a standalone CPython where no host Python fits (triton_python, python_standalone_url)
    if d.python_source == "standalone":
        downloads.cached(
            name="Standalone Python in the cache",
            url=settings.python_standalone_url,
            sha256=settings.python_standalone_sha256,
            dest=layout.python_standalone_archive,
            python=d.script_python,
            **net,
        )
        python_standalone.unpacked(
            name="Standalone Python unpacked",
            archive=layout.python_standalone_archive,
            home=layout.python_standalone_home,
            minor=d.python,
            python=d.script_python,
        )

    # 2c. or one the pinned uv installs (the default where no host Python fits), its archive cached
    if d.python_source == "uv":
        uv_url, uv_sha = UV_WHEELS[arch]
        downloads.cached(
            name="uv in the cache",
            url=settings.uv_wheel_url or uv_url,
            sha256=uv_sha,
            dest=layout.uv_wheel(UV_VERSION, arch),
            python=d.script_python,
            **net,
        )
        python_standalone.uv_installed(
            name="Standalone Python installed by uv",
            wheel=layout.uv_wheel(UV_VERSION, arch),
            tools=layout.tools,
            install_dir=layout.uv_pythons,
            archives=layout.uv_python_cache,
            cache=layout.uv_cache,
            want=settings.python_standalone_version or d.python,
            minor=d.python,
            arch=arch,
            mirror=settings.python_install_mirror,
            downloads_list=settings.python_downloads_json_url,
            offline=settings.offline,
            **net,
        )

    # 3. environment: env.sh, profile, launcher, log rotation
    environment.configured(layout, d.libpython_dir, d.script_python)

    # 4. venv with the pinned torch variant, from a wheelhouse on the persistent path
    if settings.pip_find_links.startswith("upload:"):
        upload.directory(settings.pip_find_links[7:], layout.uploaded_wheels, "Wheels uploaded from the controller")
    venv.created(name="venv", plan=venv_plan)
    wheelhouse.filled(name="Wheels in the persistent wheelhouse", plan=venv_plan, **net)
    venv.packages_installed(name="venv packages", plan=venv_plan)

    # 5. HuggingFace cache on the persistent path
    files.directory(name="HF_HOME on the persistent path", path=layout.hf_home, mode="755")

    # 6. models, the repository and the server: restarted only when what it runs changed
    serving = dict(serve(settings, layout, d, gpu_ids))

    # 7. the venv's snapshot, taken once the server has run: it then holds the bytecode that the
    #    stub's imports (torch, numpy) compiled, so a server started after a reset skips that work
    if settings.venv_snapshot:
        venv.snapshot_saved(name="venv snapshot on the persistent path", plan=venv_plan)

    # 8. older versions removed: the newest triton_keep_versions of each, never what is in use
    downloads_used = [a.archive]
    if d.python_source == "standalone":
        downloads_used.append(layout.python_standalone_archive)
    if d.python_source == "uv":
        downloads_used.append(layout.uv_wheel(UV_VERSION, arch))
    retention.pruned(
        name="Older versions pruned",
        folders=[
            retention.Kept(layout.versions, "d", (name_in(serving[layout.current]),), (layout.current,)),
            retention.Kept(layout.venvs, "d", (name_in(serving[layout.venv]),), (layout.venv,)),
            retention.Kept(layout.repositories, "d", (name_in(serving[layout.models]),), (layout.models,)),
            retention.Kept(layout.wheelhouse_root, "d", (name_in(venv_plan.wheelhouse),)),
            retention.Kept(layout.downloads, "f", tuple(name_in(p) for p in downloads_used)),
            # each path: model's versions (the one this run serves kept)
            *(
                retention.Kept(f"{layout.model_sources}/{m.name}", "d", (name_in(models.path_version(m, layout)),))
                for m in settings.models
                if m.kind == "path"
            ),
        ],
        keep=settings.triton_keep_versions,
        report=f"{layout.run}/pruned.txt",
        python=d.script_python,
    )


def name_in(path: str) -> str:
    """The last part of a path: an entry's name in its folder."""
    return path.rsplit("/", 1)[-1]


if assessment.blockers:
    # Refused before any change; the other hosts of the run go on (a failing step drops this one).
    print(report.table(host.name, assessment), flush=True)
    reasons = "; ".join(f"{i.name}: {i.detail} (fix: {i.fix})" for i in assessment.blockers)
    run_summary.refuse(state, host, reasons, "provision")
else:
    d = assessment.decisions
    a = d.chosen_artifact
    cached = host.get_fact(Sha256File, path=a.archive) == a.sha256  # the download step reuses it
    has_zstd = preflight.wants_zstd(settings) and bool(host.get_fact(Which, command="zstd"))
    plan = preflight.venv_plan(settings, layout, d, has_zstd, secrets.token_hex(6), host.name)
    gaps = offline.gaps(settings, layout, d, plan, cached, reading.facts.uv_pythons) if settings.offline else []
    # a first lock (none kept yet): pins whose version the index has no wheel of are refused now, not at the download
    pins = {name: version for name, version in d.venv_pins.items() if name != "torch"}  # torch: its own index
    sdists = (
        ()
        if plan.lock or settings.offline
        else lock_digests.sdist_only(pins, plan.index_url, lock_digests.urllib_fetch)
    )
    refused = preflight.refusal(host.name, settings, has_zstd, gaps, sdists)
    if refused:
        print("\n".join(refused.shown), flush=True)
        run_summary.refuse(state, host, refused.reason, "provision")
    else:
        # the artifact's size, asked from the host through its proxy (never with a URL's credentials, nor a
        # proxy's on a command line: only once the network shell holds them)
        ask = preflight.asks_artifact_size(settings, d, cached)
        via = network.fact_args(layout.network_settings_file, settings.network_env) if ask else None
        size = host.get_fact(UrlSize, url=a.url, **via) if via is not None else None
        server = serve_models.server_change(settings, layout, d, reading.gpu_ids)
        print(report.plan(host.name, settings, d, cached, server, artifact_size=size), flush=True)
        install(settings, layout, d, reading.gpu_ids, plan, artifact_verified=cached, arch=d.machine)
