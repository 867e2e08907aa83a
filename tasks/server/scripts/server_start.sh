# $1 run dir, $2 the server's launcher (runs tritonserver), $3 config hash, $4 stale pids, $5 the user to run as, $6 the log watcher's
# script and $7-$11 its arguments (rotation script, log, cap, copies, interval; "" = no watcher); the
# rest: tritonserver's arguments. Stops our earlier server, starts a new one detached as that user
# (its privileges dropped, no way to regain them), records its pid and configuration hash, and
# starts the log watcher beside it (as root: it ends when the server does, and a stop stops it).
. ./lib.sh
set -e
run="$1"
launcher="$2"
hash="$3"
stale="$4"
user="$5"
watch="$6"
rotate="$7"
log="$8"
cap="$9"
keep="${10}"
every="${11}"
shift 11
mkdir -p "$run"
for p in $(cat "$run/tritonserver.pid" 2>/dev/null) $stale; do stop_pid "$p" && stop_group "$p"; done
stop_watcher "$run"
rm -f "$run/tritonserver.pid" "$run/config.hash" "$run/models.loaded" "$run/proof.txt"
echo "--- start $(date -u +%FT%TZ)" >> "$run/tritonserver.log"
start_detached "$run" "$user" "$launcher" "$@"
pid=$started
echo "$pid" > "$run/tritonserver.pid"
echo "$hash" > "$run/config.hash"
start_watcher "$run" "$pid" "$watch" "$rotate" "$log" "$cap" "$keep" "$every"
echo "started Triton pid $pid" >&2
