"""Which distribution release a host is, and which apt package ships a library there."""

from __future__ import annotations

from facts.system import OsReleaseData
from planner import tables


def distro_key(os: OsReleaseData | None) -> tuple[str, str]:
    """("debian", "12") or ("ubuntu", "24.04"); ("", "") when unknown."""
    if not os:
        return ("", "")
    version = os["version_id"]
    if os["id"] == "debian":
        version = version.split(".")[0]
    return (os["id"], version)


def release_known(os: OsReleaseData | None) -> bool:
    """The package tables know this distribution release (planner/tables.py KNOWN_RELEASES)."""
    return distro_key(os) in tables.KNOWN_RELEASES


def package_for(soname: str, os: OsReleaseData | None) -> str | None:
    """The apt package that ships soname on this release; None where none does or none is known."""
    key = distro_key(os)
    if key not in tables.KNOWN_RELEASES:
        return None
    if soname.startswith("libpython3.") and soname.endswith(".so.1.0"):
        minor = soname[len("libpython") : -len(".so.1.0")]
        if minor not in tables.DISTRO_PYTHONS.get(key, ()):
            return None  # a release ships only its own Pythons
        return f"libpython{minor}{tables.LIBPYTHON_PACKAGE_SUFFIX.get(key, '')}"
    return tables.SONAME_PACKAGES.get(soname, {}).get(key)


def unknown_package_fix(soname: str, os: OsReleaseData | None) -> str:
    """The fix where no package of this release is known to ship soname."""
    distro = " ".join(distro_key(os)) or "this distribution"
    if release_known(os):
        return (
            f"no package of {distro} ships {soname}: use a Triton build made for this release, or "
            "Debian 12 / Ubuntu 22.04 (never symlink another soname to it)"
        )
    return (
        f"no package name for {soname} is known for {distro} (planner/tables.py covers Debian 11-13 and "
        f"Ubuntu 20.04-24.04): install the package that ships it (`apt-file search {soname}`) by hand"
    )
