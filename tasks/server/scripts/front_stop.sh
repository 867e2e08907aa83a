# The front stopped: $1 run dir, $2 HAProxy's program, $3 the front's unit: stopped and disabled where
# systemd runs it; a detached front (lib.sh's stop_front) stopped either way.
. ./lib.sh
if [ -d /run/systemd/system ] && [ -f "$3" ]; then
  systemctl disable --now --quiet "$(basename "$3")" || true
fi
stop_front "$1" "$2"
