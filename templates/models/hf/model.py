"""Triton python backend model for a HuggingFace model (written by triton-provisioner).

initialize loads once and warms up; execute runs every request of a batch in one forward
pass; finalize frees the model. The computation itself is hf_pipeline.py's.
"""

import importlib.util
import json
import os
import sys

# The stub's interpreter takes no PYTHONPYCACHEPREFIX from its environment, and the venv is root's: without
# this, every load compiled torch and transformers again (~4.6 s of CPU each). The server's launcher names
# the folder its user may write (config/layout.py python_bytecode).
if os.environ.get("PYTHONPYCACHEPREFIX"):
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]

import numpy as np  # after the bytecode folder is set above
import triton_python_backend_utils as pb_utils

_spec = importlib.util.spec_from_file_location("hf_pipeline", os.path.join(os.path.dirname(__file__), "hf_pipeline.py"))
hf_pipeline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hf_pipeline)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        device = "cpu"
        if args.get("model_instance_kind") == "GPU":
            device = f"cuda:{args['model_instance_device_id']}"
        self.outputs = [o["name"] for o in config["output"]]
        threads = int(params.get("intra_op_threads", "0"))
        if threads > 0:  # this copy's share of the CPUs (tasks/models/serving.py); 0: torch's own choice
            hf_pipeline.torch.set_num_threads(threads)
        self.pipe = hf_pipeline.Pipeline(
            params["task"],
            params["source"],
            device=device,
            normalize=params.get("normalize") == "true",
            max_length=int(params.get("max_length", "128")),
            max_new_tokens=int(params.get("max_new_tokens", "16")),
        )
        self.pipe.run(["warm-up"])  # the first request should not pay for lazy initialisation

    def execute(self, requests):
        texts, sizes = [], []
        for request in requests:
            rows = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy().reshape(-1)
            texts.extend(r.decode("utf-8", "replace") if isinstance(r, bytes) else str(r) for r in rows)
            sizes.append(len(rows))
        result = self.pipe.run(texts)
        responses, start = [], 0
        for size in sizes:
            tensors = [
                pb_utils.Tensor(name, np.ascontiguousarray(result[name][start : start + size])) for name in self.outputs
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
            start += size
        return responses

    def finalize(self):
        self.pipe.close()
        self.pipe = None
