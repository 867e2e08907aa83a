# Account $1 user, $2 the provisioner's record of the users it made: the user's passwd entry (if any) and
# whether the record names it. Lines: PASSWD <tab> name:x:uid:gid:comment:home:shell; MADE.
getent passwd "$1" | sed 's/^/PASSWD\t/'
[ -f "$2" ] && grep -qxF -- "$1" "$2" && echo MADE
true
