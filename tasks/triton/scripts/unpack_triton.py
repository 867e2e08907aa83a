"""Unpack a verified Triton artifact into a complete install directory; runs on the host (3.8+).

    python3 unpack_triton.py pytriton|tarball|image ARCHIVE DEST STUB_PYTHON SHA256 STRIP VERSION [FIXES [BACKENDS]]

The archive is opened once: read into a private copy (unlinked, root's, on DEST's disk) while its
sha256 is taken, checked against SHA256, and unpacked from that copy; a file on the persistent path
changed after the run planned (or while this reads it) is refused, never unpacked. An image (a
container image pulled by oci_pull.py): ARCHIVE is its cache of blobs, SHA256 the hex of its pinned
digest; its manifest is read from the cache and checked against that digest, then each layer, in
order, read into a private copy that is checked against the layer's digest, and applied: its
whiteouts, then its members under /opt/tritonserver (nothing else of the image is kept); BACKENDS
("python,onnxruntime"; "" for all): the backends kept, the others' folders left out.
Builds DEST.tmp with bin/ lib/ backends/ caches/ python_backend_stubs/, puts the stub of
STUB_PYTHON at backends/python/triton_python_backend_stub, writes TRITON_VERSION and the
.provisioner manifest, then renames DEST.tmp to DEST: an interrupted run leaves no DEST.
A stub that links the libpython of another Python than STUB_PYTHON (a tarball brings one
stub, built for one Python) is refused before anything is switched, with the fix for that
Python from FIXES_JSON ({"3.10": "set triton_python = 3.10 ..."}), which the rules made.
"""

import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
import zlib

from _archive import (
    UnsafeArchive,
    apply_layer,
    extract_tar,
    finish,
    wheel_layout_name,
    write_inside,
    zip_target,
)
from _image_libs import find_in_image, host_sonames, index_layer, printable, wanted
from _oci import ImageRefused, blob_path, cached_document, host_arch, resolve


def private_copy(archive: str, folder: str):
    """(an unlinked copy of archive in folder, open at its start; the sha256 of what was copied)."""
    copy = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 (the caller closes it once unpacked)
    digest = hashlib.sha256()
    with open(archive, "rb") as src:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            digest.update(chunk)
            copy.write(chunk)
    copy.seek(0)
    return copy, digest.hexdigest()


def unpack_pytriton(archive, tmp: str) -> None:
    """The wheel's pytriton/tritonserver/* and nvidia_pytriton.libs/* (as lib/)."""
    with zipfile.ZipFile(archive) as whl:
        for info in whl.infolist():
            rel = wheel_layout_name(info.filename)
            if rel is None:
                continue
            target = zip_target(tmp, rel)  # refuses '..', absolute names and writing through links
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with whl.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            mode = (info.external_attr >> 16) & 0o755  # never group/world-writable (the wheel has 0666 files)
            os.chmod(target, mode or 0o644)
    # the server's RPATH is $ORIGIN/../lib; make every ELF file readable and executable
    for sub in ("bin", "lib"):
        for entry in os.listdir(os.path.join(tmp, sub)):
            os.chmod(os.path.join(tmp, sub, entry), 0o755)
    for root, _, files in os.walk(os.path.join(tmp, "python_backend_stubs")):
        for f in files:
            os.chmod(os.path.join(root, f), 0o755)


def triton_version(tree: str) -> str:
    """The version an unpacked build names in its TRITON_VERSION; "" where it has none."""
    path = os.path.join(tree, "TRITON_VERSION")
    return open(path).read().strip() if os.path.exists(path) else ""


def unpack_tarball(archive, tmp: str, strip: int) -> str:
    extract_tar(archive, tmp, strip=strip)
    return triton_version(tmp)


# What a cut-short or corrupt tar or gzip stream raises (tarfile, gzip's EOFError, zlib's error).
UNREADABLE = (tarfile.TarError, EOFError, zlib.error)


def checked_layer(cache: str, layer: dict, tmp: str):
    """A private copy of a cached layer, its sha256 checked against its digest (a layer changed in the cache
    is removed, so that the next pull fetches it again)."""
    copy, got = private_copy(blob_path(cache, layer["digest"]), os.path.dirname(tmp))
    if "sha256:" + got != layer["digest"]:
        copy.close()
        os.unlink(blob_path(cache, layer["digest"]))
        raise ImageRefused(9, f"the cached layer {layer['digest']} read as sha256:{got}: removed; run again")
    return copy


def unpack_image(cache: str, digest: str, tmp: str, backends: str = "") -> tuple:
    """The image's /opt/tritonserver, its layers applied in order onto tmp (of backends/, only the folders
    of BACKENDS where it names some), and the libraries it links that only the image has; (its
    TRITON_VERSION, the libraries carried as "soname=image path" strings)."""
    kept = set(backends.split(",")) if backends else None

    def leave_out(rel: str) -> bool:
        parts = rel.split("/")
        return kept is not None and len(parts) > 1 and parts[0] == "backends" and parts[1] not in kept

    def document_of(of: str) -> dict:
        found = cached_document(cache, of)
        if found is None:
            raise ImageRefused(
                9, f"{of} is not in {cache}, or its bytes there are not its digest's; run again to pull it"
            )
        return found

    layers = resolve(document_of, digest, host_arch())["layers"]
    index: dict = {}
    for number, layer in enumerate(layers):
        members: list = []
        with checked_layer(cache, layer, tmp) as copy:
            try:
                apply_layer(copy, tmp, ["opt", "tritonserver"], leave_out, members.append)
            except UNREADABLE as exc:  # its digest is right: the image was pushed so (umoci 0.4.7's `insert`)
                raise UnsafeArchive(f"the layer {layer['digest']} cannot be read as a tar ({exc})") from None
        index_layer(members, number, index)
    return triton_version(tmp), carry_libraries(cache, layers, index, tmp)


def carry_libraries(cache: str, layers: list, index: dict, tmp: str) -> list:
    """Into tmp/lib, each library the tree links (then each that those link) that neither the tree nor the
    host's loader has and the image does: ["soname=image path", ...]. Nothing where the host's linker cache
    cannot be read (what the host has is then unknown: the audit names what is missing)."""
    host_has = host_sonames()
    if host_has is None:
        return []
    carried: list = []
    for _ in range(8):  # the libraries those link, found once the first are there
        picks = {soname: found for soname in wanted(tmp, host_has) if (found := find_in_image(index, soname))}
        if not picks:
            break
        by_layer: dict = {}
        for soname, (_, real) in picks.items():
            _, number, member = index[real]
            by_layer.setdefault(number, {}).setdefault(member, []).append(soname)
        for number in sorted(by_layer):
            with checked_layer(cache, layers[number], tmp) as copy, tarfile.open(fileobj=copy) as tar:
                for m in tar:
                    for soname in by_layer[number].get(m.name, []):
                        if write_inside(tmp, f"lib/{soname}", tar.extractfile(m), 0o755) != m.size:
                            raise UnsafeArchive(f"the layer's {printable(m.name)!r} is shorter than it says")
        carried += [f"{soname}=/{printable(path)}" for soname, (path, _) in sorted(picks.items())]
    return carried


# The libpython a stub links: "libpython3.10.so.1.0", or pytriton's vendored "libpython3-<hash>.13.so.1.0".
STUB_LIBPYTHON = re.compile(rb"libpython3(?:\.|-[0-9a-f]+\.)([0-9]+)\.so\.1\.0")


def stub_python_of(path: str) -> str:
    """The Python minor version whose libpython the stub at path links; "" where it names none."""
    with open(path, "rb") as f:
        m = STUB_LIBPYTHON.search(f.read())
    return f"3.{m.group(1).decode()}" if m else ""


def refused(tmp: str, what: str, exc: object, code: int = 8) -> int:
    """The half-made tree removed and the refusal said: nothing installed or switched; returns code."""
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"unpack: {what} is refused: {exc}. Nothing was installed or switched.", file=sys.stderr)
    return code


def main(
    source: str,
    archive: str,
    dest: str,
    stub_python: str,
    sha256: str,
    strip: str,
    version: str,
    fixes: str = "{}",
    backends: str = "",
) -> int:
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    if source == "image":
        try:
            found, carried = unpack_image(archive, "sha256:" + sha256, tmp, backends)
            version = found or version
        except (ImageRefused, UnsafeArchive, OSError) as exc:
            return refused(tmp, f"the image sha256:{sha256}", exc, exc.code if isinstance(exc, ImageRefused) else 8)
        if carried:
            print(f"unpack: carried from the image: {', '.join(carried)}", file=sys.stderr)
        extra = {"carried": ",".join(c.split("=")[0] for c in carried)} if carried else {}
        return finish_install(source, archive, dest, tmp, stub_python, sha256, version, fixes, backends, extra)
    copy, got = private_copy(archive, os.path.dirname(tmp))
    try:
        if got != sha256.lower():
            shutil.rmtree(tmp, ignore_errors=True)
            print(
                f"unpack: {archive} is refused: its sha256 is {got}, not the {sha256} the run checked (changed on "
                "the disk since). Nothing was installed or switched; run again to fetch it anew.",
                file=sys.stderr,
            )
            return 9
        if source == "pytriton":
            unpack_pytriton(copy, tmp)  # the wheel carries no TRITON_VERSION: the table names it
        else:
            version = unpack_tarball(copy, tmp, int(strip)) or version
    except UnsafeArchive as exc:
        return refused(tmp, archive, exc)
    except (*UNREADABLE, zipfile.BadZipFile) as exc:
        return refused(tmp, archive, f"it cannot be read as an archive ({exc})")
    finally:
        copy.close()
    return finish_install(source, archive, dest, tmp, stub_python, sha256, version, fixes)


GLIBC_NEEDED = re.compile(rb"GLIBC_2\.([0-9]+)")


def glibc_needed(tree: str) -> tuple:
    """The newest glibc (2, minor) the server and its backends' entry libraries ask for (the GLIBC_2.N
    version names they link), and the file that asks for it; (0, 0), "" where they name none."""
    found = ((0, 0), "")
    candidates = [os.path.join(tree, "bin", "tritonserver"), os.path.join(tree, "lib", "libtritonserver.so")]
    backends = os.path.join(tree, "backends")
    for name in sorted(os.listdir(backends)) if os.path.isdir(backends) else []:
        candidates.append(os.path.join(backends, name, f"libtriton_{name}.so"))
    for path in candidates:
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                minors = [int(m) for m in GLIBC_NEEDED.findall(f.read())]
            if minors and (2, max(minors)) > found[0]:
                found = ((2, max(minors)), os.path.relpath(path, tree))
    return found


def host_glibc() -> tuple:
    """This host's glibc as (2, minor); (0, 0) where it has none (musl)."""
    try:
        _, version = (os.confstr("CS_GNU_LIBC_VERSION") or "").split()
        return tuple(int(x) for x in version.split(".")[:2])
    except (ValueError, OSError, AttributeError):
        return (0, 0)


def finish_install(
    source: str,
    archive: str,
    dest: str,
    tmp: str,
    stub_python: str,
    sha256: str,
    version: str,
    fixes: str,
    backends: str = "",
    extra=None,
) -> int:
    """The unpacked tree checked (a server, the stub of stub_python), its manifest written (with extra's
    keys: the libraries carried from an image), renamed to dest. Every write here opens without following a
    link (write_inside); no link of the tree resolves outside it (extract_tar checked that after every archive
    or layer, and a wheel holds none)."""
    if not os.path.isfile(os.path.join(tmp, "bin", "tritonserver")):
        shutil.rmtree(tmp)
        where = (
            "/opt/tritonserver/bin/tritonserver: not a Triton server image"
            if source == "image"
            else ("bin/tritonserver (check triton_tarball_strip_components)")
        )
        print(f"unpack: {archive} has no {where}", file=sys.stderr)
        return 5
    (needed, asking), have = glibc_needed(tmp), host_glibc()
    if have != (0, 0) and needed > have:
        shutil.rmtree(tmp)
        print(
            f"unpack: this build needs glibc {needed[0]}.{needed[1]} ({asking} links GLIBC_{needed[0]}.{needed[1]}); "
            f"this host has {have[0]}.{have[1]}. Nothing was installed or switched. Fix: a build made for an older "
            "OS (an image or tarball of an earlier Triton release), or a host whose OS is as new as the build's",
            file=sys.stderr,
        )
        return 10
    stub_dst = os.path.join(tmp, "backends", "python", "triton_python_backend_stub")
    stub_src = os.path.join(tmp, "python_backend_stubs", stub_python, "triton_python_backend_stub")
    if os.path.isfile(stub_src):
        try:
            with open(stub_src, "rb") as src:  # inside the tree (links_inside); the copy is written through no link
                write_inside(tmp, "backends/python/triton_python_backend_stub", src, 0o755)
        except UnsafeArchive as exc:
            return refused(tmp, archive, exc)
    elif not os.path.isfile(stub_dst):
        shutil.rmtree(tmp)
        print(f"unpack: {archive} has no python backend stub for Python {stub_python}", file=sys.stderr)
        return 6
    linked = stub_python_of(stub_dst)
    if linked and linked != stub_python:
        shutil.rmtree(tmp)
        fix = json.loads(fixes).get(linked) or f"set triton_python = {linked}"
        print(
            f"unpack: this build's python backend stub is for Python {linked} (it links libpython{linked}); "
            f"the venv is {stub_python}. Nothing was switched. Fix: {fix}",
            file=sys.stderr,
        )
        return 7
    if version:
        write_inside(tmp, "TRITON_VERSION", (version + "\n").encode())
    manifest = {"source": source, "sha256": sha256, "stub_python": stub_python, "stub_linked": linked}
    finish(tmp, dest, {**manifest, **({"backends": backends} if backends else {}), **(extra or {})})
    print(f"unpack: Triton {version or '(version unknown)'} in {dest}, stub for Python {stub_python}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:10]))
