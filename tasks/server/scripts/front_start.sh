# The front (tasks/server/front_plan.py): $1 run dir (root's), $2 the server's user, $3 the configurations' hash,
# $4 HAProxy's program, $5 and $6 its configuration with slot a and with slot b serving. Stops the running
# front (its recorded pid, where that is HAProxy), writes both configurations, and starts HAProxy as the
# server's user (its privileges dropped for good) on the slot front.slot names (a where none), detached and
# one process (not master and worker: the recorded pid is the one that holds the ports),
# its output appended to front.log; records its pid, the hash and the slot; waits for its runtime socket.
. ./lib.sh
set -e
r="$1"
user="$2"
hash="$3"
program="$4"
stop_front "$r" "$program"
rm -f "$r/front.hash"
front_files "$r" "$user" "$5" "$6"
slot=$(cat "$r/front.slot" 2>/dev/null) || slot=a
case "$slot" in a | b) ;; *) slot=a ;; esac
echo "--- front start $(date -u +%FT%TZ), slot $slot" >> "$r/front.log"
cd /  # HAProxy returns to the directory it started in: the server's user may not enter root's
if [ "$user" = root ]; then
  setsid "$program" -db -f "$r/front-$slot.cfg" >> "$r/front.log" 2>&1 < /dev/null &
else
  setsid setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs --inh-caps=-all \
    "$program" -db -f "$r/front-$slot.cfg" >> "$r/front.log" 2>&1 < /dev/null &
fi
pid=$!
i=0
until [ -S "$r/front/admin.sock" ]; do
  if ! kill -0 "$pid" 2>/dev/null || [ "$i" -ge 150 ]; then
    echo "the front (HAProxy) did not start; its log ($r/front.log) ends:" >&2
    tail -n 15 "$r/front.log" >&2
    kill -KILL "$pid" 2>/dev/null || true
    exit 1
  fi
  sleep 0.1
  i=$((i + 1))
done
echo "$pid" > "$r/front.pid"
echo "$hash" > "$r/front.hash"
echo "$slot" > "$r/front.slot"
echo "the front (HAProxy pid $pid) hands requests to slot $slot" >&2
