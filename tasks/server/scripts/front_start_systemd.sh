# The front as its own unit where systemd runs the host (tasks/server/unit.front_unit): $1 run dir (root's),
# $2 the server's user, $3 the hash it starts from (configurations and unit), $4 the unit's path, $5 its text,
# $6 and $7 HAProxy's configuration with slot a and with slot b serving. Writes both configurations and the
# unit, then (re)starts it: HAProxy as the server's user, in the foreground, on the slot the slot file
# (slot.env, written with the server's start) names; waits for its runtime socket; records the hash and slot.
. ./lib.sh
set -e
r="$1"
user="$2"
unit="$4"
name=$(basename "$unit")
[ -f "$r/slot.env" ] || { echo "no $r/slot.env: the server's start records the slot the front serves" >&2; exit 1; }
slot=$(sed -n 's/^TRITON_SLOT=\([ab]\)$/\1/p' "$r/slot.env")
[ -n "$slot" ] || { echo "$r/slot.env names no slot (a or b)" >&2; exit 1; }
rm -f "$r/front.hash"
printf '%s' "$5" > "$unit.new"
mv "$unit.new" "$unit"
cursor=$(journalctl -u "$name" -n 1 -o cat --no-pager --show-cursor 2>/dev/null | sed -n 's/^-- cursor: //p') || true
systemctl daemon-reload
systemctl enable --quiet "$name"
systemctl stop "$name"
front_files "$r" "$user" "$6" "$7"
systemctl start "$name"
i=0
until [ -S "$r/front/admin.sock" ]; do
  if ! systemctl is-active --quiet "$name" || [ "$i" -ge 150 ]; then
    echo "the front ($name) did not start; its journal ends:" >&2
    journalctl -u "$name" ${cursor:+"--after-cursor=$cursor"} -n 15 -o cat --no-pager >&2 || true
    exit 1
  fi
  sleep 0.1
  i=$((i + 1))
done
echo "$3" > "$r/front.hash"
echo "$slot" > "$r/front.slot"
echo "the front ($name, HAProxy pid $(systemctl show -p MainPID --value "$name")) hands requests to slot $slot" >&2
