# $1 run dir, $2 stale pids: stop the recorded server and those, and the log watcher; forget the pid and hash.
. ./lib.sh
run="$1"
for p in $(cat "$run/tritonserver.pid" 2>/dev/null) $2; do stop_pid "$p" && stop_group "$p"; done
stop_watcher "$run"
rm -f "$run/tritonserver.pid" "$run/config.hash" "$run/models.loaded"
