"""Prove each model with tritonclient over HTTP and gRPC: one request and a batch of 8, names,
shapes and types as the model's metadata says, and (optionally) the same answers as the
model run in-process here. A Triton model folder a user brought is called with inputs made from its
config.pbtxt (each input's type and shape: strings "triton", numbers 1, a variable dimension 1), and
must answer every output its config names, the same over both protocols. Runs in the host's venv
through the launcher.

    python3 verify_models.py HTTP_URL GRPC_URL MODEL_REPOSITORY IN_PROCESS(0|1) SPEC_JSON

The in-process answers are kept in $TRITON_REFERENCES (a folder of the server's user), a file per model
named by what they depend on: the model's digest (its repository files and the venv), the device and
the weights it loaded. A later proof of the same model on the same venv (a restart, another model's
change) compares the served answers with those, and loads no second copy of the model.
"""

import base64
import hashlib
import importlib.util
import json
import os
import sys

import numpy as np
import tritonclient.grpc as tgrpc
import tritonclient.http as thttp
from _common import proof

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
# The protocol's datatypes -> numpy's, for inputs made from a config (BF16 has no numpy type: refused).
NUMPY = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
    "FP32": np.float32, "FP64": np.float64, "BYTES": np.object_,
}  # fmt: skip
# A second copy of a model on the server's GPU needs its weights and some room for activations
# and the CUDA context: weights x1.2 + 512 MiB is what the check asks to be free.
GPU_HEADROOM = 1.2
GPU_CONTEXT_BYTES = 512 << 20
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def weights_bytes(path):
    """Bytes of the weight files in a model directory (the largest of the formats it carries)."""
    sizes = {}
    for name in os.listdir(path):
        for suffix in WEIGHT_SUFFIXES:
            if name.endswith(suffix):
                sizes[suffix] = sizes.get(suffix, 0) + os.path.getsize(os.path.join(path, name))
    return max(sizes.values(), default=0)


def in_process_plan(device, weights, free):
    """("run", "") or ("skip", why): run the model in-process on `device` only where a second copy fits."""
    if not device.startswith("cuda"):
        return "run", ""
    need = int(weights * GPU_HEADROOM) + GPU_CONTEXT_BYTES
    if free is None:
        return "skip", f"the in-process check was skipped: torch in the venv sees no {device}"
    if need > free:
        return "skip", (
            f"the in-process check was skipped: a second copy needs ~{need >> 20} MiB on {device}, "
            f"{free >> 20} MiB is free beside the served one"
        )
    return "run", ""


def gpu_free(device):
    """Free bytes on the device as CUDA reports them; None where torch cannot use it."""
    import torch

    if not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return free


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


def made_inputs(module, spec):
    """One request's inputs, made from the model's config: a batch of 1 where it batches."""
    inputs, shown = [], []
    for entry in spec["inputs"]:
        dims = [1 if d < 0 else d for d in entry["dims"]]
        shape = ([1] if spec["max_batch_size"] > 0 else []) + dims
        if entry["datatype"] not in NUMPY:
            raise AssertionError(f"{spec['name']}: no input can be made for {entry['name']} ({entry['datatype']})")
        if entry["datatype"] == "BYTES":
            data = np.full(shape, b"triton", dtype=np.object_)
        else:
            data = np.ones(shape, dtype=NUMPY[entry["datatype"]])
        inp = module.InferInput(entry["name"], shape, entry["datatype"])
        inp.set_data_from_numpy(data)
        inputs.append(inp)
        shown.append(f"{entry['name']} {entry['datatype']}{shape}")
    return inputs, ", ".join(shown)


def call_made(client, module, spec):
    """The model called with made inputs: every output its config names, as numpy arrays."""
    inputs, shown = made_inputs(module, spec)
    result = client.infer(spec["name"], inputs)
    got = {}
    for name in spec["outputs"]:
        arr = result.as_numpy(name)
        if arr is None:
            raise AssertionError(f"{spec['name']}: no output {name} in the answer (its config.pbtxt names it)")
        got[name] = arr
    return got, shown


def same(served, local, name, atol=1e-4):
    for key, want in local.items():
        have = served[key]
        if want.dtype == np.object_:
            if [bytes(x) for x in have.ravel()] != [bytes(x) for x in want.ravel()]:
                raise AssertionError(f"{name}.{key}: served {have.ravel()[:3]} != in-process {want.ravel()[:3]}")
        elif not np.allclose(have, want, atol=atol, rtol=1e-3):
            raise AssertionError(f"{name}.{key}: served and in-process differ by {np.abs(have - want).max()}")


def encoded(answers):
    """Answers (name -> numpy array) as JSON: strings as base64, numbers as lists, each with its shape."""
    out = {}
    for key, arr in answers.items():
        if arr.dtype == np.object_:
            out[key] = {"bytes": [base64.b64encode(bytes(x)).decode() for x in arr.ravel()], "shape": list(arr.shape)}
        else:
            out[key] = {
                "numbers": arr.astype(np.float64).ravel().tolist(),
                "dtype": str(arr.dtype),
                "shape": list(arr.shape),
            }
    return out


def decoded(data):
    out = {}
    for key, entry in data.items():
        if "bytes" in entry:
            values = np.empty(len(entry["bytes"]), dtype=np.object_)
            values[:] = [base64.b64decode(x) for x in entry["bytes"]]
            out[key] = values.reshape(entry["shape"])
        else:
            out[key] = np.array(entry["numbers"], dtype=entry["dtype"]).reshape(entry["shape"])
    return out


def weights_id(source):
    """Which weights a source loads, without importing torch: a path: model's folder, or a hub model's
    snapshot folder of the commit its revision names in the HF cache (a branch read from refs/)."""
    kind, _, ref = source.partition(":")
    if kind != "hub":
        return os.path.realpath(ref)
    repo, _, revision = ref.partition("@")
    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(os.environ.get("HF_HOME", ""), "hub")
    folder = os.path.join(cache, "models--" + repo.replace("/", "--"))
    commit = revision
    try:
        with open(os.path.join(folder, "refs", revision or "main")) as f:
            commit = f.read().strip()
    except OSError:
        pass  # a commit as the revision: no ref
    return os.path.join(folder, "snapshots", commit)


def reference_file(spec, device, weights, batch):
    """(the file of this model's kept answers, the key they are kept under) or (None, ""): without
    $TRITON_REFERENCES or a digest of the model, nothing is kept."""
    folder = os.environ.get("TRITON_REFERENCES", "")
    if not folder or not spec.get("digest"):
        return None, ""
    key = hashlib.sha256(json.dumps([spec["digest"], device, weights, batch]).encode()).hexdigest()
    return os.path.join(folder, spec["name"] + ".json"), key


def compared_in_process(repository, spec, batch, served, one):
    """The served answers compared with the model run in-process in this venv on the server's device
    (or with what that run answered before, kept under the same key); what the proof says of it."""
    name = spec["name"]
    device = spec.get("device", "cpu")
    atol = 1e-3 if device.startswith("cuda") else 1e-4  # the same kernels; GPU reductions may sum in another order
    kept, key = reference_file(spec, device, weights_id(spec["source"]), batch)
    if kept:
        try:
            with open(kept) as f:
                record = json.load(f)
        except (OSError, ValueError):
            record = {}
        if record.get("key") == key:
            same(served, decoded(record["batch"]), name, atol)
            same(one, decoded(record["one"]), name, atol)
            return f", equal to in-process on {device} (its answers kept from the first proof of this model and venv)"
    path = f"{repository}/{name}/1/hf_pipeline.py"  # it imports torch and transformers: only now
    mod_spec = importlib.util.spec_from_file_location("hf_pipeline", path)
    hf = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(hf)
    free = gpu_free(device) if device.startswith("cuda") else None
    plan, why = in_process_plan(device, weights_bytes(hf.resolve(spec["source"])), free)
    if plan == "skip":
        return f"; {why}"
    pipe = hf.Pipeline(
        spec["task"],
        spec["source"],
        device=device,
        normalize=spec["normalize"],
        max_length=spec["max_length"],
        max_new_tokens=spec["max_new_tokens"],
    )
    local_batch, local_one = pipe.run(batch), pipe.run(TEXTS[:1])
    pipe.close()
    same(served, local_batch, name, atol)
    same(one, local_one, name, atol)
    if kept:  # only answers that agreed with the server's are kept
        os.makedirs(os.path.dirname(kept), exist_ok=True)
        with open(kept + ".part", "w") as f:
            json.dump({"key": key, "batch": encoded(local_batch), "one": encoded(local_one)}, f)
        os.replace(kept + ".part", kept)
    return f", equal to in-process on {device}"


def main(http_url, grpc_url, repository, in_process, spec_json):
    http = thttp.InferenceServerClient(http_url)
    grpc = tgrpc.InferenceServerClient(grpc_url)
    for spec in json.loads(spec_json):
        name = spec["name"]
        if spec["task"] == "triton":
            served, shown = call_made(http, thttp, spec)
            same(call_made(grpc, tgrpc, spec)[0], served, name + " (gRPC vs HTTP)")
            detail = ", ".join(f"{k}{list(v.shape)}" for k, v in served.items())
            proof(f"verified {name}: inputs made from its config.pbtxt ({shown}) over HTTP and gRPC; {detail}")
            continue
        batch = TEXTS[: max(1, min(8, spec["max_batch_size"] or 1))]
        one = call(http, thttp, name, TEXTS[:1])
        served = call(http, thttp, name, batch)
        served_grpc = call(grpc, tgrpc, name, batch)
        same(served_grpc, served, name + " (gRPC vs HTTP)")
        detail = ", ".join(f"{k}{list(v.shape)}" for k, v in served.items())
        if in_process == "1":
            detail += compared_in_process(repository, spec, batch, served, one)
        proof(f"verified {name}: 1 and {len(batch)} texts over HTTP and gRPC; {detail}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(*sys.argv[1:6]))
    except Exception as exc:  # one readable line, not a traceback
        print(f"verify: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
