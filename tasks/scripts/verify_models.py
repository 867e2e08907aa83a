"""Prove each model with tritonclient over HTTP and gRPC: one request and a batch of 8, names,
shapes and types as the model's metadata says, and (optionally) the same answers as the
model run in-process here. Runs in the host's venv through the launcher.

    python3 verify_models.py HTTP_URL GRPC_URL MODEL_REPOSITORY IN_PROCESS(0|1) SPEC_JSON
"""

import importlib.util
import json
import os
import sys

import numpy as np
import tritonclient.grpc as tgrpc
import tritonclient.http as thttp

TEXTS = [
    "a fine day",
    "terrible, awful",
    "ok",
    "Triton without Docker",
    "the quick brown fox",
    "",
    "ünïcödé ✓",
    "one more sentence to make eight",
]
DTYPES = {"BYTES": np.object_, "FP32": np.float32, "INT64": np.int64}


def call(client, module, name, texts):
    inp = module.InferInput("TEXT", [len(texts), 1], "BYTES")
    inp.set_data_from_numpy(np.array([[t.encode("utf-8")] for t in texts], dtype=np.object_))
    result = client.infer(name, [inp])
    meta = client.get_model_metadata(name)
    outputs = (
        meta["outputs"] if isinstance(meta, dict) else [{"name": o.name, "datatype": o.datatype} for o in meta.outputs]
    )
    got = {}
    for o in outputs:
        arr = result.as_numpy(o["name"])
        if arr is None or arr.shape[0] != len(texts):
            raise AssertionError(
                f"{name}: output {o['name']} has shape {None if arr is None else arr.shape}, expected {len(texts)} rows"
            )
        if arr.dtype != DTYPES[o["datatype"]] and not (o["datatype"] == "BYTES" and arr.dtype == object):
            raise AssertionError(f"{name}: output {o['name']} is {arr.dtype}, metadata says {o['datatype']}")
        got[o["name"]] = arr
    return got


def same(served, local, name):
    for key, want in local.items():
        have = served[key]
        if want.dtype == np.object_:
            if [bytes(x) for x in have.ravel()] != [bytes(x) for x in want.ravel()]:
                raise AssertionError(f"{name}.{key}: served {have.ravel()[:3]} != in-process {want.ravel()[:3]}")
        elif not np.allclose(have, want, atol=1e-4, rtol=1e-3):
            raise AssertionError(f"{name}.{key}: served and in-process differ by {np.abs(have - want).max()}")


def proof(line: str) -> None:
    """Say it on stderr, and append it to $TRITON_PROOF_FILE, which the deploy shows."""
    print(line, file=sys.stderr, flush=True)
    path = os.environ.get("TRITON_PROOF_FILE")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def main(http_url, grpc_url, repository, in_process, spec_json):
    http = thttp.InferenceServerClient(http_url)
    grpc = tgrpc.InferenceServerClient(grpc_url)
    for spec in json.loads(spec_json):
        name = spec["name"]
        batch = TEXTS[: max(1, min(8, spec["max_batch_size"] or 1))]
        one = call(http, thttp, name, TEXTS[:1])
        served = call(http, thttp, name, batch)
        served_grpc = call(grpc, tgrpc, name, batch)
        same(served_grpc, served, name + " (gRPC vs HTTP)")
        detail = ", ".join(f"{k}{list(v.shape)}" for k, v in served.items())
        if in_process == "1":
            path = f"{repository}/{name}/1/hf_pipeline.py"
            mod_spec = importlib.util.spec_from_file_location("hf_pipeline", path)
            hf = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(hf)
            pipe = hf.Pipeline(
                spec["task"],
                spec["source"],
                normalize=spec["normalize"],
                max_length=spec["max_length"],
                max_new_tokens=spec["max_new_tokens"],
            )
            same(served, pipe.run(batch), name)
            same(one, pipe.run(TEXTS[:1]), name)
            detail += ", equal to in-process"
        proof(f"verified {name}: 1 and {len(batch)} texts over HTTP and gRPC; {detail}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(*sys.argv[1:6]))
    except Exception as exc:  # one readable line, not a traceback
        print(f"verify: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
