"""This machine itself: the README's main job. `pyinfra inventories/local.py deploy/provision.py -y`

With no data here, torch comes from the official PyTorch index, its variant chosen from the GPU driver
(cpu without a GPU). Two things change that, both outside this file, so it stays the same on every machine:

- this machine's own pip configuration: where `PIP_FIND_LINKS` names a folder holding a torch wheel (a
  machine with no PyTorch index in reach keeps its wheels there), that wheel is taken: its version, from
  that folder, no index asked for torch, and the lock takes the wheel as first downloaded (no index
  publishes its digest);
- `TRITON_PROVISIONER_DATA`: a JSON file of settings for this machine (a mirror, a proxy, models), over
  the above.
"""

import json
import os
import re
from pathlib import Path

# torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl -> 2.13.0
_TORCH_WHEEL = re.compile(r"^torch-(?P<version>[0-9][0-9.]*)(?:\+[A-Za-z0-9.]+)?-")


def from_pip_config(find_links: str) -> dict:
    """The settings that take torch from the first local folder of pip's find-links holding a torch wheel."""
    for folder in find_links.split():
        path = Path(folder.removeprefix("file://"))
        wheels = sorted(p.name for p in path.glob("torch-*.whl")) if path.is_dir() else []
        versions = [m["version"] for name in wheels if (m := _TORCH_WHEEL.match(name))]
        if versions:
            return {
                "torch_version": versions[-1],
                "torch_index_url": "",
                "pip_find_links": str(path),
                "lock_trust_on_first_use": "torch",
            }
    return {}


def from_data_file(path: str) -> dict:
    """The settings of TRITON_PROVISIONER_DATA's JSON file ({} where it names none)."""
    if not path:
        return {}
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise ValueError(f"TRITON_PROVISIONER_DATA={path}: a JSON object of settings, not {type(data).__name__}")
    return data


local = [
    (
        "@local",
        {
            **from_pip_config(os.environ.get("PIP_FIND_LINKS", "")),
            **from_data_file(os.environ.get("TRITON_PROVISIONER_DATA", "")),
        },
    ),
]
