"""Provision Triton Inference Server on every host of the inventory, idempotently.

    pyinfra INVENTORY deploy/provision.py -y

Reads the host, applies the compatibility rules (the audit's) and refuses on a blocker
before changing anything; then installs each step as an operation that changes only what
differs, starts the server and proves it with an inference. A second run changes nothing.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state
from pyinfra.api.exceptions import PyinfraError
from pyinfra.operations import files

from compat import report
from compat.rules import assess, wanted_build
from config.settings import load, load_inventory
from facts.gather import gather
from tasks import apt_runtime, artifact, environment, server, triton_install, venv
from tasks.layout import Layout

load_inventory(state.inventory)
settings = load(host.data.dict(), host.name)
layout = Layout(settings)
assessment = assess(gather(host, settings), settings)
if assessment.blockers:
    print(report.table(host.name, assessment), flush=True)
    reasons = "; ".join(f"{i.name}: {i.detail} (fix: {i.fix})" for i in assessment.blockers)
    raise PyinfraError(f"refusing to provision {host.name}, nothing was changed: {reasons}")
d = assessment.decisions
build, release = wanted_build(settings)

# 1. apt runtime libraries the build and the stub need on this distro
apt_runtime.runtime_packages(name="apt runtime libraries", packages=d.apt_packages, cache_dir=layout.apt_cache)

# 2. Triton from a checksummed artifact, cached on the persistent path
if settings.triton_source == "pytriton":
    url = settings.triton_pytriton_url or release.url
    sha256, version, strip = settings.triton_pytriton_sha256, release.triton, 0
    archive = f"{layout.downloads}/{release.url.rsplit('/', 1)[1]}"
else:
    url, sha256, version = settings.triton_tarball_url, settings.triton_tarball_sha256, ""
    strip = settings.triton_tarball_strip_components
    archive = f"{layout.downloads}/triton-{sha256[:16]}.tar"
artifact.downloaded(name="Triton artifact in the cache", url=url, sha256=sha256, dest=archive, python=d.python_path)
triton_install.installed(
    name="Triton server installed",
    source=settings.triton_source,
    archive=archive,
    sha256=sha256,
    version=version,
    stub_python=d.python,
    versions_dir=layout.versions,
    current=layout.current,
    strip_components=strip,
    python=d.python_path,
)

# 3. environment: env.sh, profile, launcher
environment.configured(layout, d.libpython_dir)

# 4. venv with the pinned torch variant, from a wheelhouse on the persistent path
pins = venv.requirement_versions(
    d.torch_requirement,
    settings.numpy_version,
    settings.transformers_version,
    settings.tokenizers_version,
    settings.huggingface_hub_version,
)
sources = [d.torch_index or "", settings.pip_index_url, settings.pip_find_links]
wheelhouse = f"{layout.wheelhouse_root}/{venv.wheelhouse_key(pins, sources)}"
venv.created(name="venv", python=d.python_path, venv_dir=layout.venv, python_minor=d.python)
venv.wheelhouse_filled(
    name="Wheels in the persistent wheelhouse",
    venv_dir=layout.venv,
    wheelhouse=wheelhouse,
    requirements=pins,
    pip_cache=layout.pip_cache,
    torch_index=d.torch_index,
    index_url=settings.pip_index_url,
    find_links=settings.pip_find_links,
)
venv.packages_installed(name="venv packages", venv_dir=layout.venv, wheelhouse=wheelhouse, requirements=pins)

# 5. HuggingFace cache on the persistent path
files.directory(name="HF_HOME on the persistent path", path=layout.hf_home, mode="755")

# 6. a model repository and the server, restarted only when what it runs changed
models = server.model_files(["smoke"])
install_dir = f"{layout.versions}/{triton_install.version_dir_name(version, sha256, d.python)}"
wanted = server.config_hash(server.server_args(settings, layout), models, install_dir, pins)
server.repository(layout, models)
server.running(
    name="Triton server running and ready",
    s=settings,
    layout=layout,
    wanted_hash=wanted,
    models=["smoke"],
    python=d.python_path,
)
