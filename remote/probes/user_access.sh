# UserAccess $1 user, then paths: for each path, the directory on the way to it that the user cannot
# enter ("" where none: the user reaches it, or nothing is checked); a path not made yet is checked up
# to its nearest existing directory. Lines: ACCESS <tab> path <tab> blocked.
. ./as_user.sh
check_as "$1"
shift

for path; do
  blocked=""
  if [ -n "$uid" ]; then
    blocked=$(first_blocked "$path")
    # the path itself: entered (a directory) or read (a file) as the user
    if [ "$blocked" = "$path" ]; then
      if { [ -d "$path" ] && as_user test -x "$path"; } || { [ ! -d "$path" ] && as_user test -r "$path"; }; then
        blocked=""
      fi
    fi
  fi
  printf 'ACCESS\t%s\t%s\n' "$path" "$blocked"
done
true
