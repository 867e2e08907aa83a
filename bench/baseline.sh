#!/bin/bash
# The hand recipe of the source write-ups (../shared/seeds), as one plain script: what a user
# runs in a notebook cell after every reset. The benchmark runs it over the same SSH as ours:
#
#   ssh HOST bash -s -- PYTRITON_URL FIND_LINKS HTTP_PORT GRPC_PORT METRICS_PORT < bench/baseline.sh
#
# Same artifacts, pins and smoke model as the provisioner, so that only the method differs:
# apt install the write-up's package list, download and unpack Triton, pip install torch and
# transformers, write the model repository, start with nohup, poll until ready, one inference.
# No cache survives a reset: everything is fetched again (pip's cache is in ~/.cache).
set -euo pipefail
PYTRITON_URL=$1 FIND_LINKS=$2 HTTP_PORT=$3 GRPC_PORT=$4 METRICS_PORT=$5
B=/opt/baseline
step() { echo "baseline: $1 $(date +%s.%N)" >&2; }

step apt
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# the write-up's list (seed 000), plus the runtime libraries the Triton build loads
apt-get install -y -q --no-install-recommends ca-certificates wget libb64-dev libre2-dev libssl-dev \
  libboost-dev libboost-system-dev libboost-filesystem-dev rapidjson-dev python3-dev python3-pip \
  python3-venv libnuma1 libarchive13 >/dev/null

step download
mkdir -p $B && cd $B
wget -q -O pytriton.whl "$PYTRITON_URL"

step unpack
rm -rf $B/w && python3 -m zipfile -e pytriton.whl $B/w
T=$B/w/pytriton/tritonserver
chmod +x $T/bin/* $T/python_backend_stubs/*/triton_python_backend_stub
PYV=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
cp $T/python_backend_stubs/$PYV/triton_python_backend_stub $T/backends/python/
export LD_LIBRARY_PATH=$B/w/nvidia_pytriton.libs:$T/lib:$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
export PATH=$T/bin:$PATH

step pip
python3 -m venv $B/venv
$B/venv/bin/pip install -q --disable-pip-version-check --find-links "$FIND_LINKS" \
  torch==2.13.0+cpu numpy==1.26.4 transformers==4.57.1 tokenizers==0.22.1 huggingface-hub==0.36.0

step config
mkdir -p $B/models/smoke/1
cat > $B/models/smoke/config.pbtxt <<'EOF'
name: "smoke"
backend: "python"
max_batch_size: 8
input [ { name: "TEXT", data_type: TYPE_STRING, dims: [ 1 ] } ]
output [
  { name: "LENGTH", data_type: TYPE_INT64, dims: [ 1 ] },
  { name: "UPPER", data_type: TYPE_STRING, dims: [ 1 ] }
]
instance_group [ { kind: KIND_CPU, count: 1 } ]
EOF
cat > $B/models/smoke/1/model.py <<'EOF'
import numpy as np
import torch  # noqa: F401  (the venv's torch loads, as in the write-up)
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            rows = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy().reshape(-1)
            texts = [r.decode() for r in rows]
            length = np.array([[len(t)] for t in texts], dtype=np.int64)
            upper = np.array([[t.upper().encode()] for t in texts], dtype=np.object_)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("LENGTH", length), pb_utils.Tensor("UPPER", upper)]))
        return out
EOF

step start
# the write-up: start Triton with the venv's Python in front ("the interpreter Triton runs with")
source $B/venv/bin/activate
nohup tritonserver --model-repository=$B/models --backend-directory=$T/backends --http-address 127.0.0.1 --http-port "$HTTP_PORT" \
  --grpc-address 127.0.0.1 --grpc-port "$GRPC_PORT" --metrics-port "$METRICS_PORT" > $B/triton.log 2>&1 < /dev/null &
PID=$!

step ready
for _ in $(seq 1 600); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$HTTP_PORT/v2/health/ready', timeout=1)" 2>/dev/null; then break; fi
  kill -0 $PID 2>/dev/null || { grep -E "^E" $B/triton.log | tail -5 >&2; tail -3 $B/triton.log >&2; exit 1; }
  sleep 0.2
done
python3 - "$HTTP_PORT" <<'EOF'
import json, sys, urllib.request
body = {"inputs": [{"name": "TEXT", "shape": [1, 1], "datatype": "BYTES", "data": ["hello"]}]}
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v2/models/smoke/infer", json.dumps(body).encode())
print("baseline: inference", json.loads(urllib.request.urlopen(req, timeout=30).read())["outputs"], file=sys.stderr)
EOF
step done
