# Shared: checks made as another user, inlined where a script says `. ./as_user.sh`.

# check_as USER: later checks are made as USER where it exists; else as nobody, in no group of the
# host's (as the system user the provisioner makes will be). uid stays "" (nothing is checked) where
# USER is root or this shell cannot switch users (not root, no setpriv).
check_as() {
  uid="" gid="" groups=--clear-groups
  if [ "$1" != root ] && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
    if id -u "$1" >/dev/null 2>&1; then
      uid=$(id -u "$1") gid=$(id -g "$1") groups=--init-groups
    else
      uid=65534 gid=65534
    fi
  fi
}

as_user() {
  setpriv --reuid="$uid" --regid="$gid" "$groups" -- "$@"
}

# first_blocked PATH: the first directory on the way to PATH that the user cannot enter; PATH itself
# where none is. A part that does not exist ends the walk (the provisioner makes it, mode 755).
first_blocked() {
  rest="${1#/}" dir=""
  while [ -n "$rest" ]; do
    part="${rest%%/*}"
    case "$rest" in */*) rest="${rest#*/}" ;; *) rest="" ;; esac
    dir="$dir/$part"
    [ -e "$dir" ] || return 0
    if [ -n "$rest" ] && ! as_user test -x "$dir"; then
      printf '%s' "$dir"
      return
    fi
  done
  printf '%s' "$1"
}
