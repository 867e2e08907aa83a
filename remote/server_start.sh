# $1 run dir, $2 launcher, $3 config hash, $4 stale pids; the rest: tritonserver's arguments.
# Stops our earlier server, starts a new one detached, records its pid and configuration hash.
. ./lib.sh
set -e
run="$1"
launcher="$2"
hash="$3"
stale="$4"
shift 4
mkdir -p "$run"
for p in $(cat "$run/tritonserver.pid" 2>/dev/null) $stale; do stop_pid "$p"; done
rm -f "$run/tritonserver.pid" "$run/config.hash" "$run/proof.txt"
echo "--- start $(date -u +%FT%TZ)" >> "$run/tritonserver.log"
setsid "$launcher" tritonserver "$@" >> "$run/tritonserver.log" 2>&1 < /dev/null &
echo $! > "$run/tritonserver.pid"
echo "$hash" > "$run/config.hash"
echo "started Triton pid $(cat "$run/tritonserver.pid")" >&2
