# The front stopped: $1 run dir, $2 its pid (FrontState read it as HAProxy's). TERM, its exit waited for
# (10 s, then KILL: its ports are then free for what starts next), its pid forgotten.
pid="$2"
kill -TERM "$pid" 2>/dev/null || true
i=0
while [ -d "/proc/$pid" ] && [ "$i" -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
kill -KILL "$pid" 2>/dev/null || true
rm -f "$1/front.pid"
echo "the front (HAProxy pid $pid) stopped" >&2
