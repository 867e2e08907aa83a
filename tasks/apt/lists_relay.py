"""apt's package lists for many hosts, fetched from the Debian mirror once (downloads_via_controller, as the
.debs: tasks/apt/relay.py). Before a host's `apt-get update`, it names the index files it would fetch
(`apt-get --print-uris update`); the controller fetches each suite's InRelease once a run, and each index
file that InRelease names once for every host (by its sha256, into its cache), and sends it to the host's
lists/partial/ under the name apt downloads it to. apt takes a file it finds there as a download it can
resume: it hashes it against its own InRelease, fetched and signature-checked by the host's apt as always,
and downloads afresh any that disagrees (tried on a test host: an altered Packages.gz there was fetched
again whole). A file apt would not fetch (another compression, an index the InRelease lacks) is not sent;
the InRelease itself is never sent: each host's apt fetches it (~150 kB) and trusts nothing else."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from pyinfra.api import FunctionCommand, QuoteString, StringCommand

from remote._http import OPENER, request
from run import controller_cache
from run.controller_cache import shown
from tasks.apt.relay import fetchable, staged_from_cache

# `'URL' NAME SIZE` (and maybe a hash): one line per file `apt-get --print-uris update` would fetch
_URI_LINE = re.compile(r"^'(?P<url>https?://[^'\s]+)' (?P<name>[A-Za-z0-9][A-Za-z0-9._~%+-]*) \d+(?: \S+)?$")
# the compressions apt tries for an index, in its order with ours (gz, tasks/apt/packages.py) first
# (`apt-config dump`, apt 2.6: Acquire::CompressionTypes: xz bz2 lzma gz lz4 zst)
COMPRESSIONS = ("gz", "xz", "bz2", "lzma", "lz4", "zst")
# an InRelease read by the controller: no larger than this (Debian's: ~150 kB)
INRELEASE_MAX_BYTES = 4 << 20
# an index file the controller fetches for its hosts: no larger than this (Debian's largest: ~12 MB)
INDEX_MAX_BYTES = 256 << 20
_SHA256_LINE = re.compile(r"^ (?P<sha256>[0-9a-f]{64}) +(?P<size>\d+) (?P<path>[A-Za-z0-9][A-Za-z0-9._/+-]*)$")


@dataclass(frozen=True)
class Release:
    """What an InRelease says that the relay uses: each file's (sha256, size), and its two switches."""

    sums: dict[str, tuple[str, int]]  # path in the suite -> (sha256, size)
    by_hash: bool  # Acquire-By-Hash: yes
    no_arch_all_packages: bool  # No-Support-for-Architecture-all: Packages (apt then skips binary-all)


@dataclass(frozen=True)
class IndexFile:
    url: str  # where the controller fetches it (its by-hash URL where the suite has them)
    sha256: str
    size: int
    partial_name: str  # its name in apt's lists/partial/


def release(text: str) -> Release:
    """The SHA256 section and switches of an InRelease (unverified here: only the host's apt verifies it;
    what is read here chooses what to fetch, and a file is kept only where its sha256 is the one named)."""
    files: dict[str, tuple[str, int]] = {}
    fields: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("-----BEGIN PGP SIGNATURE"):
            break
        if line and not line[0].isspace():
            name, _, value = line.partition(":")
            section, fields[name] = name, value.strip()
        elif section == "SHA256" and (match := _SHA256_LINE.match(line)):
            files[match["path"]] = (match["sha256"], int(match["size"]))
    return Release(
        sums=files,
        by_hash=fields.get("Acquire-By-Hash", "").lower() == "yes",
        no_arch_all_packages="Packages" in fields.get("No-Support-for-Architecture-all", "").split(),
    )


def printed(lines: list[str]) -> list[tuple[str, str]]:
    """(URL, apt's file name) of each line of `apt-get --print-uris update`; a line that is not one is
    skipped (apt fetches that one itself)."""
    return [(m["url"], m["name"]) for line in lines if (m := _URI_LINE.match(line.strip()))]


def _suite_of(url: str, suites: list[str]) -> str:
    """The longest suite URL (an InRelease's folder) that url lies in, or ""."""
    inside = [base for base in suites if url.startswith(base)]
    return max(inside, key=len, default="")


def _uncompressed(name: str) -> str:
    """name without the compression suffix apt may give it (Packages.gz -> Packages)."""
    for ext in COMPRESSIONS:
        name = name.removesuffix(f".{ext}")
    return name


def index_files(uris: list[tuple[str, str]], releases: dict[str, Release]) -> list[IndexFile]:
    """The index files to send: for each index apt would fetch, in a suite whose InRelease the controller
    read (releases: the InRelease's folder URL -> what it says), the first compression in apt's order
    that the InRelease names, with its sha256 and size; none where it names none, or apt skips the index."""
    found: list[IndexFile] = []
    for url, name in uris:
        base = _suite_of(url, list(releases))
        relative = url[len(base) :]
        if not base or relative in ("InRelease", "Release", "Release.gpg") or ".." in relative.split("/"):
            continue
        suite, stem, bare = releases[base], _uncompressed(relative), _uncompressed(name)
        if suite.no_arch_all_packages and re.fullmatch(r"[^/]+(/[^/]+)*/binary-all/Packages", stem):
            continue
        for ext in COMPRESSIONS:
            entry = suite.sums.get(f"{stem}.{ext}")
            if entry is None:
                continue
            sha256, size = entry
            folder = stem.rsplit("/", 1)[0]
            where = f"{base}{folder}/by-hash/SHA256/{sha256}" if suite.by_hash else f"{base}{stem}.{ext}"
            if size <= INDEX_MAX_BYTES:
                found.append(IndexFile(where, sha256, size, f"{bare}.{ext}"))
            break
    return found


# each InRelease the controller read this run: (its URL -> its text), one fetch for every host
_inreleases: dict[str, str] = {}
_inreleases_guard = threading.Lock()


def _inrelease(url: str) -> str:
    """An InRelease's text, fetched once a run (hosts run as greenlets: the second waits for the first)."""
    with _inreleases_guard:
        if url not in _inreleases:
            with OPENER.open(request(url), timeout=60) as resp:
                body = resp.read(INRELEASE_MAX_BYTES + 1)
            if len(body) > INRELEASE_MAX_BYTES:
                raise OSError(f"larger than {INRELEASE_MAX_BYTES} bytes")
            _inreleases[url] = body.decode("utf-8", "replace")
        return _inreleases[url]


def print_uris(apt_options: list[str]) -> StringCommand:
    """What `apt-get update` would fetch: each suite's InRelease and each index file, with apt's name for it
    (-q: with -qq apt prints nothing)."""
    return StringCommand("apt-get", *(QuoteString(o) for o in apt_options), "-q", "--print-uris", "update")


class _SentLists(FunctionCommand):
    """Asks the host which lists its update fetches, fetches each (once for every host) into the controller's
    cache and sends it to lists/partial/, where the host's apt checks it as it would its own download; then
    runs the update and says what apt still fetched from the mirror (its `Fetched` line)."""

    def execute(self, state, host, connector_arguments):
        asked, partial, cache_dir, update, allowed = self.args
        args = {**connector_arguments, "_shell_executable": "sh"}
        ok, out = host.run_shell_command(asked, **args)
        uris = [(url, name) for url, name in (printed(out.stdout_lines) if ok else []) if fetchable(url, allowed)]
        releases: dict[str, Release] = {}
        for url, _ in uris:
            if re.search(r"/dists/[^/]+/InRelease$", url):
                try:
                    releases[url.removesuffix("InRelease")] = release(_inrelease(url))
                except (OSError, ValueError) as exc:
                    host.log(f"apt: the controller could not read {shown(url)} ({exc}); the host fetches its lists")
        wanted = index_files(uris, releases)
        files = [(f.url, f.sha256, f"{partial}/{f.partial_name}", f.size) for f in wanted]
        staged = staged_from_cache(host, files, cache_dir, connector_arguments)
        if staged is None:
            return False
        count, sent = staged
        ok, out = host.run_shell_command(update, **args)
        fetched = [line.strip() for line in [*out.stdout_lines, *out.stderr_lines] if line.startswith("Fetched ")]
        host.log(
            f"apt: {count} of {len(wanted)} package lists ({sent} bytes) from the controller's copy, each "
            f"checked by apt against its signed InRelease; from the mirror: {fetched[-1] if fetched else 'nothing'}"
        )
        if not ok:
            for line in out.stderr_lines[-10:]:
                host.log(f"apt: {line}")
        return ok

    def __repr__(self) -> str:
        return f"AptListsFromController({self.args[1]})"


def updated(
    apt_options: list[str], partial: str, cache_dir: str, update: StringCommand, allowed: frozenset[str]
) -> FunctionCommand:
    """`update`, run once the index files it fetches are in partial from the controller's cache (fetched only
    from the origins allowed, in apt's own path shapes)."""
    return _SentLists(controller_cache.fetched, (print_uris(apt_options), partial, cache_dir, update, allowed), {})
