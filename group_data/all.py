"""Every setting of the Triton provisioner, with its default. Override per host in the
inventory, or for one run with `--data name=value`. Validated (config/settings.py) before
any host is touched: a misspelt name (close to a setting below, or under its prefixes: triton_, venv_,
python_, torch_, pip_, hf_) or a malformed value stops the run, naming the nearest setting; names of
your own for other deploys are left alone. `pyinfra INVENTORY deploy/settings.py` prints this file's
settings with each host's values.
"""

# --- Triton server artifact -------------------------------------------------------------
# Where the server comes from: "pytriton" (the nvidia-pytriton wheel from PyPI, which carries
# a real Triton build), "tarball" (your own tarball in the bin/ lib/ backends/ layout) or "image"
# (a container image's /opt/tritonserver, pulled from a registry without Docker: NGC's tritonserver).
triton_source = "pytriton"
# nvidia-pytriton release, and its wheel's sha256; 0.7.0 carries Triton 2.51.0.
triton_pytriton_version = "0.7.0"
triton_pytriton_sha256 = "21f063ff93bb426d0c06b7a55e7eb9efcfe62c0dddd9a908e9877e18710128df"
# Where to fetch that wheel; "" = PyPI's own URL for the version (planner/tables.py).
triton_pytriton_url = ""
# With triton_source = "tarball": URL (http(s):// or file://), sha256 and the number of
# leading path components to strip (1 for "tritonserver/bin/...").
triton_tarball_url = ""
triton_tarball_sha256 = ""
triton_tarball_strip_components = 0
# With triton_source = "image": the image (REGISTRY/REPOSITORY:TAG, e.g.
# "nvcr.io/nvidia/tritonserver:25.01-py3"), and the digest it is pinned to (sha256:..., of its index
# or manifest: `skopeo inspect --raw docker://IMAGE | sha256sum`, or the registry's page); every layer is
# checked against the digests that manifest lists. Layers are cached under persist_dir/downloads/images.
triton_image = ""
triton_image_digest = ""
# The registry's API; "" = https://REGISTRY of triton_image.
triton_image_registry_url = ""
# The secret the registry asks for: NGC's API key (sent to its token service as user $oauthtoken), or the
# password or access token of triton_registry_user where the registry asks for a user (Basic auth: the CNCF
# distribution registry's htpasswd, Harbor, Artifactory, Nexus). "" = an anonymous pull. A secret: never
# printed; it reaches the host in a root-only file the pull removes.
triton_registry_api_key = ""
# The user name that secret belongs to; "" = NGC's `$oauthtoken`.
triton_registry_user = ""

# --- Places on the host -------------------------------------------------------------------
# Install root on local disk: versions/<version>-<sha>/ and the `current` link to one of them.
# No spaces or shell characters: the python backend starts its stub via `bash -c`, unquoted.
triton_home = "/opt/triton"
# The venv the python backend runs models in; on local disk, never on a slow network drive.
venv_dir = "/opt/triton/venv"
# The path that survives a notebook reset (Colab: a folder on /content/drive). Downloads,
# pip's cache and the HuggingFace cache (HF_HOME) live here.
persist_dir = "/var/lib/triton-provisioner"

# --- Python and torch -----------------------------------------------------------------------
# The Python the venv and the python backend stub use:
#   "auto"       a Python of the host that this build has a stub for (and, for Triton 2.49-2.71,
#                numpy<2 wheels: 3.8-3.12) that the server's user can run; on a host with none (Debian
#                13, a notebook with only Python 3.13, a Python kept where only root can reach) the
#                standalone CPython below;
#   "3.12" ...   that Python of the host;
#   "standalone" always the standalone CPython below.
triton_python = "auto"
# Where no host Python fits (or with triton_python = "standalone"), a standalone CPython with its
# shared libpython: a python-build-standalone build (the ones uv installs), checked by sha256, unpacked
# under triton_home/python/ and its archive cached on persist_dir (resets and offline runs take it from
# there). By default uv (pinned, planner/tables.py) installs it, checking the sha256 uv ships for each
# build: python_standalone_version "" = the newest minor this build's stub takes (3.12 for Triton 2.51),
# or "3.11" / "3.11.9" to choose one.
python_standalone_version = ""
# Where uv downloads the CPython builds: "" = python-build-standalone's GitHub releases, or a mirror of
# them (uv's UV_PYTHON_INSTALL_MIRROR: the URL that replaces
# https://github.com/astral-sh/python-build-standalone/releases/download).
python_install_mirror = ""
# A downloads list of your own, in uv's download-metadata.json format, each entry with its sha256
# (uv's UV_PYTHON_DOWNLOADS_JSON_URL): for builds of your own or an air-gapped mirror. "" = uv's list.
python_downloads_json_url = ""
# Where the uv wheel itself comes from: "" = PyPI's file; any URL serving the same wheel (its sha256 is
# checked against planner/tables.py either way). No user or password in these three: uv reads them from
# its environment, which `ps` shows.
uv_wheel_url = ""
# Instead of uv, an archive of your own: a python-build-standalone "install_only" archive, e.g. from
# https://github.com/astral-sh/python-build-standalone/releases the file
# cpython-3.12.<N>+<date>-x86_64-unknown-linux-gnu-install_only.tar.gz, its sha256 (the release's
# SHA256SUMS) and python_standalone_version "3.12.<N>". Downloaded once into persist_dir (checked).
python_standalone_url = ""
python_standalone_sha256 = ""
# torch, pinned. Variant: "auto" (cpu without a GPU; else the newest cuXYZ the driver supports
# fully, else the newest of the driver's CUDA major by minor-version compatibility), "cpu", or
# an explicit "cu126", "cu130" ... 2.14 is the last torch with CUDA 12 wheels, which the 550-575
# drivers of notebooks and most clouds still run (planner/tables.py).
torch_version = "2.14.1"
torch_variant = "auto"
# The PyTorch wheel index; the variant is appended ("<url>/cpu"). "" = no index for torch
# (then pip_find_links must hold the wheel).
torch_index_url = "https://download.pytorch.org/whl"
# Extra places pip looks for wheels: a URL, a path on the host, or "upload:<dir on the
# controller>" to copy a wheelhouse to the host first (air-gapped hosts).
pip_find_links = ""
# PyPI (or a mirror of it) for everything else; "" = pip's default.
pip_index_url = ""
# Pinned model-side packages (numpy<2 for Triton 2.49-2.71's stub; planner/tables.py).
# transformers stays on 4.57 (the last 4.x): 5.x needs Python >= 3.11 (its metadata, checked
# 2026-12-01: transformers 5.23.0, huggingface-hub 2.4.0), which would drop Ubuntu 22.04's 3.10.
numpy_version = "1.26.4"
transformers_version = "4.57.1"
tokenizers_version = "0.22.1"
huggingface_hub_version = "0.36.0"
# The Triton client in the venv, for proving each model over HTTP and gRPC after a start.
tritonclient_version = "2.51.0"
# Keep a tar of the finished venv on persist_dir (the venv's size again, ~1 GB with CPU torch,
# ~6 GB with CUDA): a host re-provisioned after a reset unpacks it in seconds instead of pip
# installing every wheel again. False = install from the wheelhouse each time.
venv_snapshot = True
# How the snapshot is compressed. A notebook's persistent path is a network drive (tens of MB/s):
# there reading a third of the bytes wins by far (BENCHMARKS.md, section 5). "auto" = zstd where the
# host has the zstd command (Ubuntu images do), else gzip; "zstd", "gzip" or "none" (a plain tar).
venv_snapshot_compression = "auto"
# What installs the wheelhouse into the venv: "uv" (a pinned, hash-checked wheel from the same index,
# kept in the wheelhouse; installs in a fraction of pip's time, BENCHMARKS.md section 7) or "pip".
# Either way: exactly the locked files, each checked against its sha256, with no index.
venv_installer = "uv"

# Where the controller keeps each venv's lock: every package, transitive ones too, with its version
# and sha256, one file per Python, torch variant and pins. The first provision writes it; every later
# one (another host, this one after a reset, months later) installs exactly it, each file's hash
# checked. Relative paths are to controller_state_dir (this tree, by default). "" = no lock is kept
# (each wheelhouse still records its own). Commit the locks you rely on.
venv_lock_dir = "venv-locks"
# The first lock is checked on the controller against the sha256 each file's index publishes. A file no
# index publishes one for (a wheel from pip_find_links, an index that did not answer) is refused, and no
# lock kept, unless its package is named here: "torch" (or "torch,mypkg") accepts those packages' files
# as first downloaded (trust on first use). The plan says which.
lock_trust_on_first_use = ""

# How many of each kind to keep: Triton installs, venvs and model repositories under triton_home,
# wheelhouses and downloads on persist_dir. The newest are kept, and never what the running server
# uses or this run installed; each run says how many bytes it freed. 2 = the one in use and the one
# before it (what a failed upgrade rolls back to).
triton_keep_versions = 2

# deploy/uninstall.py: also remove the caches on persist_dir (downloads, wheelhouses, venv snapshots,
# apt's and pip's caches, the HuggingFace cache, uploaded models). False = keep them, so that a later
# provision is fast and offline.
purge_persist = False

# --- Server ------------------------------------------------------------------------------
# The system user the server and the models' code run as (made if absent; no login, no home).
# It may write only the server's run directory (pid, log) and the HF cache. "root" turns this off.
triton_user = "triton-server"
# The server's log: under systemd, the journal (`journalctl -u tritonserver`, kept and rotated by
# journald). Without systemd, TRITON_HOME/run/tritonserver.log (what it prints, and a "--- start" line
# at each start); past triton_log_max_mb it is rotated to .1, .2 ... (triton_log_keep of them; the log
# is copied, then truncated, so the server never stops), checked every triton_log_check_s seconds by a
# watcher beside the server.
triton_log_max_mb = 100
triton_log_keep = 3
triton_log_check_s = 60
# Bound to loopback unless you open it on purpose ("0.0.0.0").
triton_http_address = "127.0.0.1"
triton_http_port = 8000
triton_grpc_port = 8001
triton_metrics_port = 8002
# What a change that needs a new server process does (a new Triton build, Python or server arguments).
# "front": Debian's HAProxy (installed with the runtime libraries) holds the three ports and hands each
# request to the server that serves now; the servers listen on 127.0.0.1 at each port + 10 and + 20, one
# after the other. A build upgrade starts the new server on the other ports, proves it there, switches
# HAProxy to it per request (a kept connection's next request goes to the new server) and stops the old one
# once it has nothing in flight: no request fails for any client (gRPC channels, HTTP keep-alive), and the
# metrics stay on triton_metrics_port. It costs a hop: ~0.2-0.3 ms and 20 MiB; on a 0.3 ms model on 2 CPUs,
# -42% HTTP throughput (BENCHMARKS.md section 28). Under systemd HAProxy is a unit of its own
# (triton-front.service, as the server's user) and both units start on the slot that serves (RUN/slot.env).
# "handover": no hop. The new server starts beside the running one on the same HTTP and gRPC ports, is
# proven on its own (new connections are steered to it only then), and the old one then finishes what it
# holds and stops (under systemd inside tritonserver.service: `systemctl reload`). A client that keeps its
# connection stays with the old server while it stops and may see requests fail (section 28), and the
# metrics move to the other of triton_metrics_port and triton_metrics_handover_port (0: the metrics port
# + 1; Triton cannot share that port; `deploy/status.py` says which). Needs a server started with the shared
# ports (the first change restarts), and memory for two servers' models (else it restarts, saying why).
# "auto": "front" where systemd runs the host (VMs: remote clients keep connections, a scraper reads one
# metrics port), "handover" where it does not (a notebook: its clients are its own cells, and the hop would
# take its few cores); tasks/server/front_plan.AUTO_UPGRADE. "restart": stop, then start.
triton_upgrade = "auto"
triton_metrics_handover_port = 0
# Models are loaded through Triton's repository API (--model-control-mode=explicit): a model added,
# changed or removed, or a new venv, is loaded or unloaded while the server and the other models go on
# answering; the API asks for a key only root and the server's user can read (/etc/triton-provisioner/
# model-control.key). How many models Triton loads at once, at a start and at a change:
triton_model_load_threads = 4
# How the models' idle OpenMP threads wait (torch on CPU, in each model's stub; set in the server's
# environment, which the stubs inherit). "passive": they sleep until there is work. "active": they spin
# between operations, a core each for good. "" = the library's own default: GNU OpenMP spins 300,000
# times after each parallel part. On 2 CPUs a small classifier's request took 15 ms of the stub's CPU
# that way, 66 ms active and 4 ms passive, which answered soonest too (BENCHMARKS.md section 26). A
# change restarts the server.
triton_omp_wait_policy = "passive"

# --- Network ----------------------------------------------------------------------------
# Proxies for every download on the host: the Triton artifact, the standalone Python, apt,
# pip and the model hub. Set here, not in the host's environment: sudo and the non-login
# shells pyinfra runs drop that. "" = connect directly. Example: "http://proxy.corp:3128".
http_proxy = ""
https_proxy = ""
# Hosts reached directly, comma-separated, as curl and pip read it: "localhost,.corp,10.0.0.5".
no_proxy = ""
# Provision from the caches on persist_dir alone: no index, no apt update, HF_HUB_OFFLINE=1. What the
# caches lack (the Triton artifact, apt's .debs, the wheels, a hub model) is named with what to fetch,
# and the host is refused before any change. Fill the caches by one run with the network first.
offline = False

# Where the controller keeps its state: the venv locks and snapshot digests (venv_lock_dir), the hub
# folders (hub_folder_cache), the provision records (provision_records_dir); each of those, where relative,
# lies under it. "auto" = this tree; but where the controller is the host itself (@local) and runs as root,
# as in a notebook, persist_dir/controller (0700): a notebook reset wipes the clone with its state, and
# without the kept digests the venv snapshot on persist_dir would never be restored. Or an absolute path.
controller_state_dir = "auto"

# --- Fleets --------------------------------------------------------------------------------
# A rollout over a fleet (`.venv/bin/python -m run.rolling INVENTORY`) of a change that restarts the server
# (a new build, Python minor or server arguments): hosts in batches of this many ("2") or this share of the
# fleet ("25%"), each batch provisioned and proven before the next starts; "" = every host at once. Like
# Ansible's `serial`. A change the server loads without a restart (models, the venv) goes to every host at once.
rolling_batch = ""
# How many of the rollout's hosts may fail before it stops ("0", "1", or a share of the fleet: "10%"): a
# failed host rolls back to what served before; the hosts not yet reached are left as they are, and named.
# Like Ansible's max_fail_percentage.
rolling_max_failures = "0"
# One download for many hosts: the controller fetches each file the hosts need (the Triton artifact,
# a standalone Python, uv, and every wheel of a kept lock) once into controller_cache_dir, checked
# against the same sha256 the hosts check, and sends it to each host that lacks it over the connection
# the run already has; each host checks it again before it takes its place. "no" (the default) = each host
# downloads on its own: a fleet's hosts reach the internet faster than the controller can push to them all
# (its uplink carries every host's copy): 8 GPU hosts (3.8 GiB of torch's CUDA wheels each) take 5.5 min on
# their own and 3.8 h through a laptop's 20 Mbit/s uplink, 10.2 min through a bastion's 1 Gbit/s
# (`python -m bench.fleet_model`, BENCHMARKS.md section 30); the cost is each host's bytes from outside.
# "yes" = through the controller: for hosts that reach only the controller (air-gapped). "auto" = where the
# inventory has two or more hosts over SSH and none needs a proxy (a controller beside its hosts). Never for
# @local. The controller fetches with its own environment's proxies (HTTPS_PROXY ...), not the hosts'.
downloads_via_controller = "no"
# The apt archives the controller fetches from for its hosts (with downloads_via_controller): the origins
# (scheme://host[:port], commas between) a host's apt URLs must have for the controller to fetch them; a
# URL of any other origin, or not of apt's own shapes (/dists/SUITE/..., /pool/...; no query), is left to
# the host's apt. A host names the URLs, so the controller fetches none it names alone. "auto" = Debian's
# and Ubuntu's archives (deb.debian.org, security.debian.org, archive/security/ports.ubuntu.com, over
# http and https); add your own mirror's origin after it: "auto,http://mirror.corp:3142".
apt_relay_origins = "auto"
# Where the controller keeps those files, each named by its sha256 (made 0700). "~" is the controller
# user's home; relative paths are to this tree. Files are kept until you remove them.
controller_cache_dir = "~/.cache/triton-provisioner/downloads"

# --- Audit ---------------------------------------------------------------------------------
# Where deploy/audit.py writes its JSON report (on the controller).
audit_report_path = "audit-report.json"
# Where provision/serve write how long each step took on each host (JSON, on the controller);
# "" = only the one-line summary per host in the log.
step_timings_path = ""
# Where deploy/status.py writes its JSON report (on the controller).
status_report_path = "status-report.json"
# Where the controller records each host's last provision (time, OK/FAILED/BLOCKED and why), one
# JSON file per host, shown by deploy/status.py. Relative paths are to controller_state_dir. "" = not
# recorded.
provision_records_dir = "provision-records"

# --- Models --------------------------------------------------------------------------------
# The HuggingFace models to serve, each a dict: name, source ("hub:<repo id>@<revision>",
# downloaded into HF_HOME on the persistent path, or "path:<dir on the controller>",
# uploaded there), task ("text-classification", "feature-extraction", "text-generation"),
# and optional dynamic_batching (True), max_queue_delay_us (2000), instance_kind ("auto": GPU if
# present), normalize (False, feature-extraction), max_length (128), max_new_tokens (16), and the
# serving values that otherwise come from the host (tasks/models/serving.py; the plan shows them):
# instance_count (CPU and GPU: 1), intra_op_threads (torch's threads per copy: the CPUs / copies),
# max_batch_size (CPU: 16, GPU: 8; 0 = no batching) with preferred_batch_sizes (half and all of it).
# Example:
#   models = [{"name": "sentiment", "task": "text-classification",
#              "source": "hub:distilbert/distilbert-base-uncased-finetuned-sst-2-english@main"}]
# A Triton model folder you already have (config.pbtxt, and 1/model.py for the python backend, or
# another backend's files) is served as it is: {"name": "text_classifier", "source":
# "triton:/abs/path/text_classifier"}; name, source and environment only (the rest is in its
# config.pbtxt). It is checked before any change (config.pbtxt parses and sits beside the version
# folder, the name matches, model.py is there, this build carries its backend) and proven with inputs
# made from its config. A requirements.txt beside it (exact pins) adds to the venv. Where it pins
# another version of a package the venv pins (transformers, numpy ...), or another model's, the model
# gets a Python environment of its own: the venv's pins with its own over them, built beside the venv
# from its own locked wheels (same torch; numpy<2 where the stub needs it), kept on the persistent path,
# and named in the config.pbtxt the server reads (EXECUTION_ENV_PATH); a change to it reloads that
# model alone. environment: "auto" (that), "own" (its own environment even without a clash) or
# "shared" (the venv; a clash is refused, naming both pins).
# The same from a hub repository that holds a Triton model folder (at its top, or as a folder named as
# the model): "triton:hub:<repo id>@<revision>". The controller fetches it (hf_endpoint, hf_token; each
# file checked against the hub's digest) into hub_folder_cache, checks it as above, and serves it as it
# is; a branch is resolved to its commit at the first fetch (pin the commit to say which).
# A minimal "smoke" model is always served to prove the stack.
models = []
# A HuggingFace token for gated or private models. Never printed; stored 0600 in HF_HOME. "" = the
# controller's HF_TOKEN environment variable, if set; with neither, a token left on the host is removed.
hf_token = ""
# The HuggingFace Hub (or a mirror of its API) hub: models come from; "" = https://huggingface.co.
hf_endpoint = ""
# Where the controller keeps the Triton model folders it fetched from the hub (triton:hub: models).
# Relative paths are to controller_state_dir.
hub_folder_cache = "hub-folders"
