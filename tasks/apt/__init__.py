"""apt's runtime libraries, in one folder: which package ships a library on this release, then their install
(from a cache on the persistent path, or the controller's relay).

Rules (RULES: the planner, planner/, imports these; they import no operation):
- `distro.py`: which release a host is, and which apt package ships a library there.

Operations:
- `packages.py`: the packages installed, their .debs cached on the persistent path and recorded;
- `relay.py`, `lists_relay.py`: the .debs and the signed lists through the controller, for many hosts;
- `scripts/`: the host script they send (apt_cache.py).

The cache's fact: facts/apt.py (AptDownloads).
"""

RULES = ("distro",)
