"""Downloads into the persistent cache, verified by sha256 before anything uses them."""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import operation
from pyinfra.facts.files import Sha256File

import remote
from config.secrets import has_credentials
from tasks.downloads import private_upload
from tasks.downloads import relay as controller_downloads


@operation()
def cached(
    url: str,
    sha256: str,
    dest: str,
    python: str = "python3",
    verified: bool = False,
    needed: bool = True,
    relay: str = "",
):
    """DEST holds URL's content with this sha256. A cached file that verifies is not fetched again;
    a mismatch fails the operation, removes the bad file and changes nothing else. A URL with a
    password goes to the host in a root-only file (private_upload), never on a command line.
    verified: this run read DEST's sha256 already (its plan): it is not read again (a large artifact
    on a slow drive). needed=False: what DEST is for is installed already (its unpack checked this
    sha256 and recorded it): DEST is neither read nor fetched. relay: the controller's cache folder (one
    download for many hosts, tasks/downloads/relay.py): the file comes from there, checked again here."""
    if not needed:
        host.noop(f"{dest} not needed: the install it unpacks to is complete (its sha256 checked at the unpack)")
        return
    if verified:
        host.noop(f"{dest} cached, sha256 verified at the start of this run")
        return
    if host.get_fact(Sha256File, path=dest) == sha256:
        host.noop(f"{dest} cached, sha256 verified")
        return
    if relay:
        yield from controller_downloads.sent(url, sha256, dest, relay)
        return
    if has_credentials(url):
        url_file = f"{dest}.url"
        yield private_upload.upload(url_file, url)
        yield remote.live(remote.python(python, "fetch.py", f"@{url_file}", dest, sha256))
        return
    yield remote.live(remote.python(python, "fetch.py", url, dest, sha256))  # progress shown as it comes


@operation()
def image_pulled(
    registry_url: str,
    repository: str,
    digest: str,
    cache: str,
    python: str = "python3",
    api_key: str = "",
    needed: bool = True,
):
    """The container image pinned to digest (sha256:...) has every blob in cache (an OCI layout's blobs),
    each checked against its digest as it came (tasks/triton/scripts/oci_pull.py; blobs already there are not
    fetched again, and the unpack checks each once more as it reads it). An API key goes to the host in a
    root-only file that the pull removes once read, never on a command line. needed=False: the install it
    unpacks to is complete."""
    if not needed:
        host.noop(f"the image {digest} not needed: the install it unpacks to is complete (checked at the unpack)")
        return
    args = [registry_url, repository, digest, cache]
    if api_key:
        key_file = f"{cache}.key"
        yield private_upload.upload(key_file, private_upload.Secret(api_key))
        args.append(f"@{key_file}")
    yield remote.live(remote.python(python, "oci_pull.py", *args))
