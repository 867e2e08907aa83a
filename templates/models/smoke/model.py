"""Smoke model: each text's length (computed with torch) and its upper-case form."""

import os
import sys

# The stub's interpreter takes no PYTHONPYCACHEPREFIX from its environment, and the venv is root's: without
# this, every load compiled torch and transformers again (~4.6 s of CPU each). The server's launcher names
# the folder its user may write (config/layout.py python_bytecode).
if os.environ.get("PYTHONPYCACHEPREFIX"):
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]

import numpy as np  # after the bytecode folder is set above
import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            texts = [t[0].decode("utf-8") for t in pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()]
            lengths = torch.tensor([[len(t)] for t in texts], dtype=torch.int64).numpy()
            upper = np.array([[t.upper().encode("utf-8")] for t in texts], dtype=np.object_)
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("LENGTH", lengths), pb_utils.Tensor("UPPER", upper)])
            )
        return responses
