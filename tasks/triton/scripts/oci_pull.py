"""Pull a container image's layers into a cache, each checked against its digest; runs on the host (3.8+).

    python3 oci_pull.py REGISTRY REPOSITORY DIGEST CACHE [@KEYFILE]

REGISTRY: https://nvcr.io; REPOSITORY: nvidia/tritonserver; DIGEST: the image's pinned digest
(sha256:HEX, of its index or of its manifest); CACHE: a root-only folder on the persistent path, laid
out as an OCI image layout's blobs (CACHE/blobs/sha256/HEX). Of an index, the entry for this host's
architecture is pulled (linux/amd64 on x86_64). The OCI distribution API: the manifest fetched by
digest and its bytes checked against it; a 401 answered through the registry's token service (Bearer
realm=..., NGC's anonymous pulls) or with the user and secret (Basic: a registry's htpasswd, Harbor,
Artifactory, Nexus), both from KEYFILE (a root-only file, removed once read: USER and SECRET on two lines, or
an NGC API key alone, its user `$oauthtoken`), never on a command line; then the config and every layer, each
written to BLOB.part, checked, renamed. A blob already in the cache is not fetched again: the unpack
checks each blob's digest again as it reads it (unpack_triton.py). Exit 3: a digest mismatch (the bad
file is removed); 4: a network error; 5: an image this cannot use (no entry for this host's
architecture, a layer format the unpack cannot read); 6: the registry refused the credentials.
"""

import base64
import hashlib
import http.client
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

from _http import OPENER
from _oci import ACCEPT, DOCUMENT_LIMIT, ImageRefused, blob_path, cached_document, host_arch, resolve
from _progress import Progress


def challenge(header: str) -> dict:
    """The parameters of a `Bearer realm="...",service="...",scope="..."` WWW-Authenticate header."""
    scheme, _, rest = header.partition(" ")
    if scheme.lower() != "bearer":
        return {}
    return dict(re.findall(r'([A-Za-z]+)="([^"]*)"', rest))


class Registry:
    """One repository of one registry, with the bearer token its token service hands out, or the user and
    secret its Basic challenge asks for. key: "USER\nSECRET", or a bare SECRET (an NGC API key: user
    `$oauthtoken`); "" for an anonymous pull."""

    def __init__(self, url: str, repository: str, key: str, timeout: float = 60) -> None:
        self.url, self.repository = url.rstrip("/"), repository
        user, _, self.key = key.rpartition("\n")
        self.user = user or "$oauthtoken"
        self.token, self.basic, self.timeout = "", False, timeout

    def _credentials(self) -> str:
        return "Basic " + base64.b64encode(f"{self.user}:{self.key}".encode()).decode()

    def _answer(self, header: str) -> None:
        """What a 401 asks: a token from the registry's token service (Bearer), or the user and secret (Basic)."""
        if header.split(" ")[0].lower() != "basic":
            return self._token(header)
        if not self.key:
            raise ImageRefused(
                6, f"{self.url} asks for a user and secret (Basic auth): set triton_registry_user and "
                "triton_registry_api_key (its password or access token)"
            )  # fmt: skip
        self.basic = True

    def _token(self, header: str) -> None:
        params = challenge(header)
        realm = params.pop("realm", "")
        if not realm:
            raise ImageRefused(6, f"{self.url} asks for credentials this pull cannot give ({header.split(' ')[0]})")
        params.setdefault("scope", f"repository:{self.repository}:pull")
        req = urllib.request.Request(realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(params))
        if self.key:  # NGC: the user is the literal $oauthtoken, the password the API key
            req.add_header("Authorization", self._credentials())
        try:
            with OPENER.open(req, timeout=self.timeout) as resp:
                answer = json.loads(resp.read(DOCUMENT_LIMIT + 1))
        except urllib.error.HTTPError as exc:
            fix = "check triton_registry_api_key" if self.key else "set triton_registry_api_key (an NGC API key)"
            raise ImageRefused(6, f"the registry's token service refused the pull (HTTP {exc.code}): {fix}") from None
        except ValueError:  # not JSON, or cut at the limit
            raise ImageRefused(6, f"the token service of {self.url} answered no JSON token") from None
        token = (answer.get("token") or answer.get("access_token")) if isinstance(answer, dict) else ""
        self.token = token if isinstance(token, str) else ""

    def open(self, path: str, accept: str = ""):
        """GET /v2/REPOSITORY/PATH, answering the registry's 401 once (a token, or the user and secret)."""
        for _ in range(2):
            req = urllib.request.Request(f"{self.url}/v2/{self.repository}/{path}")
            if accept:
                req.add_header("Accept", accept)
            if self.token:
                req.add_header("Authorization", f"Bearer {self.token}")
            elif self.basic:  # the registry's origin alone: _http.OPENER drops it on a redirect to another
                req.add_header("Authorization", self._credentials())
            try:
                return OPENER.open(req, timeout=self.timeout)
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and self.basic:
                    raise ImageRefused(
                        6, f"{self.url} refused user {self.user!r} and its secret (HTTP 401): check "
                        "triton_registry_user and triton_registry_api_key"
                    ) from None  # fmt: skip
                if exc.code != 401 or self.token:
                    raise
                self._answer(exc.headers.get("WWW-Authenticate", ""))
        raise ImageRefused(6, f"{self.url} refused the token its own service gave")


def save(resp, path: str, digest: str, label: str, limit: int) -> int:
    """resp's body to path, through path.part, if its sha256 is digest's and it is at most limit bytes (a
    blob's size as its manifest gives it, a document's DOCUMENT_LIMIT: a registry that sends more is cut
    off, not written on to the end); its size."""
    part = path + ".part"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    total = int(resp.headers.get("Content-Length") or 0)
    progress = Progress(label, total)
    sha, done = hashlib.sha256(), 0
    try:
        with open(part, "wb") as out:
            while True:
                chunk = resp.read(min(1 << 20, limit - done + 1))
                if not chunk:
                    break
                if done + len(chunk) > limit:
                    raise ImageRefused(3, f"{label}: more than the {limit} bytes it may have; removed")
                out.write(chunk)
                sha.update(chunk)
                done += len(chunk)
                progress.update(done)
        if total and done != total:
            raise http.client.IncompleteRead(b"", total - done)
        if "sha256:" + sha.hexdigest() != digest:
            raise ImageRefused(3, f"{label}: its sha256 is {sha.hexdigest()}, not the {digest} asked for; removed")
    except BaseException:
        os.unlink(part)
        raise
    progress.finished(done)
    os.replace(part, path)
    return done


def manifest(registry: Registry, cache: str, digest: str) -> dict:
    """The manifest or index of this digest: from the cache where it is there and whole, else fetched."""
    found = cached_document(cache, digest)
    if found is None:
        with registry.open(f"manifests/{digest}", ACCEPT) as resp:
            save(resp, blob_path(cache, digest), digest, f"manifest {digest[:19]}", DOCUMENT_LIMIT)
        found = cached_document(cache, digest)
    return found


def _fetch(registry: Registry, cache: str, blob: dict) -> int:
    """One blob into the cache unless it is there at its size: the bytes fetched."""
    path = blob_path(cache, blob["digest"])
    if os.path.isfile(path) and os.path.getsize(path) == blob["size"]:  # (its size checked by resolve)
        return 0
    with registry.open(f"blobs/{blob['digest']}") as resp:
        return save(resp, path, blob["digest"], f"layer {blob['digest'][7:19]}", blob["size"])


def _failed(exc: BaseException, url: str, repository: str) -> tuple:
    """(exit code, message) of what stopped a pull."""
    if isinstance(exc, ImageRefused):
        return exc.code, f"oci pull: {exc}. Nothing was installed."
    return 4, (
        f"oci pull: {url}/v2/{repository} failed ({type(exc).__name__}: {exc}); partial files were removed "
        "and nothing was installed. Run again to retry."
    )


def config_pulled(
    url: str, repository: str, digest: str, cache: str, key: str = "", arch: str = "", timeout: float = 60
):
    """The image's index, manifest and config in cache, no layer: (0, ""), or (the exit code, what stopped
    it). What a plan reads of an image before its layers are pulled (the controller's, in process)."""
    registry = Registry(url, repository, key, timeout)
    try:
        image = resolve(lambda of: manifest(registry, cache, of), digest, arch or host_arch())
        _fetch(registry, cache, image["config"])
    except (ImageRefused, OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, HTTP errors
        return _failed(exc, url, repository)
    return 0, ""


def pull(url: str, repository: str, digest: str, cache: str, key: str = "", arch: str = ""):
    """Every blob of the image in cache: (0, what was pulled), or (the exit code, what stopped it). arch: the
    index entry's architecture (the controller pulls for its hosts: theirs); "" for this machine's."""
    registry = Registry(url, repository, key)
    arch = arch or host_arch()
    blobs: list = []
    try:
        image = resolve(lambda of: manifest(registry, cache, of), digest, arch)
        blobs = [image["config"], *image.get("layers", [])]
        fetched = sum(_fetch(registry, cache, blob) for blob in blobs)
    except (ImageRefused, OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, cut short
        return _failed(exc, url, repository)
    size = sum(b.get("size", 0) for b in blobs)
    return 0, f"oci pull: {digest} linux/{arch}: {len(blobs)} blobs ({size} bytes), {fetched} fetched"


def main(url: str, repository: str, digest: str, cache: str, key_file: str = "") -> int:
    key = ""
    if key_file.startswith("@"):  # "USER\nSECRET" (or an API key): from the root-only file, then removed
        with open(key_file[1:]) as f:
            key = f.read().strip()
        os.unlink(f.name)
    code, message = pull(url, repository, digest, cache, key)
    print(message, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
