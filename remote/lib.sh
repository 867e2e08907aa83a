# Shared shell functions, inlined where a script says `. ./lib.sh`.

# is_tritonserver PID: PID is a live (not zombie) process whose command line names tritonserver.
is_tritonserver() {
  [ -n "$1" ] && [ "$1" != 0 ] || return 1
  { tr "\0" " " < "/proc/$1/cmdline"; } 2>/dev/null | grep -q tritonserver || return 1
  ! grep -q "^State:.*Z" "/proc/$1/status" 2>/dev/null
}

# stop_pid PID: TERM, then KILL after 30 s (Triton's exit timeout); only while PID is a tritonserver.
stop_pid() {
  is_tritonserver "$1" || return 0
  echo "stopping Triton pid $1" >&2
  kill -TERM "$1" 2>/dev/null || true
  i=0
  while is_tritonserver "$1" && [ "$i" -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
  kill -KILL "$1" 2>/dev/null || true
}

# stop_front RUN PROGRAM: the front recorded in RUN/front.pid (tasks/server/front_plan.py), only while that pid runs
# PROGRAM (HAProxy): TERM, its exit waited for (10 s, then KILL: its ports are then free for what starts
# next); its pid forgotten either way.
stop_front() {
  sf=$(cat "$1/front.pid" 2>/dev/null) || sf=""
  rm -f "$1/front.pid"
  case "$sf" in '' | *[!0-9]*) return 0 ;; esac
  [ "$(readlink "/proc/$sf/exe" 2>/dev/null)" = "$2" ] || return 0
  echo "stopping the front (HAProxy pid $sf)" >&2
  kill -TERM "$sf" 2>/dev/null || true
  i=0
  while [ -d "/proc/$sf" ] && [ "$i" -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
  kill -KILL "$sf" 2>/dev/null || true
}

# front_files RUN USER CONFIG_A CONFIG_B: what a start of the front needs, detached or as a unit: its two
# configurations written (root's, readable), the folder of its runtime socket made the server user's (0700),
# and an old socket there removed (a link there is removed, never followed): the new one's is waited for.
front_files() {
  printf '%s' "$3" > "$1/front-a.cfg"
  printf '%s' "$4" > "$1/front-b.cfg"
  chmod 644 "$1/front-a.cfg" "$1/front-b.cfg"
  if [ "$2" = root ]; then
    install -d -m 700 "$1/front"
  else
    install -d -o "$2" -g "$2" -m 700 "$1/front"
  fi
  rm -f "$1/front/admin.sock"
}

# group_left PGID: the live processes of that process group whose command line names Triton (the
# server or its python backend stubs), space-separated; read from /proc (no pgrep needed).
group_left() {
  g="$1"
  for d in /proc/[0-9]*; do
    s=$(cat "$d/stat" 2>/dev/null) || continue
    # shellcheck disable=SC2086 # split the fields after the command name: state ppid pgrp ...
    set -- ${s##*) }
    if [ "$3" != "$g" ] || [ "$1" = Z ]; then continue; fi
    { tr "\0" " " < "$d/cmdline"; } 2>/dev/null | grep -q -e tritonserver -e triton_python_backend_stub && printf '%s ' "${d#/proc/}"
  done
}

# stop_group PGID: what is left of a server's process group once the server is gone (its python
# backend stubs outlive a server that exited or was killed, and write on into its log): killed,
# waiting up to 5 s until they are gone (the server they served is gone: nothing to shut down
# gracefully). A detached server leads its own group (setsid), so PGID is its pid.
stop_group() {
  [ -n "$1" ] && [ "$1" != 0 ] || return 0
  left=$(group_left "$1")
  [ -n "$left" ] || return 0
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL $left 2>/dev/null || true
  i=0
  while [ -n "$(group_left "$1")" ] && [ "$i" -lt 25 ]; do sleep 0.2; i=$((i + 1)); done
}

# stop_watcher RUN: the log watcher a detached start recorded in RUN/log-watch.pid (its own process
# group: the loop and its sleep), stopped with the server rather than at its next check; only while
# that pid is still the watcher's loop (its command line says so): its group once it leads one.
stop_watcher() {
  w=$(cat "$1/log-watch.pid" 2>/dev/null) || return 0
  rm -f "$1/log-watch.pid"
  case "$w" in '' | *[!0-9]*) return 0 ;; esac
  { tr "\0" " " < "/proc/$w/cmdline"; } 2>/dev/null | grep -q "while kill -0" || return 0
  # just started, it may not lead its group yet (setsid between fork and exec): wait for that (1 s at
  # most), else its loop and sleep would outlive this stop; still alone by then, it is ended by itself
  i=0
  while s=$(cat "/proc/$w/stat" 2>/dev/null); do
    # shellcheck disable=SC2086 # split the fields after the command name: state ppid pgrp ...
    set -- ${s##*) }
    if [ "$3" = "$w" ]; then
      kill -TERM -"$w" 2>/dev/null || true
      return 0
    fi
    i=$((i + 1))
    if [ "$i" -gt 50 ]; then
      kill -TERM "$w" 2>/dev/null || true
      return 0
    fi
    sleep 0.02
  done
}

# start_detached RUN USER COMMAND...: the server's launcher run detached (a session of its own) as USER,
# its privileges dropped for good (no new privileges, no capabilities), its output appended to
# RUN/tritonserver.log; its pid in $started.
start_detached() {
  sd_run="$1"
  sd_user="$2"
  shift 2
  if [ "$sd_user" = root ]; then
    setsid "$@" >> "$sd_run/tritonserver.log" 2>&1 < /dev/null &
  else
    setsid setpriv --reuid="$sd_user" --regid="$sd_user" --init-groups --no-new-privs --inh-caps=-all \
      "$@" >> "$sd_run/tritonserver.log" 2>&1 < /dev/null &
  fi
  # shellcheck disable=SC2034 # read by the script that sources this file
  started=$!
}

# start_watcher RUN PID WATCH ROTATE LOG CAP KEEP EVERY: the log watcher beside server PID, as root (it
# ends when the server does), its pid in RUN/log-watch.pid; none where WATCH is "".
start_watcher() {
  [ -n "$3" ] || return 0
  setsid sh -c "$3" "$2" "$4" "$5" "$6" "$7" "$8" < /dev/null > /dev/null 2>&1 &
  echo "$!" > "$1/log-watch.pid"
}

# ldconfig_p: the loader cache listing (ldconfig lives in /sbin, which a user's PATH may lack).
ldconfig_p() {
  /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null || true
}
