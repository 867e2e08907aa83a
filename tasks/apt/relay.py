"""apt's packages for many hosts, fetched from the Debian mirror once (downloads_via_controller, as the Triton
artifact, the wheels and hub models: tasks/downloads/relay.py). Once a host's lists are fresh, it names
the .debs its install would download and the sha256 its own signed lists give each (`apt-get --print-uris`,
Acquire::ForceHash=SHA256); the controller fetches each once for every host into its cache (kept only where
that sha256 agrees) and sends it to the host's archive folder, where the host takes it only once its own
sha256 check agrees (tasks/downloads/scripts/staged_install.py). That check is the host's: apt itself verifies no .deb
it finds already in its archive folder, only its size. A package the controller cannot fetch is left to
apt, which downloads it as before."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from pyinfra.api import FunctionCommand, QuoteString, StringCommand

from run import controller_cache
from tasks.downloads import private_upload

# `'URL' FILE SIZE SHA256:HEX`, one line per .deb apt would download
_URI_LINE = re.compile(r"^'(?P<url>https?://[^'\s]+)' (?P<file>\S+) (?P<size>\d+) SHA256:(?P<sha256>[0-9a-f]{64})$")
# a .deb's name in apt's archive folder (an epoch's ':' is written %3a): one plain name, nothing that climbs
_DEB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+~_%-]*\.deb$")


# Debian's and Ubuntu's archives: the origins apt_relay_origins "auto" names (each over http and https).
ARCHIVE_HOSTS = (
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "security.ubuntu.com",
    "ports.ubuntu.com",
)
# apt's own path shapes under an archive's root: a suite's files (InRelease, indexes) and the pool's .debs
_APT_PATH = re.compile(r"^(/[A-Za-z0-9._~+-]+)*/(dists/[A-Za-z0-9._~+-]+|pool)(/[A-Za-z0-9._~+%-]+)+$")


_ARCHIVES = [f"{scheme}://{name}" for name in ARCHIVE_HOSTS for scheme in ("http", "https")]


def origins(setting: str) -> frozenset[str]:
    """The origins (scheme://host[:port]) of apt_relay_origins, "auto" as Debian's and Ubuntu's archives."""
    found: set[str] = set()
    for origin in setting.split(","):
        found.update(_ARCHIVES if origin == "auto" else [origin.lower()])
    return frozenset(found)


def fetchable(url: str, allowed: frozenset[str]) -> bool:
    """Whether the controller may fetch url, which a host printed, for it: of an origin the settings name
    (allowed), of apt's own shapes (/dists/SUITE/..., /pool/...), no user, query, fragment, '.' or '..'."""
    try:
        u = urllib.parse.urlsplit(url)
        port = u.port
    except ValueError:
        return False
    if u.query or u.fragment or "?" in url or "#" in url or u.username or u.password or not u.hostname:
        return False
    origin = f"{u.scheme}://{u.hostname}" + (f":{port}" if port is not None else "")
    parts = u.path.split("/")
    return origin in allowed and "." not in parts and ".." not in parts and bool(_APT_PATH.match(u.path))


@dataclass(frozen=True)
class Deb:
    url: str
    file: str
    size: int
    sha256: str


def debs(lines: list[str], allowed: frozenset[str] = frozenset()) -> list[Deb]:
    """The .debs of `apt-get --print-uris install` output; a line that is not one (a name that is no plain
    .deb name, a hash that is not SHA256, a URL that is not that package's file in an archive's pool/, or not
    fetchable from the origins allowed) is skipped: apt downloads that one itself. The host names the URLs:
    the controller fetches nothing else for it (and keeps, or sends on, only what has the sha256 the host's
    lists give, cut off at the size they give)."""
    found = []
    for line in lines:
        match = _URI_LINE.match(line.strip())
        if not match or not _DEB_NAME.match(match["file"]):
            continue
        # the pool's file of the same package (its name has no epoch: apt's name for it may, as %3a)
        pooled = urllib.parse.unquote(urllib.parse.urlsplit(match["url"]).path.rsplit("/pool/", 1)[-1])
        if "/pool/" not in match["url"] or pooled.rsplit("/", 1)[-1].split("_")[0] != match["file"].split("_")[0]:
            continue
        if not fetchable(match["url"], allowed):
            continue
        found.append(Deb(match["url"], match["file"], int(match["size"]), match["sha256"]))
    return found


def print_uris(apt_options: list[str], packages: list[str]) -> StringCommand:
    """What apt would download to install packages, each with its SHA256 from the host's signed lists."""
    return StringCommand(
        "apt-get", "-o", "Acquire::ForceHash=SHA256", *(QuoteString(o) for o in apt_options), "-qq",
        "--print-uris", "install", "-y", "--no-install-recommends", *(QuoteString(p) for p in packages),
    )  # fmt: skip


def staged_from_cache(
    host, files: list[tuple[str, str, str, int]], cache_dir: str, connector_arguments: dict
) -> tuple[int, int] | None:
    """Each (URL, sha256, DEST, size) fetched into the controller's cache (once for every host, cut off past its
    size) and put at DEST on the host, which places it only where its own sha256 check agrees; (the files and
    the bytes sent). A file the controller cannot fetch is left to apt (logged); None where a send failed."""
    count = sent = 0
    for url, sha256, dest, size in files:
        try:
            local = controller_cache.fetched(url, sha256, Path(cache_dir), size)
        except controller_cache.FetchError as exc:
            host.log(f"apt: {exc}; the host downloads it itself")
            continue
        if not private_upload.put_now(host, dest, str(local), "644", connector_arguments, sha256):
            return None
        count, sent = count + 1, sent + size
    return count, sent


class _SentDebs(FunctionCommand):
    """Asks the host which .debs its install needs, fetches each into the controller's cache (once for every
    host) and sends it to the archive folder, taken there by the host's own sha256 check."""

    def execute(self, state, host, connector_arguments):
        asked, archives, cache_dir, allowed = self.args
        args = {**connector_arguments, "_shell_executable": "sh"}
        ok, out = host.run_shell_command(asked, **args)
        if not ok:
            host.log("apt: the host could not list the packages its install needs; apt downloads them itself")
            return True
        wanted = debs(out.stdout_lines, allowed)
        files = [(deb.url, deb.sha256, f"{archives}/{deb.file}", deb.size) for deb in wanted]
        staged = staged_from_cache(host, files, cache_dir, connector_arguments)
        if staged is None:
            return False
        host.log(f"apt: {staged[0]} of {len(wanted)} packages ({staged[1]} bytes) from the controller's copy")
        return True

    def __repr__(self) -> str:
        return f"AptDebsFromController({self.args[1]})"


def sent(
    apt_options: list[str], packages: list[str], archives: str, cache_dir: str, allowed: frozenset[str]
) -> FunctionCommand:
    """The command that puts the .debs packages' install needs into archives from the controller's cache,
    fetched only from the origins allowed."""
    return _SentDebs(controller_cache.fetched, (print_uris(apt_options, packages), archives, cache_dir, allowed), {})
