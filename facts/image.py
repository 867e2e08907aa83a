"""Facts about a container image the host has pulled: what its config says of the Triton inside."""

from __future__ import annotations

import json
from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import python


class ImageConfigData(TypedDict):
    labels: dict[str, str]  # the config's Labels: com.nvidia.tritonserver.version, org.opencontainers.image.*
    env: dict[str, str]  # its Env as NAME -> value: TRITON_SERVER_VERSION, CUDA_VERSION ...


class ImageConfig(FactBase[ImageConfigData | None]):
    """The labels and environment of the image pinned to digest, from the host's cache of pulled blobs
    (each checked against its digest); None where the cache lacks it. Reads no network."""

    def command(self, cache: str, digest: str, machine: str = "") -> StringCommand:
        return python("python3", "image_config.py", cache, digest, machine)

    def process(self, output: list[str]) -> ImageConfigData | None:
        for line in output:
            if line.startswith("CONFIG="):
                found = json.loads(line[len("CONFIG=") :])
                return ImageConfigData(labels=dict(found["labels"]), env=dict(found["env"]))
        return None
