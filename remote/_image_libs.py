# The libraries an image's Triton takes from the image outside /opt/tritonserver (CUDA's, cuDNN's, HPC-X's
# ...), shared by unpack_triton.py: inlined where a script says `from _image_libs import ...`. The unpack
# indexes the library files and links of every layer (names only, whiteouts applied), reads what the
# unpacked server and backends link (ELF DT_NEEDED), and carries each library that neither the install nor
# the host's loader has from the image into the install's lib/ (on the server's LD_LIBRARY_PATH), then what
# those link, until nothing more is found. The host's own libraries (glibc, libstdc++, libre2 ... which the
# rules install with apt), its Python's libpython and the NVIDIA driver's libraries (libcuda: the image's
# are stubs or forward-compatibility copies that would shadow the driver) are never carried.
import mmap as _mmap
import os as _os
import re as _re
import struct as _struct
import subprocess as _subprocess

CARRIED_NAME = _re.compile(r"^lib[A-Za-z0-9_+-][A-Za-z0-9._+-]*\.so(\.[0-9A-Za-z_]+)*$")
NEVER_CARRIED = _re.compile(r"^lib(cuda|nvidia-[A-Za-z0-9_-]+|nvcuvid|nvoptix|python3[.-].*)\.so")
# folders whose libraries stand in for the driver's (CUDA's stubs/ and compat/) or are another architecture's
_PASSED_OVER = ("stubs", "compat", "i386-linux-gnu", "lib32")


# Bounds on what an ELF file of an image may make the walk read: a real library names a few dozen needed
# libraries (libtorch_cpu: 20), each a short soname; a hostile one 64k entries of a string with no end.
MAX_NEEDED = 256
MAX_SONAME = 255  # NAME_MAX: a soname is a file name
MAX_DYNAMIC = 1 << 16  # dynamic entries read at most


def elf_needed(path):
    """The DT_NEEDED sonames of a 64-bit little-endian ELF file (x86_64, aarch64); [] for anything else, or
    for one past the bounds above (more needed entries, a soname longer or without its end)."""
    try:
        with open(path, "rb") as f, _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_READ) as data:
            if data[:6] != b"\x7fELF\x02\x01":
                return []
            (phoff,) = _struct.unpack_from("<Q", data, 0x20)
            phentsize, phnum = _struct.unpack_from("<HH", data, 0x36)
            loads, dynamic = [], None
            for i in range(phnum):
                p_type, _, p_offset, p_vaddr, _, p_filesz = _struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
                if p_type == 1:  # PT_LOAD
                    loads.append((p_vaddr, p_offset, p_filesz))
                elif p_type == 2:  # PT_DYNAMIC
                    dynamic = (p_offset, p_filesz)
            if dynamic is None:
                return []
            needed, strtab = [], None
            for at in range(dynamic[0], dynamic[0] + min(dynamic[1], MAX_DYNAMIC * 16) - 15, 16):
                tag, value = _struct.unpack_from("<qQ", data, at)
                if tag == 0:  # DT_NULL
                    break
                if tag == 1:  # DT_NEEDED: an offset into the string table
                    needed.append(value)
                    if len(needed) > MAX_NEEDED:
                        return []
                elif tag == 5:  # DT_STRTAB: its address
                    strtab = value
            base = next((strtab - v + o for v, o, size in loads if strtab is not None and v <= strtab < v + size), None)
            if base is None:
                return []
            names = []
            for n in needed:
                end = data.find(b"\0", base + n, base + n + MAX_SONAME + 1)
                if end < 0:
                    return []
                names.append(data[base + n : end].decode("utf-8", "replace"))
            return names
    except (OSError, ValueError, _struct.error):  # unreadable, empty (mmap), cut short
        return []


def index_layer(members, layer_no, index):
    """Add one layer to index (image path -> ("file", layer_no, member name) | ("link", target) | ("hard",
    path)), after its whiteouts removed what the layers below put there: its symlinks, and its files and
    hard links named like a shared library, outside /opt/tritonserver (the unpack keeps that itself)."""
    whiteouts, added = [], {}
    for m in members:
        parts = [p for p in m.name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts or parts[:2] == ["opt", "tritonserver"]:
            continue
        name, path = parts[-1], "/".join(parts)
        if name.startswith(".wh."):
            whiteouts.append("/".join(parts[:-1]) + "/" if name == ".wh..wh..opq" else path[: -len(name)] + name[4:])
        elif m.issym():
            added[path] = ("link", m.linkname)
        elif ".so" in name and m.islnk():
            added[path] = ("hard", "/".join(p for p in m.linkname.split("/") if p not in ("", ".")))
        elif ".so" in name and m.isfile():
            added[path] = ("file", layer_no, m.name)
    for gone in whiteouts:  # a folder's opaque marker ("dir/") hides all below it; NAME's whiteout NAME and its content
        for path in [p for p in index if p.startswith(gone if gone.endswith("/") else gone + "/") or p == gone]:
            del index[path]
    index.update(added)


def resolve_path(index, path, hops=0):
    """The image path of the regular file path names, through symlinks (of the file or of any folder on its
    way) and hard links as the image's root file system holds them; None where it names none."""
    if hops > 40:
        return None
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        entry = index.get("/".join(parts[:i]))
        if entry and entry[0] == "link":
            base = "" if entry[1].startswith("/") else "/".join(parts[: i - 1])
            target = _os.path.normpath(_os.path.join("/", base, entry[1])).lstrip("/")
            return resolve_path(index, "/".join([target, *parts[i:]]), hops + 1)
    entry = index.get(path)
    if entry and entry[0] == "hard":
        return resolve_path(index, entry[1], hops + 1)
    return path if entry and entry[0] == "file" else None


def find_in_image(index, soname):
    """(the path the image names soname at, the regular file it is) of the first such library outside
    CUDA's stubs/ and compat/ folders; None where the image has none."""
    for path in sorted((p for p in index if p.rsplit("/", 1)[-1] == soname), key=lambda p: (len(p), p)):
        real = resolve_path(index, path)
        if real and not set(path.split("/")) & set(_PASSED_OVER) and not set(real.split("/")) & set(_PASSED_OVER):
            return path, real
    return None


def host_sonames():
    """The sonames the host's loader finds (its linker cache, `ldconfig -p`); None where it cannot be read."""
    for ldconfig in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            out = _subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
        except (OSError, _subprocess.CalledProcessError):
            continue
        return {line.split()[0] for line in out.splitlines()[1:] if line.startswith("\t") and line.split()}
    return None


def elf_files(tree):
    """The files of tree the server loads: its binaries and shared libraries (not the stubs of other Pythons)."""
    for root, dirs, files in _os.walk(tree):
        dirs[:] = [d for d in dirs if d != "python_backend_stubs"]
        for name in files:
            path = _os.path.join(root, name)
            if not _os.path.islink(path) and (".so" in name or _os.path.basename(root) == "bin" or "stub" in name):
                yield path


def wanted(tree, host_has):
    """The sonames the tree's binaries and libraries link that neither the tree nor the host has, and that an
    image may give."""
    present = {name for _, _, files in _os.walk(tree) for name in files}
    needed = {soname for path in elf_files(tree) for soname in elf_needed(path)}
    return sorted(n for n in needed - present - host_has if CARRIED_NAME.match(n) and not NEVER_CARRIED.match(n))


def printable(text):
    """An image's path as a line may print it: each character a terminal would act on shown as '?'."""
    return "".join(c if c.isprintable() else "?" for c in text)
