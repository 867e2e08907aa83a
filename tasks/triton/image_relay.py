"""A container image for many hosts, pulled from the registry once (downloads_via_controller, as the Triton
artifact, the wheels and hub models: tasks/downloads/relay.py). The controller pulls it with the host's
own script (tasks/triton/scripts/oci_pull.py, in process, into its cache: every blob checked against its digest,
the API key never leaving the controller), then sends each blob the host's cache lacks beside its place;
the host takes each only where its own sha256 check agrees (tasks/downloads/scripts/staged_install.py), and the unpack
checks every layer again as it reads it."""

from __future__ import annotations

from pathlib import Path

from pyinfra import host
from pyinfra.api import FunctionCommand, QuoteString, StringCommand, operation

import remote
from facts.files import TreeEntries
from run import controller_cache
from tasks.downloads import private_upload

_oci = remote.load("oci_pull.py")  # the pull and the image's rules, as the host runs them


def image_blobs(cache: Path, digest: str, arch: str) -> list[str]:
    """The digests of every blob of the image in the controller's cache: its index and manifest as pulled
    (each checked against its digest), its config and layers."""
    documents = [digest]

    def document_of(of: str) -> dict:
        found = _oci.cached_document(str(cache), of)
        if found is None:
            raise _oci.ImageRefused(9, f"{of} is not in the controller's cache {cache}")
        if of != digest:
            documents.append(of)
        return found

    image = _oci.resolve(document_of, digest, arch)
    return [*documents, image["config"]["digest"], *(layer["digest"] for layer in image["layers"])]


class _SentImage(FunctionCommand):
    """Pulls the image into the controller's cache (once for every host), then puts each blob the host
    lacks to CACHE/blobs/sha256/HEX, placed by the host only once its own check of the digest agrees."""

    def execute(self, state, host, connector_arguments):
        registry_url, repository, digest, cache, relay, arch, key, present = self.args
        local = Path(relay) / "images"
        with controller_cache.lock_for(f"image:{digest}"):  # one pull for the run's hosts
            code, message = _oci.pull(registry_url, repository, digest, str(local), key, arch)
        if code != 0:
            host.log(f'{message} (the controller\'s pull: where only the hosts reach the registry, set '
                     'downloads_via_controller = "no")')  # fmt: skip
            return False
        folder = f"{cache}/blobs/sha256"
        made, _ = host.run_shell_command(StringCommand("mkdir", "-p", QuoteString(folder)), **connector_arguments)
        if not made:
            return False
        for blob in image_blobs(local, digest, arch):
            name = blob.removeprefix("sha256:")
            if name in present:
                continue
            blob_file = str(local / "blobs" / "sha256" / name)
            if not private_upload.put_now(host, f"{folder}/{name}", blob_file, "644", connector_arguments, name):
                return False
        return True

    def __repr__(self) -> str:
        return f"SentImage({self.args[2]})"


@operation()
def image_sent(
    registry_url: str,
    repository: str,
    digest: str,
    cache: str,
    relay: str,
    machine: str,
    api_key: str = "",
    needed: bool = True,
):
    """The image pinned to digest has every blob in the host's cache (CACHE/blobs/sha256), through the
    controller's cache (RELAY/images): pulled from the registry once for every host, each blob the host
    lacks sent and checked there. machine: the host's (`uname -m`), whose index entry is pulled."""
    if not needed:
        host.noop(f"the image {digest} not needed: the install it unpacks to is complete (checked at the unpack)")
        return
    entries: list[str] = host.get_fact(TreeEntries, f"{cache}/blobs/sha256", "files")
    present = frozenset(entries)
    arch = _oci.host_arch(machine)
    key = private_upload.Secret(api_key)
    yield _SentImage(_oci.pull, (registry_url, repository, digest, cache, relay, arch, key, present), {})
