# FrontState $1 run dir, $2 HAProxy's program. The front (compat/front.py): its pid where the recorded one is
# that program, the configuration hash it started from, the slot it serves.
r="$1"
pid=$(cat "$r/front.pid" 2>/dev/null) || pid=""
case "$pid" in '' | *[!0-9]*) pid="" ;; esac
[ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$2" ] && echo "PID=$pid"
[ -f "$r/front.hash" ] && echo "HASH=$(cat "$r/front.hash")"
[ -f "$r/front.slot" ] && echo "SLOT=$(cat "$r/front.slot")"
true
