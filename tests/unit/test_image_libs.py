"""The libraries an image's Triton links that only the image has (CUDA's, cuDNN's ...): carried from the
image's layers into the install's lib/ by the unpack, through the image's links and whiteouts; the host's
own libraries, the driver's and CUDA's stubs never. Layers made here, pulled from the registry stand-in
and unpacked by the host script as the host runs it."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import remote
from testbed.registry import Registry, ngc_config
from tests.unit.test_oci import BASE, TOP, layer, pull, unpack

pytestmark = pytest.mark.unit

libs = remote.load("unpack_triton.py")  # _image_libs, inlined as the host gets it


def elf(*needed: str, tag: bytes = b"") -> bytes:
    """A 64-bit little-endian x86_64 ELF shared object whose dynamic section names these DT_NEEDED sonames
    (its string table, dynamic section and one PT_LOAD covering the file: all that a loader's read of its
    needs looks at); tag: bytes after it, to tell copies apart."""
    strtab = b"\0"
    offsets = []
    for name in needed:
        offsets.append(len(strtab))
        strtab += name.encode() + b"\0"
    strtab_at = 64 + 2 * 56
    dynamic_at = (strtab_at + len(strtab) + 7) // 8 * 8
    entries = [(1, off) for off in offsets] + [(5, strtab_at), (0, 0)]
    dynamic = b"".join(struct.pack("<qQ", tag_, value) for tag_, value in entries)
    size = dynamic_at + len(dynamic)
    header = (
        b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 56, 2, 64, 0, 0)
    )
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)
    dyn = struct.pack("<IIQQQQQQ", 2, 6, dynamic_at, dynamic_at, dynamic_at, len(dynamic), len(dynamic), 8)
    body = header + load + dyn + strtab
    return body + b"\0" * (dynamic_at - len(body)) + dynamic + tag


def test_the_needs_of_an_elf_file_are_read_from_its_dynamic_section(tmp_path: Path) -> None:
    (tmp_path / "a.so").write_bytes(elf("libfoo.so.1", "libc.so.6"))
    (tmp_path / "text").write_bytes(b"not an ELF file")
    (tmp_path / "empty").write_bytes(b"")
    assert libs.elf_needed(str(tmp_path / "a.so")) == ["libfoo.so.1", "libc.so.6"]
    assert libs.elf_needed(str(tmp_path / "text")) == libs.elf_needed(str(tmp_path / "empty")) == []
    assert "libc.so.6" in libs.elf_needed("/bin/ls")  # a real one, of this machine


def hostile_elf(entries: int, string: bytes) -> bytes:
    """An ELF file whose dynamic section has `entries` DT_NEEDED entries, all at the string table's one string,
    which ends the file with no NUL (the review's: 64k entries made the walk take 1 GiB and fail)."""
    strtab_at = 64 + 2 * 56
    dynamic = b"".join(struct.pack("<qQ", 1, 0) for _ in range(entries)) + struct.pack("<qQqQ", 5, 0, 0, 0)
    dynamic_at, strtab_at = strtab_at, strtab_at + len(dynamic)
    dynamic = dynamic.replace(struct.pack("<qQ", 5, 0), struct.pack("<qQ", 5, strtab_at))
    size = strtab_at + len(string)
    header = (
        b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 56, 2, 64, 0, 0)
    )
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)
    dyn = struct.pack("<IIQQQQQQ", 2, 6, dynamic_at, dynamic_at, dynamic_at, len(dynamic), len(dynamic), 8)
    return header + load + dyn + dynamic + string


@pytest.mark.parametrize(
    ("entries", "string"),
    [(300, b"libc.so.6\0"), (1, b"A" * (1 << 20)), (300, b"A" * (1 << 20))],
    ids=["too-many-needed", "no-end", "both"],
)
def test_an_elf_file_past_the_bounds_names_no_library(entries: int, string: bytes, tmp_path: Path) -> None:
    (tmp_path / "hostile.so").write_bytes(hostile_elf(entries, string))
    assert libs.elf_needed(str(tmp_path / "hostile.so")) == []
    (tmp_path / "fine.so").write_bytes(hostile_elf(3, b"libc.so.6\0"))  # the same shape within them: read
    assert libs.elf_needed(str(tmp_path / "fine.so")) == ["libc.so.6"] * 3


def test_a_backend_gets_the_libraries_only_the_image_has_through_its_links_and_whiteouts(
    tmp_path: Path,
) -> None:
    backend = elf("libfoo.so.1", "libz.so.1", "libcuda.so.1", "libgone.so.1", "libstub.so.1", "libpython3.10.so.1.0")
    images_os = layer(
        ("usr/lib/x86_64-linux-gnu/libfoo.so.1", "->libfoo.so.1.2"),  # the soname, a link to the file
        ("usr/lib/x86_64-linux-gnu/libfoo.so.1.2", elf("libbar.so.2", "libc.so.6")),
        # reached only through two folders' links, as CUDA's are: cuda -> cuda-12.6, lib64 -> targets/.../lib
        ("usr/local/cuda-12.6/targets/x86_64-linux/lib/libbar.so.2.6.77", elf(tag=b"bar")),
        ("usr/local/cuda-12.6/lib64", "->targets/x86_64-linux/lib"),
        ("usr/local/cuda", "->cuda-12.6"),
        ("usr/lib/x86_64-linux-gnu/libbar.so.2", "->../../local/cuda/lib64/libbar.so.2.6.77"),
        ("usr/lib/x86_64-linux-gnu/libcuda.so.1", elf(tag=b"the driver's: the host's alone")),
        ("usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0", elf(tag=b"the stub's Python: the host's")),
        ("usr/lib/x86_64-linux-gnu/libz.so.1", elf(tag=b"the image's libz: the host has its own")),
        ("usr/local/cuda/compat/lib/libcuda.so.1", elf(tag=b"forward compatibility: never over the driver's")),
        ("usr/local/cuda-12.6/targets/x86_64-linux/lib/stubs/libstub.so.1", elf(tag=b"a stub")),
        ("usr/lib/x86_64-linux-gnu/libgone.so.1", elf(tag=b"whited out by the next layer")),
        ("usr/lib/x86_64-linux-gnu/libunused.so.1", elf(tag=b"linked by nothing")),
    )
    triton = layer(
        ("opt/tritonserver/backends/onnxruntime/libtriton_onnxruntime.so", backend),
        ("usr/lib/x86_64-linux-gnu/.wh.libgone.so.1", b""),
    )
    with Registry() as registry:
        index, _ = registry.push("24.10-py3", ngc_config(), [BASE, images_os, TOP, triton])
        cache, dest = tmp_path / "cache", tmp_path / "versions" / "image"
        dest.parent.mkdir()
        assert pull(registry, index, cache) == 0
    assert unpack(cache, index, dest) == 0
    carried = sorted(p.name for p in (dest / "lib").iterdir() if p.name != "libtritonserver.so")
    assert carried == ["libbar.so.2", "libfoo.so.1"]  # libbar: linked by libfoo, found once libfoo was there
    assert (dest / "lib" / "libbar.so.2").read_bytes().endswith(b"bar")
    foo = dest / "lib" / "libfoo.so.1"
    assert not foo.is_symlink() and foo.stat().st_mode & 0o777 == 0o755
    assert "carried=libfoo.so.1,libbar.so.2\n" in (dest / ".provisioner").read_text()


def test_nothing_is_carried_where_the_host_has_every_library(tmp_path: Path) -> None:
    needs_libz = layer(("opt/tritonserver/backends/python/libtriton_python.so", elf("libz.so.1")))
    with Registry() as registry:
        index, _ = registry.push("24.10-py3", ngc_config(), [BASE, TOP, needs_libz])
        assert pull(registry, index, tmp_path / "cache") == 0
    assert unpack(tmp_path / "cache", index, tmp_path / "image") == 0
    assert "carried=" not in (tmp_path / "image" / ".provisioner").read_text()


def test_an_images_path_is_printed_without_what_a_terminal_would_act_on() -> None:
    assert libs.printable("usr/lib/\x1b[2Jlibfoo.so.1\n") == "usr/lib/?[2Jlibfoo.so.1?"
