"""Every setting, read without changing anything: its default and comment (from group_data/all.py, the one
place they are written) and each host's value where it differs; secrets masked (hf_token only as set).

    pyinfra INVENTORY deploy/settings.py -y
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state

from config.reference import render
from config.secrets import mask_output
from config.settings import load_inventory

mask_output()  # URL passwords are masked in every line pyinfra prints

load_inventory(state.inventory)  # a bad name or value is refused here, as every deploy refuses it
if host.name == next(iter(state.inventory)).name:  # once per run: the deploy runs for each host
    print(render({each.name: each.data.dict() for each in state.inventory}), flush=True)
