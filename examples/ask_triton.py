#!/usr/bin/env python3
"""ask-triton BASE_URL: the smoke model's answer to "hello", as Triton's JSON (what your app would call)."""

import json
import sys
import urllib.request

request = {"inputs": [{"name": "TEXT", "shape": [1, 1], "datatype": "BYTES", "data": ["hello"]}]}
req = urllib.request.Request(
    f"{sys.argv[1]}/v2/models/smoke/infer",
    data=json.dumps(request).encode(),
    headers={"Content-Type": "application/json"},
)
with urllib.request.urlopen(req, timeout=30) as answer:
    print(answer.read().decode())
