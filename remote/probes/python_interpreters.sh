# PythonInterpreters $1 probe source, $2 the server's user, then minor versions. Every pythonX.Y in
# PATH's directories, then /usr/local/bin and /usr/bin, probed once per interpreter (links and shims
# resolved by the probe), in that order; each line ends with what keeps the server's user from running
# it ("" where nothing does), checked as that user: the interpreter and its standard library by running
# it, its libpython by reading it. A user not made yet is checked as nobody (no group of the host's, as
# the system user the provisioner makes). Not root, or the user is root: nothing is checked ("").
probe="$1"
. ./as_user.sh
check_as "$2"
shift 2

# What keeps the user from the interpreter $1 (its real path) or its libpython $2: "" where nothing.
blocked() {
  [ -n "$uid" ] || return 0
  if ! as_user "$1" -I -B -c 'import encodings, venv' >/dev/null 2>&1; then
    first_blocked "$1"
  elif [ -n "$2" ] && ! as_user test -r "$2"; then
    first_blocked "$2"
  fi
}

seen="
"
for v; do
  old_ifs=$IFS
  IFS=:
  set -f
  for dir in $PATH /usr/local/bin /usr/bin; do
    IFS=$old_ifs
    p="$dir/python$v"
    if [ ! -f "$p" ] || [ ! -x "$p" ]; then continue; fi
    line=$("$p" -B -c "$probe" 2>/dev/null) || { printf 'BROKEN\t%s\t%s\n' "$v" "$p"; continue; }
    real=$(printf '%s\n' "$line" | cut -f7)
    case "$seen" in *"
$real
"*) continue ;; esac
    seen="$seen$real
"
    printf '%s\t%s\n' "$line" "$(blocked "$real" "$(printf '%s\n' "$line" | cut -f5)")"
  done
  IFS=$old_ifs
  set +f
done
true
