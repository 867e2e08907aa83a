"""Where everything goes on a host, derived from the settings in one place."""

from __future__ import annotations

from dataclasses import dataclass

from config.settings import Settings


@dataclass(frozen=True)
class Layout:
    """Paths on the host. Install on local disk; only caches on the persistent path."""

    settings: Settings

    @property
    def home(self) -> str:
        return self.settings.triton_home.rstrip("/")

    @property
    def current(self) -> str:
        """The `current` link to the complete install in use: TRITON_HOME."""
        return f"{self.home}/current"

    @property
    def versions(self) -> str:
        return f"{self.home}/versions"

    @property
    def launcher(self) -> str:
        """A script that sets the environment and runs its arguments (pyinfra reads no profile)."""
        return f"{self.home}/bin/triton-env"

    @property
    def server_launcher(self) -> str:
        """Runs tritonserver with the launcher's environment, its repository API (load, unload) restricted
        to requests that carry the model-control key (tasks/models/control.py)."""
        return f"{self.home}/bin/triton-server"

    @property
    def model_control_key(self) -> str:
        """The key the repository API asks for: root's, readable by the server's group only."""
        return "/etc/triton-provisioner/model-control.key"

    @property
    def log_rotate(self) -> str:
        """The log rotation script (remote/actions/log_rotate.py) the watcher beside the server runs."""
        return f"{self.home}/bin/triton-log-rotate"

    @property
    def server_log(self) -> str:
        """The server's log: what it prints, rotated past triton_log_max_mb (log.1, log.2 ...)."""
        return f"{self.run}/tritonserver.log"

    @property
    def profile(self) -> str:
        return "/etc/profile.d/triton.sh"

    @property
    def models(self) -> str:
        """The model repository the server reads: a link to one of `repositories` (switched only when
        a new server starts on it, and back if that server fails)."""
        return f"{self.home}/models"

    @property
    def repositories(self) -> str:
        """Rendered model repositories, one per content (local disk, rebuilt after a reset)."""
        return f"{self.models}.versions"

    @property
    def model_sources(self) -> str:
        """path: models uploaded from the controller: on the persistent path, kept across resets."""
        return f"{self.persist}/models"

    @property
    def run(self) -> str:
        """The server's pid file, config hash and log."""
        return f"{self.home}/run"

    @property
    def uploaded_wheels(self) -> str:
        """pip_find_links = "upload:<dir>": the controller's wheels, copied here."""
        return f"{self.persist}/uploaded-wheels"

    @property
    def wheelhouse_root(self) -> str:
        return f"{self.persist}/wheels"

    @property
    def persist(self) -> str:
        return self.settings.persist_dir.rstrip("/")

    @property
    def downloads(self) -> str:
        return f"{self.persist}/downloads"

    @property
    def images(self) -> str:
        """The cache of pulled container image blobs (an OCI image layout's blobs/sha256/HEX), root's."""
        return f"{self.downloads}/images"

    @property
    def python_standalone_archive(self) -> str:
        """The standalone CPython's archive in the download cache, named by version and sha256."""
        st = self.settings
        return f"{self.downloads}/cpython-{st.python_standalone_version}-{st.python_standalone_sha256[:16]}.tar.gz"

    @property
    def python_standalone_home(self) -> str:
        """Where the standalone CPython unpacks: one directory per version and archive."""
        st = self.settings
        return f"{self.home}/python/{st.python_standalone_version}-{st.python_standalone_sha256[:12]}"

    @property
    def uv_pythons(self) -> str:
        """Where uv installs standalone CPythons (one directory per build, a link per minor version)."""
        return f"{self.home}/python/uv"

    def uv_python_home(self, minor: str, arch: str) -> str:
        """The link uv keeps to the newest installed build of a minor version: the venv is made from it."""
        return f"{self.uv_pythons}/cpython-{minor}-linux-{arch}-gnu"

    @property
    def uv_python_cache(self) -> str:
        """The CPython archives uv downloaded (checked against uv's sha256 at each use): a reset host and an
        offline run install from here."""
        return f"{self.persist}/python-downloads"

    @property
    def uv_cache(self) -> str:
        """uv's own cache (a downloads list fetched from python_downloads_json_url, kept for offline runs)."""
        return f"{self.persist}/uv-cache"

    def uv_wheel(self, version: str, arch: str) -> str:
        """The pinned uv wheel in the download cache."""
        return f"{self.downloads}/uv-{version}-{arch}.whl"

    @property
    def made_users(self) -> str:
        """The users the provisioner made, one name a line, where only root writes: only these may be
        changed or removed by it (an account it did not make is never touched)."""
        return "/etc/triton-provisioner/made-users"

    @property
    def network_settings_file(self) -> str:
        """The root-only file of network settings the steps that download read (tasks/network.py)."""
        return "/etc/triton-provisioner/network.env"

    @property
    def tools(self) -> str:
        """Programs the installer runs (uv's binary), on local disk beside the installs."""
        return f"{self.home}/tools"

    @property
    def apt_state(self) -> str:
        """Root's local record of the apt cache's check (what was intact), and the manifest's digest on its
        way to the controller."""
        return "/etc/triton-provisioner/apt"

    @property
    def apt_cache(self) -> str:
        """apt's lists and .debs, so a reset host installs its libraries offline."""
        return f"{self.persist}/apt"

    @property
    def venv_snapshots(self) -> str:
        """Tars of finished venvs, one per wheelhouse key (tasks/venv/operations.py snapshot_saved)."""
        return f"{self.persist}/venv-snapshots"

    @property
    def pip_cache(self) -> str:
        return f"{self.persist}/pip-cache"

    @property
    def hf_home(self) -> str:
        return f"{self.persist}/huggingface"

    @property
    def hf_cache(self) -> str:
        """The hub's cache in HF_HOME: the one place under it the server user may write."""
        return f"{self.hf_home}/hub"

    @property
    def verified_answers(self) -> str:
        """The answers each model gave in-process at its first proof (tasks/server/scripts/verify_models.py):
        kept by the server's user in its cache, for later proofs of the same model and venv."""
        return f"{self.hf_cache}/.triton-verified"

    @property
    def python_bytecode(self) -> str:
        """The server's compiled Python (PYTHONPYCACHEPREFIX in its launcher only): the venv is root's, so the
        server's user cannot write __pycache__ beside it and every model load compiled torch and transformers
        again (~4.6 s of CPU each here). Written by that user at first import; on the persistent path, so a
        reset compiles nothing again. Root never runs Python with it: none ("") where the server runs as root
        (its stubs write beside root's venv), so a folder another user filled is never read by root."""
        return "" if self.settings.triton_user == "root" else f"{self.persist}/python-bytecode"

    @property
    def hub_markers(self) -> str:
        """What hub_fetch.py completed: per model revision, the commit and files (read by HubSnapshot)."""
        return f"{self.hf_home}/provisioner-fetched"

    @property
    def venv(self) -> str:
        """The venv the server runs with (venv_dir): a link to one of `venvs`, switched like `models`."""
        return self.settings.venv_dir.rstrip("/")

    @property
    def venvs(self) -> str:
        """The venvs themselves, one per set of pins, sources and Python: a pin change builds a new one
        beside the one in use. A venv names its own path, so each is made where it stays."""
        return f"{self.venv}.versions"

    @property
    def model_envs(self) -> str:
        """Models' own Python environments (a Triton folder whose pins clash with the venv's), one per model,
        pins, sources and Python: named in that model's config.pbtxt (EXECUTION_ENV_PATH), not linked."""
        return f"{self.venv}.model-envs"

    def model_env_snapshots(self, model: str) -> str:
        """Tars of a model's own environment, a folder per model: writing one removes the others beside it."""
        return f"{self.venv_snapshots}/model-{model}"

    @property
    def links(self) -> tuple[str, str, str]:
        """What the server runs, each a link switched as one when a new server starts: the Triton
        install, the venv and the model repository."""
        return (self.current, self.venv, self.models)

    def library_dirs(self, libpython_dir: str | None) -> list[str]:
        """The server's LD_LIBRARY_PATH, in order: Triton's lib/, then the chosen Python's libpython
        directory where the loader does not search it (Decisions.libpython_dir). env.sh exports it;
        the audit checks the install's libraries with the same value."""
        return [f"{self.current}/lib", *([libpython_dir] if libpython_dir else [])]
