"""Files that come to a host, in one folder: where each comes from (the host fetches it, or the controller
relays it: `relay.relay_dir` decides), and how it is placed (checked against its sha256 before root
places it, never through a link another user can plant).

Operations:
- `operations.py`: a checksummed file cached on the persistent path (an artifact, a standalone Python, uv),
  and an image pulled without Docker;
- `relay.py`: the controller's relay (one download for many hosts) and which hosts use it;
- `upload.py`: a folder uploaded from the controller;
- `private_upload.py`: every upload and secret through a private staging directory;
- `scripts/`: the host scripts they send (fetch.py, staged_install.py).
"""

RULES = ()
