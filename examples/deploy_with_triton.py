"""A deploy of your own that installs Triton with the provisioner, then runs your steps against it: the
provisioner's packaged deploys (tasks/deploys.py) take any setting as a plain argument, over the host's
data from your inventory.

    pyinfra INVENTORY examples/deploy_with_triton.py -y

From a deploy outside this clone, put the clone on sys.path first, as below.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this clone: where tasks/ and the rest live

from pyinfra.operations import files, server

from tasks.deploys import triton_provisioned

# 1. Triton, its venv and the models, served and proven (refused before any change where the host cannot)
settings = triton_provisioned(triton_keep_versions=2)

# 2. your own steps, once Triton serves: here, a client script beside your app, and a check that it answers
if settings is not None:
    client = "/usr/local/bin/ask-triton"
    files.directory(name="My app: its folder", path="/var/lib/my-app", mode="700")
    files.put(
        name="My app: a client of the served smoke model",
        src=str(Path(__file__).with_name("ask_triton.py")),
        dest=client,
        mode="755",
    )
    server.shell(
        name="My app: Triton answers it",
        commands=[f"{client} {settings.base_url} > /var/lib/my-app/ask-triton.json"],
    )
