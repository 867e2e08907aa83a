# $1 venv, $2 token: wait for that restore job, show its output, exit with its status.
job="$1.restore-$2"
i=0
while [ ! -e "$job.rc" ]; do
  [ "$i" -lt 9000 ] || { echo "the venv restore did not finish in 900 s ($job.log)" >&2; exit 1; }
  sleep 0.1
  i=$((i + 1))
done
cat "$job.log" >&2
rc=$(cat "$job.rc")
rm -f "$job.rc" "$job.log"
exit "$rc"
