"""What the server runs is switched as one: the links `current` (Triton), `venv` and `models`.

Each new Triton build, venv and model repository is made beside the one in use; the server's step
points the links at the new ones just before it restarts, and back at the old ones (the targets read
from the host before the run) if the new server does not become ready or fails its proof.
"""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import StringCommand, operation

import remote
from facts.files import Links

ADOPTED = "adopted"  # the name, in its versions folder, of a directory that stood where a link now does


def adopted_path(versions: str) -> str:
    """Where an older install's real directory is moved (see `adopted`)."""
    return f"{versions}/{ADOPTED}"


@operation()
def adopted(path: str, versions: str):
    """path is a link or absent: a real directory there (an install made before links) is moved into
    versions and linked, so the server that runs from it keeps every path it uses."""
    got = host.get_fact(Links, [path]).get(path, {"kind": "absent"})
    if got["kind"] != "dir":
        host.noop(f"{path} is {'a link' if got['kind'] == 'link' else got['kind']}")
        return
    yield remote.shell("links_adopt.sh", path, adopted_path(versions))


def previous(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...] | None:
    """Where each link points before this run (a directory that `adopted` moves counts as moved), or
    None where one is missing: nothing complete to switch back to."""
    have = host.get_fact(Links, [link for link, _ in pairs])
    out = []
    for link, target in pairs:
        got = have.get(link, {"kind": "absent", "target": ""})
        if got["kind"] == "link" and got["target"]:
            out.append((link, got["target"]))
        elif got["kind"] == "dir":
            out.append((link, adopted_path(target.rsplit("/", 1)[0])))
        else:
            return None
    return tuple(out)


def command(pairs: tuple[tuple[str, str], ...]) -> StringCommand:
    """Point each link at its target."""
    return remote.shell("links_switch.sh", *(part for pair in pairs for part in pair))
