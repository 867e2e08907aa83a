# $1 venv, $2 token, $3 snapshot: wait for that restore job, show its output, exit with its status.
# While it runs, every 2 s a line says how far it is: the snapshot read from the persistent path (of
# its size, with the rate and time left: the slow part on a network drive), then the venv unpacked.
job="$1.restore-$2"
total=$(( $(stat -c %s "$3" 2>/dev/null || echo 0) / 1048576 ))
i=0
while [ ! -e "$job.rc" ]; do
  [ "$i" -lt 9000 ] || { echo "the venv restore did not finish in 900 s ($job.log)" >&2; exit 1; }
  sleep 0.1
  i=$((i + 1))
  if [ $((i % 20)) -ne 0 ] || [ -e "$job.rc" ]; then continue; fi
  read_mib=$(( $(stat -c %s "$1.snapshot" 2>/dev/null || echo 0) / 1048576 ))
  unpacked=$(( $(du -sk "$1.new" 2>/dev/null | cut -f1 || echo 0) / 1024 ))
  if [ "$unpacked" -eq 0 ] && [ "$read_mib" -lt "$total" ]; then
    s=$(( $(date +%s) - $(stat -c %Y "$1.new" 2>/dev/null || date +%s) ))
    [ "$s" -gt 0 ] || s=1
    left=""
    [ "$read_mib" -le 0 ] || left=", $(( (total - read_mib) * s / read_mib )) s left"
    echo "venv snapshot: ${read_mib} MiB of ${total} MiB read from the persistent path, $((read_mib / s)) MiB/s${left}" >&2
  else
    echo "venv snapshot: ${unpacked} MiB unpacked" >&2
  fi
done
cat "$job.log" >&2
rc=$(cat "$job.rc")
rm -f "$job.rc" "$job.log"
exit "$rc"
