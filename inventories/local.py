"""This machine itself: the README's main job. `pyinfra inventories/local.py deploy/provision.py -y`

The data below fits the machines this project is developed on: no PyTorch index can be
reached, and a CPU torch wheel lies in /opt/wheels (no index publishes its digest: the lock takes
it as first downloaded). On your own machine delete those four lines to take torch from the official
index (the variant is chosen from the GPU driver).
"""

local = [
    (
        "@local",
        {
            "torch_version": "2.13.0",  # the wheel this machine kind ships
            "torch_index_url": "",  # no PyTorch index reachable here
            "pip_find_links": "/opt/wheels",
            "lock_trust_on_first_use": "torch",  # the wheel of /opt/wheels: no index publishes its sha256
        },
    ),
]
