# A build upgrade without a restart's gap (tasks/server/handover.py). $1 start|finish|abandon, $2 run dir,
# $3 the server's launcher, $4 config hash, $5 the user to run as, $6 the log watcher's script and $7-$11
# its arguments ("" = no watcher); the rest: tritonserver's arguments.
# start: the new server, detached as that user, beside the running one (both on the same ports, each with
#   --reuse-http-port and --reuse-grpc-port), its pid in tritonserver.pid.new; the running one untouched.
# finish (the new one proven): the old one stopped gracefully (TERM: it finishes what it holds, new
#   connections already go to the new one), its stubs and log watcher after it; the new one recorded as
#   the server, with the config hash, and watched.
# abandon (the new one failed): the new one stopped; the old one, never stopped, stays the server.
. ./lib.sh
set -e
mode="$1"
run="$2"
launcher="$3"
hash="$4"
user="$5"
watch="$6"
rotate="$7"
log="$8"
cap="$9"
keep="${10}"
every="${11}"
shift 11
new=$(cat "$run/tritonserver.pid.new" 2>/dev/null) || new=""
case "$mode" in
start)
  if is_tritonserver "$new"; then stop_pid "$new" && stop_group "$new"; fi  # a handover cut short before
  echo "--- start (beside Triton pid $(cat "$run/tritonserver.pid"), on the same ports) $(date -u +%FT%TZ)" >> "$run/tritonserver.log"
  start_detached "$run" "$user" "$launcher" "$@"
  echo "$started" > "$run/tritonserver.pid.new"
  echo "started Triton pid $started beside Triton pid $(cat "$run/tritonserver.pid")" >&2
  ;;
finish)
  is_tritonserver "$new" || { echo "the new Triton (pid ${new:-none}) is gone" >&2; exit 1; }
  old=$(cat "$run/tritonserver.pid")
  stop_pid "$old" && stop_group "$old"
  stop_watcher "$run"
  mv "$run/tritonserver.pid.new" "$run/tritonserver.pid"
  echo "$hash" > "$run/config.hash"
  start_watcher "$run" "$new" "$watch" "$rotate" "$log" "$cap" "$keep" "$every"
  echo "Triton pid $new serves; pid $old stopped after finishing what it held" >&2
  ;;
abandon)
  if [ -n "$new" ]; then stop_pid "$new" && stop_group "$new"; fi
  rm -f "$run/tritonserver.pid.new"
  ;;
*)
  echo "server_handover.sh: no mode $mode" >&2
  exit 2
  ;;
esac
