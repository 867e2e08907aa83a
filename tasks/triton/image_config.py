"""What a Triton image says of itself (its config's labels and environment), read before any layer is
pulled, so that the plan checks its glibc, CUDA and libraries before anything on the host changes: from
the host's cache where the host pulled it (facts/image.py: after a reset, offline), else the controller
fetches the image's index, manifest and config alone (a few KB, each checked against its digest, with the
API key where one is set, never on a command line) into its own cache, once for every host of the run.
Where neither can (offline, a registry only the hosts' proxy reaches, the controller's network), the plan
says so and the build's glibc is checked at the unpack, before anything is switched."""

from __future__ import annotations

from pathlib import Path

from pyinfra.api.host import Host

import remote
from config.settings import Settings
from facts.image import ImageConfig, ImageConfigData
from run import controller_cache
from tasks.triton.build import image_parts, image_registry_url

_oci = remote.load("oci_pull.py")
# How long the controller waits on the registry for the plan (the pull itself waits 60 s)
FETCH_TIMEOUT_S = 10.0


def controller_images(settings: Settings) -> Path | None:
    """The controller's cache of image blobs: the one its relay pulls into (tasks/triton/image_relay.py); None where
    controller_cache_dir is "" (no cache kept)."""
    folder = settings.on_controller(settings.controller_cache_dir)
    return folder / "images" if folder else None


def image_config(host: Host, settings: Settings, host_cache: str, machine: str) -> tuple[ImageConfigData | None, str]:
    """(the image's config summary, where it was read), or (None, why it could not be read before the pull)."""
    digest = settings.triton_image_digest
    found = host.get_fact(ImageConfig, host_cache, digest, machine)
    if found is not None:
        return found, "the host's cache"
    if settings.offline:
        return None, "offline, and the host's cache lacks it"
    if settings.proxy_env:
        return None, "the hosts reach the registry through a proxy the controller may not use"
    local = controller_images(settings)
    if local is None:
        return None, "controller_cache_dir is empty: the controller keeps no cache to read it into"
    arch = _oci.host_arch(machine)
    _, repository, _ = image_parts(settings.triton_image)
    with controller_cache.lock_for(f"image:{digest}"):  # once for the run's hosts
        try:  # its cache may hold an index that refuses this host (no entry for its arch): as the probe says
            summary = _oci.cached_config(str(local), digest, arch)
            if summary is None:
                code, message = _oci.config_pulled(
                    image_registry_url(settings), repository, digest, str(local), settings.registry_credentials,
                    arch, FETCH_TIMEOUT_S,
                )  # fmt: skip
                if code:
                    return None, f"the controller could not fetch it: {message.removeprefix('oci pull: ')}"
                summary = _oci.cached_config(str(local), digest, arch)
        except (_oci.ImageRefused, OSError, ValueError) as exc:
            return None, f"the controller's cache refuses it: {exc}"
    return summary, "the registry, through the controller"
