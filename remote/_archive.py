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


def _clean_name(name, strip, top):
    """The member's path inside the destination, or None for the archive's top directories itself."""
    while name.startswith("./"):
        name = name[2:]
    if name.startswith("/") or "\\" in name:
        raise UnsafeArchive(f"{name!r} is an absolute or Windows path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{name!r} climbs out of the archive with '..'")
    if top is not None and (not parts or parts[0] != top):
        raise UnsafeArchive(f"{name!r} is outside {top}/")
    parts = parts[strip:]
    return "/".join(parts) if parts else None


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


def extract_tar(archive, dest, strip=0, top=None):
    """Extract a tar archive into dest (which exists), member by member, refusing the unsafe: names
    with '..' or absolute, anything under a symlink, links whose target leaves dest (checked when
    written, and again for every link once all are there), hard links to anything but a regular file
    already extracted, devices and fifos, setuid and setgid bits. Owners are not kept; group and other
    write bits are dropped. archive: a path, or a file object open for reading (read from where it is)."""
    dest = _os.path.realpath(dest)
    links = []
    source = {"fileobj": archive} if hasattr(archive, "read") else {"name": archive}
    with _tarfile.open(**source) as tar:
        for m in tar:
            rel = _clean_name(m.name, strip, top)
            if rel is None:
                continue
            if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
                raise UnsafeArchive(f"{m.name!r} is a device, fifo or other special file")
            if m.mode & (_stat.S_ISUID | _stat.S_ISGID):
                raise UnsafeArchive(f"{m.name!r} has the setuid or setgid bit")
            _no_link_on_the_way(dest, rel)
            target = _os.path.join(dest, rel)
            if m.issym():
                if _os.path.isabs(m.linkname) or not _inside(dest, _os.path.join(_os.path.dirname(target), m.linkname)):
                    raise UnsafeArchive(f"{m.name!r} links to {m.linkname!r}, outside the destination")
                links.append(target)
            if m.islnk():
                try:
                    source = _clean_name(m.linkname, strip, top)
                except UnsafeArchive:
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
            if _os.path.lexists(target) and not (m.isdir() and _os.path.isdir(target)):
                if _os.path.isdir(target) and not _os.path.islink(target):
                    _shutil.rmtree(target)
                else:
                    _os.unlink(target)
            tar.extract(m, dest, set_attrs=True, numeric_owner=True, **_TRUSTED)
    for link in links:  # a chain of links that are each inside can still end outside: check the result
        if not _inside(dest, link):
            raise UnsafeArchive(f"{_os.path.relpath(link, dest)!r} resolves to {_os.path.realpath(link)!r}")


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


def finish(tmp, dest, manifest):
    """The unpackers' last step: the manifest (.provisioner, key=value lines) written into the finished
    tree, then the tree renamed into place over any earlier one."""
    with open(_os.path.join(tmp, ".provisioner"), "w") as f:
        f.write("".join(f"{key}={value}\n" for key, value in manifest.items()))
    _shutil.rmtree(dest, ignore_errors=True)
    _os.rename(tmp, dest)
