# Safe extraction, shared by the unpack scripts: inlined where a script says `from _archive import ...`.
# A checksum proves an archive is the configured one, not that it is safe: every member is checked.
# No `from __future__` here: it would land in the middle of the script.
import os as _os
import shutil as _shutil
import stat as _stat
import tarfile as _tarfile

# The checks here replace tarfile's own filters (Python 3.12+ and backports), which would warn or differ.
_TRUSTED = {"filter": "fully_trusted"} if hasattr(_tarfile, "fully_trusted_filter") else {}


class UnsafeArchive(ValueError):
    """A member would write or point outside the destination, or is a device, fifo or set-id file."""


def _parts(name):
    """A member's name as its path's parts; refuses absolute and Windows paths and '..'."""
    while name.startswith("./"):
        name = name[2:]
    if name.startswith("/") or "\\" in name:
        raise UnsafeArchive(f"{name!r} is an absolute or Windows path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{name!r} climbs out of the archive with '..'")
    return parts


def _clean_name(name, strip, top):
    """The member's path inside the destination, or None for the archive's top directories itself."""
    parts = _parts(name)
    if top is not None and (not parts or parts[0] != top):
        raise UnsafeArchive(f"{name!r} is outside {top}/")
    parts = parts[strip:]
    return "/".join(parts) if parts else None


class _Outside(Exception):
    """A layer's member outside the folder kept from it (apply_layer): left out, not refused."""


def _kept_name(name, keep):
    """A layer member's path relative to the kept folder (parts of it: ["opt", "tritonserver"]); None for
    the folder itself; _Outside for anything else."""
    parts = _parts(name)
    if parts[: len(keep)] != keep:
        raise _Outside(name)
    rest = parts[len(keep) :]
    return "/".join(rest) if rest else None


def _no_link_on_the_way(dest, rel):
    """Refuse writing through a link: no directory on the way to dest/rel may be a symlink."""
    path = dest
    for part in rel.split("/")[:-1]:
        path = _os.path.join(path, part)
        if _os.path.islink(path):
            raise UnsafeArchive(f"{rel!r} would be written through the link {part!r}")


def _inside(dest, path):
    real = _os.path.realpath(path)
    return real == dest or real.startswith(dest + _os.sep)


# Members one archive may hold (Triton's image: ~3,000 under /opt/tritonserver; CPython's: ~5,000).
MAX_MEMBERS = 500_000


def free_bytes(path):
    """Bytes free to root on path's file system."""
    st = _os.statvfs(path)
    return st.f_bavail * st.f_frsize


def extract_tar(archive, dest, strip=0, top=None, keep=None, leave_out=None):
    """Extract a tar archive into dest (which exists), member by member, refusing the unsafe: names
    with '..' or absolute, anything under a symlink, links whose target leaves dest (checked when
    written, and again for every link once all are there), hard links to anything but a regular file
    already extracted, devices and fifos, setuid and setgid bits. Owners are not kept; group and other
    write bits are dropped. archive: a path, or a file object open for reading (read from where it is).
    keep (an image layer: a folder's parts, ["opt", "tritonserver"]): only that folder's members, as paths
    inside it; the others and the layer's whiteouts (apply_layer applies them) are left out. leave_out(rel):
    True for a member not wanted (a backend no model uses)."""
    dest = _os.path.realpath(dest)
    source = {"fileobj": archive} if hasattr(archive, "read") else {"name": archive}
    room, written, count = free_bytes(dest), 0, 0  # a gzip stream can unpack to any size: it stops at the disk's

    def name_of(member_name):
        if keep is None:
            return _clean_name(member_name, strip, top)
        return _kept_name(member_name, keep)

    with _tarfile.open(**source) as tar:
        for m in tar:
            try:
                rel = name_of(m.name)
            except _Outside:
                continue
            if rel is None or (keep is not None and rel.rsplit("/", 1)[-1].startswith(WHITEOUT)):
                continue
            if leave_out is not None and leave_out(rel):
                continue
            count, written = count + 1, written + (m.size if m.isfile() else 0)
            if written > room or count > MAX_MEMBERS:
                raise UnsafeArchive(
                    f"it unpacks to more than the {room} bytes free at {dest}"
                    if written > room
                    else f"it holds more than {MAX_MEMBERS} members"
                )
            if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
                raise UnsafeArchive(f"{m.name!r} is a device, fifo or other special file")
            if m.mode & (_stat.S_ISUID | _stat.S_ISGID):
                raise UnsafeArchive(f"{m.name!r} has the setuid or setgid bit")
            _no_link_on_the_way(dest, rel)
            target = _os.path.join(dest, rel)
            if m.issym() and (
                _os.path.isabs(m.linkname) or not _inside(dest, _os.path.join(_os.path.dirname(target), m.linkname))
            ):
                raise UnsafeArchive(f"{m.name!r} links to {m.linkname!r}, outside the destination")
            if m.islnk():
                try:
                    source = name_of(m.linkname)
                except (UnsafeArchive, _Outside):
                    raise UnsafeArchive(f"{m.name!r} hard-links to {m.linkname!r}, outside the destination") from None
                if source is None:
                    raise UnsafeArchive(f"{m.name!r} hard-links to {m.linkname!r}, not a file of the archive")
                _no_link_on_the_way(dest, source)
                source_path = _os.path.join(dest, source)
                if _os.path.islink(source_path) or not _os.path.isfile(source_path):
                    raise UnsafeArchive(f"{m.name!r} hard-links to {m.linkname!r}, not a file extracted before it")
                m.linkname = source  # tarfile resolves it against dest
            m.name = rel
            m.mode &= 0o755  # root runs what is installed: nothing in it writable by group or others
            m.uid = m.gid = 0
            m.uname = m.gname = "root"
            # what stands at the name is replaced, a link never followed: a folder member over a link that a
            # later member turned outside would have had root chmod, chown and touch the folder outside
            if _os.path.lexists(target) and not (m.isdir() and _os.path.isdir(target) and not _os.path.islink(target)):
                if _os.path.isdir(target) and not _os.path.islink(target):
                    _shutil.rmtree(target)
                else:
                    _os.unlink(target)
            tar.extract(m, dest, set_attrs=True, numeric_owner=True, **_TRUSTED)
    links_inside(dest)  # a chain of links each inside can end outside, an earlier layer's too: check them all


def links_inside(dest):
    """Refuse a tree (dest, real) any of whose symlinks resolves outside it. Checked on the whole tree, not on
    one archive's links: a later image layer can turn the folders an earlier layer's link climbs through into
    links of their own (lib/d1 -> .), moving where that link points without itself pointing outside."""
    for root, dirs, files in _os.walk(dest):  # never into a linked folder: os.walk lists it among dirs only
        for name in dirs + files:
            path = _os.path.join(root, name)
            if _os.path.islink(path) and not _inside(dest, path):
                raise UnsafeArchive(
                    f"{_os.path.relpath(path, dest)!r} links to {_os.readlink(path)!r} and resolves to "
                    f"{_os.path.realpath(path)!r}, outside the destination"
                )


# OCI image layers (the image spec's layer.md, "Whiteouts"): a member .wh.NAME deletes NAME of the
# layers below; .wh..wh..opq in a folder hides everything the layers below put in that folder.
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


def _remove(path):
    if _os.path.isdir(path) and not _os.path.islink(path):
        _shutil.rmtree(path)
    elif _os.path.lexists(path):
        _os.unlink(path)


def _empty(folder):
    if _os.path.isdir(folder) and not _os.path.islink(folder):
        for entry in _os.listdir(folder):
            _remove(_os.path.join(folder, entry))


def apply_layer(layer, dest, keep, leave_out=None, seen=None):
    """Apply one image layer (a tar, gzipped or not: a seekable file object at its start) onto dest, which
    holds what the layers below put in the kept folder (keep: its parts, ["opt", "tritonserver"]): first
    the layer's whiteouts delete from what is there (a whiteout of the folder or of a folder above it
    empties dest), then its members in that folder are extracted with extract_tar's rules (but those
    leave_out(rel) names). seen(member): called with each of the layer's members (what the unpack indexes)."""
    dest = _os.path.realpath(dest)
    with _tarfile.open(fileobj=layer) as tar:
        for m in tar:
            if seen is not None:
                seen(m)
            parts = _parts(m.name)
            if not parts or not parts[-1].startswith(WHITEOUT):
                continue
            opaque = parts[-1] == OPAQUE
            if not opaque and parts[-1][len(WHITEOUT) :] in ("", ".", ".."):  # `.wh...` would hide the folder above
                raise UnsafeArchive(f"the whiteout {m.name!r} names no file ({parts[-1][len(WHITEOUT) :]!r})")
            hidden = parts[:-1] if opaque else [*parts[:-1], parts[-1][len(WHITEOUT) :]]
            if hidden == keep[: len(hidden)]:  # the kept folder or a folder above it
                _empty(dest)
            elif hidden[: len(keep)] == keep:
                rel = "/".join(hidden[len(keep) :])
                _no_link_on_the_way(dest, rel + "/x" if opaque else rel)
                gone = _os.path.normpath(_os.path.join(dest, rel))
                if not gone.startswith(dest + _os.sep):
                    raise UnsafeArchive(f"the whiteout {m.name!r} would remove {gone!r}, outside the destination")
                (_empty if opaque else _remove)(gone)
    layer.seek(0)
    extract_tar(layer, dest, keep=keep, leave_out=leave_out)


def zip_target(dest, name):
    """Where a zip member goes under dest; refuses absolute names, '..' and Windows paths."""
    rel = _clean_name(name, 0, None)
    if rel is None:
        raise UnsafeArchive(f"{name!r} names no file")
    _no_link_on_the_way(dest, rel)
    return _os.path.join(dest, rel)


def wheel_layout_name(name):
    """Where a member of the nvidia-pytriton wheel goes in a Triton install (bin/ lib/ backends/ ...):
    pytriton/tritonserver/X as X, nvidia_pytriton.libs/X as lib/X; None for anything else."""
    for prefix, into in (("pytriton/tritonserver/", ""), ("nvidia_pytriton.libs/", "lib/")):
        if name.startswith(prefix):
            rel = into + name[len(prefix) :]
            return None if not rel or rel.endswith("/") else rel
    return None


_NOFOLLOW = getattr(_os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(_os, "O_DIRECTORY", 0)


def _open_folder(name, dir_fd):
    """A real folder (never a link to one) opened as a descriptor: made (0755) where it is absent."""
    try:
        return _os.open(name, _os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        _os.mkdir(name, 0o755, dir_fd=dir_fd)
        return _os.open(name, _os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:  # ELOOP or ENOTDIR: a link or a file where a folder must be
        raise UnsafeArchive(f"{name!r} is not a real folder (a link?): nothing is written through it") from exc


def write_inside(tree, rel, src, mode=0o644):
    """A new file at tree/rel (rel: "a/b/name") with src's bytes (bytes, or a file object read to its end),
    written without following a link anywhere: each folder on the way opened as a real folder (made where
    absent), whatever stands at the name unlinked (never followed), the file made anew (O_EXCL|O_NOFOLLOW).
    The unpackers write through it into a tree an archive has filled; returns the bytes written."""
    parts = [p for p in rel.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise UnsafeArchive(f"{rel!r} is not a path inside the tree")
    fd = _os.open(tree, _os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
    try:
        for part in parts[:-1]:
            inner = _open_folder(part, fd)
            _os.close(fd)
            fd = inner
        try:
            if _stat.S_ISDIR(_os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                raise UnsafeArchive(f"{rel!r} is a folder in the tree, not a file")
            _os.unlink(parts[-1], dir_fd=fd)
        except FileNotFoundError:
            pass
        out_fd = _os.open(parts[-1], _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL | _NOFOLLOW, mode, dir_fd=fd)
    finally:
        _os.close(fd)
    written = 0
    with _os.fdopen(out_fd, "wb") as out:
        _os.fchmod(out.fileno(), mode)  # whatever the umask
        if isinstance(src, bytes):
            out.write(src)
            return len(src)
        for chunk in iter(lambda: src.read(1 << 20), b""):
            out.write(chunk)
            written += len(chunk)
    return written


def finish(tmp, dest, manifest):
    """The unpackers' last step: the manifest (.provisioner, key=value lines) written into the finished
    tree (never through a link), then the tree renamed into place over any earlier one."""
    write_inside(tmp, ".provisioner", "".join(f"{key}={value}\n" for key, value in manifest.items()).encode())
    _shutil.rmtree(dest, ignore_errors=True)
    _os.rename(tmp, dest)
