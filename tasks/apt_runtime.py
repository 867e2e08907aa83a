"""apt runtime libraries the Triton build and the stub need, with --no-install-recommends."""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.deb import DebPackages
from pyinfra.operations import apt

# apt-get update only when the lists are older than this; fresh lists are reused.
APT_LISTS_MAX_AGE_S = 6 * 3600


@operation()
def runtime_packages(packages: list[str]):
    """Install the packages that are absent; update the lists first only when something is missing."""
    if not packages:
        host.noop("no apt packages needed")
        return
    installed = host.get_fact(DebPackages)
    missing = [p for p in packages if p not in installed]
    if not missing:
        host.noop(f"apt packages present: {', '.join(packages)}")
        return
    yield from apt.update._inner(cache_time=APT_LISTS_MAX_AGE_S)
    yield StringCommand(
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        *(QuoteString(p) for p in missing),
    )
