# Container images (the OCI image and distribution specs), shared by oci_pull.py and unpack_triton.py:
# inlined where a script says `from _oci import ...`. The cache is an OCI image layout's blobs folder.
import hashlib as _hashlib
import json as _json
import os as _os
import platform as _platform
import re as _re

INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
# the layer formats Python's tarfile reads (zstd layers only from Python 3.14)
LAYER_TYPES = (
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
)
ACCEPT = ", ".join(INDEX_TYPES + MANIFEST_TYPES)  # what a manifest request accepts
_DIGEST = _re.compile(r"^sha256:[0-9a-f]{64}$")
# An index's or a manifest's most bytes: the size a registry should accept at least (the OCI distribution
# spec, "Pushing manifests": 4 MiB); NGC's are a few KB. A larger one, fetched or cached, is not read.
DOCUMENT_LIMIT = 4 << 20
_ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}  # uname -m -> the image index's architecture


class ImageRefused(Exception):
    """What the pull or the unpack cannot go on with: an exit code and the message that names the fix."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def host_arch(machine=""):
    """This host's architecture (or machine's, as `uname -m` names it) as image indexes name it (amd64, arm64)."""
    machine = machine or _platform.machine()
    return _ARCHES.get(machine, machine)


def blob_path(cache, digest):
    """Where the blob of this digest lives in the cache (blobs/sha256/HEX)."""
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise ImageRefused(5, f"{digest!r} is not a sha256 digest (sha256: and 64 hex digits)")
    return _os.path.join(cache, "blobs", "sha256", digest[len("sha256:") :])


def cached_document(cache, digest):
    """The manifest or index of this digest from the cache, its bytes checked against it; None where the
    cache lacks it or holds other bytes."""
    path = blob_path(cache, digest)
    if not _os.path.isfile(path) or _os.path.getsize(path) > DOCUMENT_LIMIT:
        return None
    with open(path, "rb") as f:
        body = f.read(DOCUMENT_LIMIT + 1)
    return _json.loads(body) if "sha256:" + _hashlib.sha256(body).hexdigest() == digest else None


def _platform_entry(index, digest, arch):
    """The digest of the index's linux/ARCH image manifest; refused where it has none."""
    for entry in index.get("manifests", []):
        platform = entry.get("platform", {})
        if platform.get("os") == "linux" and platform.get("architecture") == arch:
            return entry.get("digest")
    raise ImageRefused(5, f"the image {digest} has no linux/{arch} entry: pin the digest of a tag built for {arch}")


def resolve(document_of, digest, arch):
    """The image manifest the pinned digest names for linux/ARCH (document_of(digest): a manifest or an
    index, its bytes checked against the digest), with its layers each of a format the unpack reads and
    every blob of a size."""
    image = document_of(digest)
    if image.get("mediaType") in INDEX_TYPES or "manifests" in image:
        image = document_of(_platform_entry(image, digest, arch))
    for layer in image.get("layers", []):
        if layer.get("mediaType") not in LAYER_TYPES:
            kind = layer.get("mediaType")
            raise ImageRefused(5, f"layer {layer.get('digest')} is {kind}: only gzip or plain tar layers are read")
    if not isinstance(image.get("config"), dict):
        raise ImageRefused(5, f"the manifest of {digest} names no config: not an image manifest")
    for blob in [image["config"], *image.get("layers", [])]:  # what the pull stops a registry at
        size = blob.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ImageRefused(5, f"the manifest gives blob {blob.get('digest')} no size (the OCI spec requires one)")
    return image


def config_summary(body):
    """What the rules read of an image's config (the OCI image config's JSON bytes): its labels and its
    environment as a dict (NGC's images name their Triton in TRITON_SERVER_VERSION, their CUDA in
    CUDA_VERSION, their Ubuntu base in the org.opencontainers.image labels)."""
    config = _json.loads(body).get("config") or {}
    labels = config.get("Labels") or {}
    env = dict(item.partition("=")[::2] for item in config.get("Env") or [] if isinstance(item, str))
    return {
        "labels": {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        "env": {k: v for k, v in env.items() if k},
    }


def cached_config(cache, digest, arch):
    """The config summary of the image pinned to digest for linux/ARCH from the cache: its index, manifest
    and config each checked against their digests; None where the cache lacks one of them (not pulled yet)."""

    class _Absent(Exception):
        pass

    def document_of(of):
        found = cached_document(cache, of)
        if found is None:
            raise _Absent(of)
        return found

    try:
        image = resolve(document_of, digest, arch)
    except _Absent:
        return None
    descriptor = image["config"]
    path = blob_path(cache, descriptor.get("digest"))
    if not _os.path.isfile(path) or _os.path.getsize(path) != descriptor["size"]:
        return None  # not pulled yet, or not the size the manifest gives it: the pull fetches it again
    with open(path, "rb") as f:
        body = f.read(descriptor["size"])
    if "sha256:" + _hashlib.sha256(body).hexdigest() != descriptor["digest"]:
        return None  # changed in the cache: the pull fetches it again and the unpack checks it
    return config_summary(body)
