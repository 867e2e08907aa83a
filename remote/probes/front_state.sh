# FrontState $1 run dir, $2 HAProxy's program, $3 the front's unit. The front (tasks/server/front_plan.py): its pid
# (the unit's main process where systemd runs it, else the recorded one) where that is the program, the
# hash it started from, the slot it serves.
r="$1"
pid=$(cat "$r/front.pid" 2>/dev/null) || pid=""
if [ -d /run/systemd/system ] && [ -f "$3" ]; then
  pid=$(systemctl show -p MainPID --value "$(basename "$3")" 2>/dev/null) || pid=""
fi
case "$pid" in '' | *[!0-9]*) pid="" ;; esac
[ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$2" ] && echo "PID=$pid"
[ -f "$r/front.hash" ] && echo "HASH=$(cat "$r/front.hash")"
[ -f "$r/front.slot" ] && echo "SLOT=$(cat "$r/front.slot")"
true
