# $1 venv, $2 token, $3 snapshot: wait for that restore job, show its output, exit with its status.
# While it runs, every 2 s a line says how much of the venv is unpacked (of the tar's size).
job="$1.restore-$2"
total=$(( $(stat -c %s "$3" 2>/dev/null || echo 0) / 1048576 ))
i=0
while [ ! -e "$job.rc" ]; do
  [ "$i" -lt 9000 ] || { echo "the venv restore did not finish in 900 s ($job.log)" >&2; exit 1; }
  sleep 0.1
  i=$((i + 1))
  if [ $((i % 20)) -eq 0 ] && [ ! -e "$job.rc" ]; then
    mib=$(( $(du -sk "$1.new" 2>/dev/null | cut -f1 || echo 0) / 1024 ))
    s=$((i / 10))
    left=""
    [ "$mib" -le 0 ] || [ "$mib" -ge "$total" ] || left=", $(( (total - mib) * s / mib )) s left"
    echo "venv snapshot: ${mib} MiB of ${total} MiB unpacked, $((mib / s)) MiB/s${left}" >&2
  fi
done
cat "$job.log" >&2
rc=$(cat "$job.rc")
rm -f "$job.rc" "$job.log"
exit "$rc"
