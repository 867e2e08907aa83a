# Nvidia: nvidia-smi's GPU query (compute_cap where this driver knows it) and its header.
command -v nvidia-smi >/dev/null 2>&1 || exit 0
fields=index,name,memory.total,driver_version
echo '@query'
nvidia-smi --query-gpu="$fields,compute_cap" --format=csv,noheader,nounits 2>&1 \
  || nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits 2>&1
echo '@header'
nvidia-smi 2>&1 | head -n 6
true
