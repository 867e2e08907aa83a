# $1 unit path, $2 unit text, $3 run dir, $4 config hash, $5 stale pids: stop our detached servers,
# install the unit, enable it (started at boot), (re)start it, record its pid and the hash. Its log is
# the journal's (the unit writes a "--- start" line there first).
. ./lib.sh
set -e
mkdir -p "$3"
for p in $5; do stop_pid "$p"; done
printf "%s" "$2" > "$1.new"
mv "$1.new" "$1"
rm -f "$3/proof.txt" "$3/config.hash" "$3/models.loaded"
# where this start's lines begin in the journal (wait_ready reads from there): the unit's last cursor
journalctl -u tritonserver.service -n 1 -o cat --no-pager --show-cursor 2>/dev/null \
  | sed -n 's/^-- cursor: //p' > "$3/journal.cursor" || true
systemctl daemon-reload
systemctl enable --quiet tritonserver.service
systemctl restart tritonserver.service
systemctl show -p MainPID --value tritonserver.service > "$3/tritonserver.pid"
echo "$4" > "$3/config.hash"
echo "started Triton (tritonserver.service) pid $(cat "$3/tritonserver.pid")" >&2
