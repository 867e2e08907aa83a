"""The standalone CPython for hosts whose own Pythons this Triton build cannot use (or the server's user
cannot run): the archive of python_standalone_url unpacked from its checked copy into its own directory,
or one the pinned uv installs; either proven to start."""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import operation
from pyinfra.facts.files import File

import remote
from planner.tables import UV_SHA256, UV_VERSION


@operation()
def unpacked(archive: str, home: str, minor: str, python: str = "python3"):
    """home holds a working CPython `minor` from archive (already sha256-checked in the cache).

    home is named by version and archive sha256, so a present, complete one (its .provisioner
    written last) is this archive's; anything else is unpacked beside it and renamed into place.
    """
    if host.get_fact(File, path=f"{home}/.provisioner"):
        host.noop(f"CPython {minor} at {home}")
        return
    yield remote.python(python, "unpack_python.py", archive, home, minor)


@operation()
def uv_installed(
    wheel: str,
    tools: str,
    install_dir: str,
    archives: str,
    cache: str,
    want: str,
    minor: str,
    arch: str,
    mirror: str = "",
    downloads_list: str = "",
    offline: bool = False,
):
    """install_dir holds a checked CPython `minor` that the pinned uv installed (`want`: "3.12" for the
    newest 3.12.x uv knows, or an exact "3.11.9"); its archive stays in `archives` on the persistent path,
    which a reset host (and an offline run) installs from, uv checking it against its sha256 again."""
    marker = f"{install_dir}/.provisioner-{minor}"
    if host.get_fact(File, path=marker):
        host.noop(f"CPython {minor} by uv at {install_dir}")
        return
    # shown as it comes: uv's download, then what was installed
    yield remote.live(
        remote.shell(
            "uv_python.sh",
            wheel,
            tools,
            UV_VERSION,
            install_dir,
            archives,
            cache,
            want,
            minor,
            arch,
            mirror,
            downloads_list,
            "offline" if offline else "",
            *UV_SHA256,
        )
    )
