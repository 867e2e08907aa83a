# $1 venv, $2 snapshot, $3 token, $4 the restore script, $5 the snapshot's sha256 (the controller's), $6 the
# venv's Python directory: run the script detached under the venv's lock;
# its exit status lands in VENV.restore-TOKEN.rc (written aside, then renamed), its output in .log.
# The files of jobs that finished in an earlier run (their .rc written) are removed first.
v="$1"
job="$v.restore-$3"
mkdir -p "$(dirname "$v")"
for f in "$v".restore-*.rc; do [ ! -e "$f" ] || rm -f "$f" "${f%.rc}.log"; done
# shellcheck disable=SC2016 # the inner script expands its own arguments
(setsid sh -c 'flock -w 900 "$1.lock" sh -c "$4" venv_restore.sh "$1" "$2" "$5" "$6"; echo $? > "$1.restore-$3.tmp";
  mv "$1.restore-$3.tmp" "$1.restore-$3.rc"' _ "$v" "$2" "$3" "$4" "$5" "$6" > "$job.log" 2>&1 < /dev/null &)
