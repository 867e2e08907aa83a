# A build upgrade without a restart's gap where systemd runs the server (tasks/server/handover.py).
# $1 start|finish|abandon, $2 run dir, $3 unit path, $4 the unit's new text (start) or config hash (finish).
# start: the unit's new text installed beside a copy of the old (daemon-reload: the running server is kept),
#   the new server started by `systemctl reload` inside the unit (its user, sandbox and journal) on the
#   metrics port in $5 (behind the front, the other slot's: metrics $5, http $6, grpc $7), written to
#   RUN/handover.env for the reload's length; its pid in tritonserver.pid.new:
#   the one the reload's shell names in the journal, where it is a process of the unit's (or already gone).
# finish (the new one proven and, by systemd_main_pid.py, the unit's main process): the old one stopped
#   gracefully (TERM: it finishes what it holds, new connections already go to the new one), its stubs
#   after it; the new one recorded as the server, with the config hash.
# abandon (the new one failed): the new one stopped, the old unit text back; the old server never stopped.
. ./lib.sh
set -e
mode="$1"
run="$2"
unit="$3"
unit_name=$(basename "$unit")
new=$(cat "$run/tritonserver.pid.new" 2>/dev/null) || new=""
main_pid() { systemctl show -p MainPID --value "$unit_name"; }
case "$mode" in
start)
  text="$4"
  port="$5"
  if is_tritonserver "$new" && [ "$new" != "$(main_pid)" ]; then stop_pid "$new" && stop_group "$new"; fi
  old=$(main_pid)
  is_tritonserver "$old" || { echo "$unit_name runs no Triton (main pid ${old:-none}): nothing to hand over from" >&2; exit 1; }
  [ -f "$unit.before" ] || cp -p "$unit" "$unit.before"
  printf "%s" "$text" > "$unit.new"
  mv "$unit.new" "$unit"
  journalctl -u "$unit_name" -n 1 -o cat --no-pager --show-cursor 2>/dev/null \
    | sed -n 's/^-- cursor: //p' > "$run/journal.cursor" || true
  systemctl daemon-reload
  systemctl enable --quiet "$unit_name"
  (umask 077 && {
    echo "TRITON_HANDOVER_METRICS_PORT=$port"
    [ -z "${6:-}" ] || echo "TRITON_HANDOVER_HTTP_PORT=$6"
    [ -z "${7:-}" ] || echo "TRITON_HANDOVER_GRPC_PORT=$7"
  } > "$run/handover.env")
  systemctl reload "$unit_name" || { rm -f "$run/handover.env"; exit 1; }
  rm -f "$run/handover.env"  # a restart of the unit must not read it
  # the reload's shell says in the journal which pid it started (the journal takes it in its own time)
  cursor=$(cat "$run/journal.cursor" 2>/dev/null) || cursor=""
  said="^--- start (beside Triton pid $old, on [a-z ]*): pid \\([0-9][0-9]*\\)\$"
  new=""
  i=0
  while [ -z "$new" ] && [ "$i" -lt 100 ]; do
    new=$(journalctl -u "$unit_name" ${cursor:+"--after-cursor=$cursor"} -o cat --no-pager 2>/dev/null \
      | sed -n "s/$said/\\1/p" | tail -n 1)
    [ -n "$new" ] || { sleep 0.1; i=$((i + 1)); }
  done
  [ -n "$new" ] || { echo "systemctl reload $unit_name started no new Triton (journalctl -u $unit_name)" >&2; exit 1; }
  # the unit's processes (the models' code too) write to the journal: the pid is taken only where it is a
  # process of the unit's control group (cgroup v2 "0::PATH", or v1's "N:name=systemd:PATH") that is not its
  # main process nor a python backend stub. One already gone is kept: the wait says why it exited. Its
  # cgroup is read once: a build that fails at its start may exit between two reads (then nothing is read).
  cgroup=$(systemctl show -p ControlGroup --value "$unit_name")
  groups=$(sed 's/^[0-9]*:name=systemd:/0::/' "/proc/$new/cgroup" 2>/dev/null) || groups=""
  if [ "$new" = "$old" ] || { [ -n "$groups" ] && {
    grep -q triton_python_backend_stub "/proc/$new/cmdline" 2>/dev/null ||
      ! printf '%s\n' "$groups" | grep -qxF "0::$cgroup"
  }; }; then
    echo "pid $new, which the journal names as the new server, is not one in $unit_name: stopped here" >&2
    exit 1
  fi
  echo "$new" > "$run/tritonserver.pid.new"
  echo "started Triton pid $new in $unit_name beside its main process, Triton pid $old" >&2
  ;;
finish)
  is_tritonserver "$new" || { echo "the new Triton (pid ${new:-none}) is gone" >&2; exit 1; }
  [ "$(main_pid)" = "$new" ] || { echo "$unit_name's main process is not the new Triton pid $new" >&2; exit 1; }
  old=$(cat "$run/tritonserver.pid")
  [ "$old" = "$new" ] || { stop_pid "$old" && stop_group "$old"; }
  mv "$run/tritonserver.pid.new" "$run/tritonserver.pid"
  echo "$4" > "$run/config.hash"
  rm -f "$unit.before"
  echo "Triton pid $new serves as $unit_name's main process; pid $old stopped after finishing what it held" >&2
  ;;
abandon)
  rm -f "$run/handover.env"
  if is_tritonserver "$new" && [ "$new" != "$(main_pid)" ]; then stop_pid "$new" && stop_group "$new"; fi
  rm -f "$run/tritonserver.pid.new"
  if [ -f "$unit.before" ]; then
    mv "$unit.before" "$unit"
    systemctl daemon-reload
  fi
  ;;
*)
  echo "server_handover_systemd.sh: no mode $mode" >&2
  exit 2
  ;;
esac
