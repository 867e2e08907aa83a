# ServerState $1 run dir, $2 http host, $3 http port, $4 model repository, $5 unit file.
# On a systemd host the unit's MainPID is the server (systemd may have restarted it since the pid
# file was written); the pid file's process, if another live one, is then stale.
. ./lib.sh
r="$1"
unit="$5"
# triton_home, the run dir's parent, as the kernel names an executable under it (its links resolved)
home=$(cd "$r/.." 2>/dev/null && pwd -P) || home=$(dirname "$r")
my_ns=$(readlink "/proc/$$/ns/pid" 2>/dev/null)
# ours PID: a server of this install: in this PID namespace (not a container's: their processes are in this
# machine's /proc too), run from an executable under triton_home (not another install's with the same models)
ours() {
  [ -n "$my_ns" ] && [ "$(readlink "/proc/$1/ns/pid" 2>/dev/null)" = "$my_ns" ] || return 1
  case "$(readlink "/proc/$1/exe" 2>/dev/null)" in "$home"/*) return 0 ;; esac
  return 1
}
pid=$(cat "$r/tritonserver.pid" 2>/dev/null)
upid=""
if [ -d /run/systemd/system ] && [ -f "$unit" ]; then
  echo "UNITSHA=$(sha256sum < "$unit" | cut -d" " -f1)"
  [ "$(systemctl is-enabled tritonserver.service 2>/dev/null)" = enabled ] && echo UNIT_ENABLED
  systemctl is-active --quiet tritonserver.service && echo UNIT_ACTIVE
  upid=$(systemctl show -p MainPID --value tritonserver.service 2>/dev/null)
fi
serving=""
h=""
if is_tritonserver "$upid"; then
  serving=$upid
  echo "PID=$upid"
  is_tritonserver "$pid" && [ "$pid" != "$upid" ] && echo "STALE=$pid"
elif is_tritonserver "$pid"; then
  serving=$pid
  echo "PID=$pid"
else
  upid=""
  pid=""
fi
# how the running server was started: on ports it can share with a second server, its metrics port
if [ -n "$serving" ]; then
  c=" $(tr "\0" " " < "/proc/$serving/cmdline" 2>/dev/null) "
  # (one pattern each: as one, the two would have to match the space between them twice)
  case "$c" in *" --reuse-http-port true "*) case "$c" in *" --reuse-grpc-port true "*) echo REUSE ;; esac ;; esac
  m=$(printf '%s\n' "$c" | sed -n 's/.* --metrics-port \([0-9][0-9]*\) .*/\1/p')
  [ -z "$m" ] || echo "METRICS=$m"
  h=$(printf '%s\n' "$c" | sed -n 's/.* --http-port \([0-9][0-9]*\) .*/\1/p')
  [ -z "$h" ] || echo "HTTP_PORT=$h"
  # who it runs as (its effective uid, by name): a second server must be that user to share its ports
  u=$(sed -n 's/^Uid:[[:space:]]*[0-9]*[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$serving/status" 2>/dev/null)
  [ -z "$u" ] || echo "USER=$(id -nu "$u" 2>/dev/null || echo "$u")"
fi
[ -f "$r/config.hash" ] && echo "HASH=$(cat "$r/config.hash")"
[ -f "$r/models.loaded" ] && echo LOADED && sed 's/^/LOADED=/' "$r/models.loaded"
# ready: asked on the server's own port where it is not the one clients use (behind the front: its slot's)
at="http://$2:$3/v2/health/ready"
[ -n "$h" ] && [ "$h" != "$3" ] && at="http://127.0.0.1:$h/v2/health/ready"
python3 -c "import urllib.request as u,sys; u.urlopen(sys.argv[1], timeout=2); print('READY')" "$at" 2>/dev/null
for p in /proc/[0-9]*; do
  c=$(tr "\0" " " < "$p/cmdline" 2>/dev/null) || continue
  case "$c" in
    *tritonserver*"--model-repository $4 "*)
      ours "${p#/proc/}" || continue
      case " $pid $upid " in *" ${p#/proc/} "*) ;; *) echo "STALE=${p#/proc/}" ;; esac ;;
  esac
done
true
