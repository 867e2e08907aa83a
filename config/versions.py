"""Comparing version strings, the one way every layer does it: PEP 440, by packaging (pip's own)."""

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version


def version_key(version: str) -> Version:
    """A version as pip orders it: "2.35" < "3.4.30", "2.0rc1" < "2.0", "2.13.0" < "2.13.0+cpu". One PEP 440
    cannot read (a tool's "?", a distro's "3.4.30-debian") is taken by its digits, part by part: "?" as 0."""
    try:
        return Version(version)
    except InvalidVersion:
        parts = version.split("+")[0].split(".")
        return Version(".".join("".join(ch for ch in part if ch.isdigit()) or "0" for part in parts))


def satisfies(version: str, specifier: str) -> bool:
    """version within specifier (PEP 440: "<2", ">=2.1,<3"), pre-releases considered: by PEP 440 "<2" excludes
    2's own pre-releases, so numpy 2.0.0rc1 is not <2 (it is 2.0's ABI)."""
    return SpecifierSet(specifier).contains(version_key(version), prereleases=True)
