# ModelMemory $1 model repository: what a second copy of each loaded model needs and what is free.
# AVAIL=<kB the kernel can give without swapping>; per python backend stub of a model in $1:
# STUB=<pid> <rss kB> <model>; where nvidia-smi runs: GPU=<pid> <MiB used> and GPUFREE=<index> <MiB free>.
avail=$(sed -n 's/^MemAvailable:[[:space:]]*\([0-9]*\) kB$/\1/p' /proc/meminfo)
echo "AVAIL=${avail:-0}"
for d in /proc/[0-9]*; do
  c=$(tr "\0" " " < "$d/cmdline" 2>/dev/null) || continue
  case "$c" in
    *triton_python_backend_stub" $1/"*)
      rest=${c#*triton_python_backend_stub "$1"/}
      rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "$d/status" 2>/dev/null)
      echo "STUB=${d#/proc/} ${rss:-0} ${rest%%/*}" ;;
  esac
done
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | tr -d ' ' | sed 's/^/GPU=/; s/,/ /'
  nvidia-smi --query-gpu=index,memory.free --format=csv,noheader,nounits 2>/dev/null | tr -d ' ' | sed 's/^/GPUFREE=/; s/,/ /'
fi
true
