"""The standalone CPython (python_standalone_url) for hosts whose own Pythons this Triton build
cannot use: unpacked from its checked archive into its own directory, proven to start."""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import operation
from pyinfra.facts.files import File

import remote


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
