# Shared shell functions, inlined where a script says `. ./lib.sh`.

# is_tritonserver PID: PID is a live (not zombie) process whose command line names tritonserver.
is_tritonserver() {
  [ -n "$1" ] && [ "$1" != 0 ] || return 1
  tr "\0" " " < "/proc/$1/cmdline" 2>/dev/null | grep -q tritonserver || return 1
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

# ldconfig_p: the loader cache listing (ldconfig lives in /sbin, which a user's PATH may lack).
ldconfig_p() {
  /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null || true
}
