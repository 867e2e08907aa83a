# $1 user: every process of the server's user ends (TERM, then KILL after 10 s), so that the user can
# be removed: stubs a killed server left behind are the usual ones. Says what it stopped.
pids=$(pgrep -u "$1" 2>/dev/null | tr '\n' ' ')
[ -n "$pids" ] || exit 0
echo "stopping the processes of $1: $(ps -o pid=,comm= -p "$(echo "$pids" | tr ' ' ',' | sed 's/,$//')" | tr '\n' ';')" >&2
pkill -TERM -u "$1" || true
i=0
while pgrep -u "$1" >/dev/null 2>&1 && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
pkill -KILL -u "$1" || true
i=0
while pgrep -u "$1" >/dev/null 2>&1 && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
true
