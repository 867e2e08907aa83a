"""Load, reload and unload models through Triton's repository API while the server goes on serving.

    python3 model_control.py BASE_URL GRPC_URL KEY_FILE HEADER TIMEOUT_S MODELS_DIR ITEM...
    python3 model_control.py --touch MODELS_DIR ITEM...     (as root, first: the models to load touched)

ITEM is load:NAME (load, or reload from the repository as it is now: Triton swaps the new copy in when
it is ready and keeps the old one serving if it fails), swap:NAME (unload, wait until it is gone, then
load: for a model whose second copy does not fit in memory) or unload:NAME. Loads run in parallel;
unloads come last, once every load succeeded. The key (read from KEY_FILE) goes in HEADER.

Loads go over gRPC where GRPC_URL is given (host:port; run with the venv's Python, which has
tritonclient): a load over HTTP holds one of Triton's HTTP threads for the whole load, and inference
requests to other models that land on that thread wait as long (seen: 12 s here; Triton issue 8958).

On a failed load prints the model, Triton's error, its cause and fix, and exits 1 (the unloads are then
not done). Runs on the host (3.8+) as the server's user (the venv's Python is that user's to run; its
group reads the key).

Triton reloads a loaded model only when its files are newer than those it loaded; a change may switch
the repository back to a directory written earlier (a rollback, or a change undone), so each model to
load is touched (every folder and file under MODELS_DIR/NAME) just before the loads, by root (--touch,
with the host's python3: the repository is root's).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request

from _causes import cause_of
from _common import proof


class Api:
    """Triton's repository API at base, each request carrying the key."""

    def __init__(self, base: str, header: str, key: str, timeout: float):
        self.base, self.headers, self.timeout = base, {header: key, "Content-Type": "application/json"}, timeout

    def post(self, path: str) -> tuple[int, str]:
        req = urllib.request.Request(f"{self.base}{path}", b"{}", self.headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")
        except OSError as exc:
            return 0, str(exc)

    def load(self, name: str, grpc_url: str) -> tuple[int, str]:
        """Load (or reload) a model: (200, "") or (status, Triton's error)."""
        if not grpc_url:
            return self.post(f"/v2/repository/models/{name}/load")
        import tritonclient.grpc as triton_grpc  # the venv's (only there)
        from tritonclient.utils import InferenceServerException

        client = triton_grpc.InferenceServerClient(grpc_url)
        try:
            # over gRPC Triton reads a restricted protocol's key from "triton-grpc-protocol-<header>"
            key = {f"triton-grpc-protocol-{k.lower()}": v for k, v in self.headers.items() if k != "Content-Type"}
            client.load_model(name, headers=key, client_timeout=self.timeout)
            return 200, ""
        except InferenceServerException as exc:
            return 400, json.dumps({"error": exc.message() or str(exc)})
        finally:
            client.close()

    def state(self, name: str) -> str:
        """The model's state in the repository index ("READY", "UNAVAILABLE", "UNLOADING"...; "" unknown)."""
        status, body = self.post("/v2/repository/index")
        if status != 200:
            return ""
        try:
            index = json.loads(body)
        except ValueError:
            return ""
        return next((str(m.get("state", "")) for m in index if isinstance(m, dict) and m.get("name") == name), "")


def error_of(body: str) -> str:
    """Triton's error message out of a response body (JSON {"error": ...}), else the body."""
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body.strip()


def explained(name: str, error: str) -> str:
    """A failed load in words: the model, Triton's error (its traceback lines), its cause and fix."""
    lines = [f"model {name} failed to load: Triton kept what it served before (if anything)"]
    lines += [f"  | {line}" for line in error.splitlines() if line.strip()][:30]
    hit = next((h for h in map(cause_of, [f"error: {line}" for line in error.splitlines()]) if h), None)
    if hit:
        lines.append(f"  => cause: {hit[0]}; fix: {hit[1]}")
    return "\n".join(lines)


def unload(api: Api, name: str, deadline: float) -> str:
    """Unload and wait until the model is no longer loaded; "" or the error."""
    status, body = api.post(f"/v2/repository/models/{name}/unload")
    if status != 200:
        return f"model {name} did not unload: {error_of(body) or status}"
    while api.state(name) in ("READY", "UNLOADING"):
        if time.monotonic() > deadline:
            return f"model {name} was still loaded after its unload ({api.state(name)})"
        time.sleep(0.1)
    return ""


NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # a model's folder name (config/checks.py allows fewer)


def touched(models_dir: str, name: str) -> None:
    """Every folder and file of the model newer than anything Triton loaded (no link followed). All of them:
    where only config.pbtxt is newer, Triton merely updates the loaded model's configuration in place."""
    top = f"{models_dir}/{name}"
    if not os.path.isdir(top) or os.path.islink(top):
        return
    for root, dirs, files in os.walk(top):
        for entry in [*dirs, *files]:
            path = os.path.join(root, entry)
            if not os.path.islink(path):
                os.utime(path, follow_symlinks=False)
    os.utime(top, follow_symlinks=False)


def main(base: str, grpc_url: str, key_file: str, header: str, timeout: str, models_dir: str, *items: str) -> int:
    plan = [item.partition(":") for item in items]
    bad = [
        item
        for item, (verb, _, name) in zip(items, plan)  # noqa: B905 (the host may run Python 3.8)
        if verb not in ("load", "swap", "unload") or not NAME.fullmatch(name)
    ]
    if bad:
        print(f"model_control.py: not an item: {', '.join(bad)}", file=sys.stderr)
        return 2
    with open(key_file) as f:
        key = f.read().strip()
    api = Api(base, header, key, float(timeout))
    deadline = time.monotonic() + float(timeout)
    failures: list[str] = []
    for verb, _, name in plan:
        if verb == "swap":
            error = unload(api, name, deadline)
            if error:
                failures.append(error)
    loads = [name for verb, _, name in plan if verb in ("load", "swap")]
    took: dict[str, float] = {}

    def load(name: str) -> None:
        started = time.monotonic()
        status, body = api.load(name, grpc_url)
        took[name] = time.monotonic() - started
        if status != 200:
            failures.append(explained(name, error_of(body) or f"HTTP {status}"))

    threads = [threading.Thread(target=load, args=(name,)) for name in loads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    for name in loads:
        via = "gRPC" if grpc_url else "HTTP"
        proof(f"loaded {name} through the repository API over {via} ({took[name]:.1f} s), the server kept serving")
    for verb, _, name in plan:
        if verb == "unload":
            error = unload(api, name, deadline)
            if error:
                print(error, file=sys.stderr)
                return 1
            proof(f"unloaded {name} through the repository API")
    return 0


def touch(models_dir: str, *items: str) -> int:
    """As root, before the loads (the repository is root's; the loads run as the server's user): each model
    to load made newer than what Triton loaded."""
    for verb, _, name in (item.partition(":") for item in items):
        if verb in ("load", "swap") and NAME.fullmatch(name):
            touched(models_dir, name)
    return 0


if __name__ == "__main__":
    sys.exit(touch(*sys.argv[2:]) if sys.argv[1] == "--touch" else main(*sys.argv[1:]))
