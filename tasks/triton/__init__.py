"""The Triton build, in one folder: which build fits the host, where it comes from (a checksummed artifact
or NGC's image, pulled without Docker), and its install beside the one in use. Its rules, then its operations.

Rules (RULES: the planner, planner/, imports these; they import no operation):
- `build.py`: the build and artifact the settings name, checked against the host (OS, C runtime, host
  libraries, the image's CUDA against the driver), and the apt packages it needs;
- `image_config.py`: what an image says of itself (its config), read before any layer.

Operations:
- `install.py`: the build unpacked beside the one in use, checked, its stub fitted;
- `image_relay.py`: one image pull for many hosts, through the controller;
- `scripts/`: the host scripts they send (unpack_triton.py, oci_pull.py).

The install's fact: facts/triton.py (TritonInstall); the image's: facts/image.py.
"""

RULES = ("build", "image_config")
