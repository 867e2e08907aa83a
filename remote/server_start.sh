# $1 run dir, $2 launcher, $3 config hash, $4 stale pids, $5 the user to run as; the rest:
# tritonserver's arguments. Stops our earlier server, starts a new one detached as that user (its
# privileges dropped, no way to regain them), records its pid and configuration hash.
. ./lib.sh
set -e
run="$1"
launcher="$2"
hash="$3"
stale="$4"
user="$5"
shift 5
mkdir -p "$run"
for p in $(cat "$run/tritonserver.pid" 2>/dev/null) $stale; do stop_pid "$p"; done
rm -f "$run/tritonserver.pid" "$run/config.hash" "$run/proof.txt"
echo "--- start $(date -u +%FT%TZ)" >> "$run/tritonserver.log"
if [ "$user" = root ]; then
  setsid "$launcher" tritonserver "$@" >> "$run/tritonserver.log" 2>&1 < /dev/null &
else
  setsid setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs --inh-caps=-all \
    "$launcher" tritonserver "$@" >> "$run/tritonserver.log" 2>&1 < /dev/null &
fi
echo $! > "$run/tritonserver.pid"
echo "$hash" > "$run/config.hash"
echo "started Triton pid $(cat "$run/tritonserver.pid")" >&2
