"""The test bed's state: one JSON file of hosts, guarded by a lock, so concurrent commands do not race."""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator

from testbed.config import STATE_DIR, Host


@contextlib.contextmanager
def _locked() -> Iterator[dict]:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = STATE_DIR / "state.json"
        state = json.loads(path.read_text()) if path.exists() else {"hosts": {}}
        yield state
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.rename(path)


def load_hosts() -> list[Host]:
    path = STATE_DIR / "state.json"
    if not path.exists():
        return []
    return [Host(**h) for h in json.loads(path.read_text())["hosts"].values()]
