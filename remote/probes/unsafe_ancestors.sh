# UnsafeAncestors: for each path, the first directory on the way to it (itself included, where it exists)
# that another user than root may write or replace: owned by someone else, or writable by group or
# others (a sticky /tmp too: anyone may make a name there first). Lines: UNSAFE <tab> path <tab> part
# <tab> uid <tab> mode <tab> type; nothing for a path whose existing parts only root can change.
for path; do
  rest="${path#/}" dir=""
  while :; do
    info=$(stat -c '%u %a %F' "${dir:-/}" 2>/dev/null) || break # not made yet: the provisioner makes it
    read -r uid mode kind <<EOF
$info
EOF
    if [ "$uid" != 0 ] || { [ "$kind" != "symbolic link" ] && [ $((0$mode & 022)) -ne 0 ]; }; then
      printf 'UNSAFE\t%s\t%s\t%s\t%s\t%s\n' "$path" "${dir:-/}" "$uid" "$mode" "$kind"
      break
    fi
    [ -n "$rest" ] || break
    part="${rest%%/*}"
    case "$rest" in */*) rest="${rest#*/}" ;; *) rest="" ;; esac
    dir="$dir/$part"
  done
done
true
