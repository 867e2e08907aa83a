"""The provisioner as pyinfra packaged deploys, for a user's own deploy: Triton installed and serving, then
the user's steps (examples/deploy_with_triton.py). Settings are plain keyword arguments over the host's data
(the inventory, group_data/all.py's defaults), validated as every run validates them; pyinfra's global
arguments (_sudo ...) apply to every step, as for any deploy.

    from tasks.deploys import triton_provisioned
    settings = triton_provisioned(triton_keep_versions=2, models=[...])
"""

from __future__ import annotations

from typing import Any

from pyinfra.api import deploy

from config.settings import Settings
from tasks.provision import provision_host
from tasks.serve_models import serve_host


@deploy("Triton provisioned")
def triton_provisioned(**settings: Any) -> Settings | None:
    """Everything deploy/provision.py does on this host: refused before any change on a blocker, else every
    install step, the models served and proven. Returns the settings it ran with (where the server
    listens: settings.base_url), or None where the host was refused (the run's summary says why)."""
    return provision_host(settings)


@deploy("Triton models served")
def triton_models_served(**settings: Any) -> Settings | None:
    """What deploy/serve.py does on a provisioned host: the model repository written, the changed models
    loaded (or the server restarted where what it runs changed), proven. None where refused."""
    return serve_host(settings)
