# $1 venv, $2 token, $3 snapshot[, $4 ticks of 0.1 s between lines, 20]: wait for that restore job, show
# its output, exit with its status. While it runs, a line every 2 s says how far it is: the snapshot read
# from the persistent path (of its size, with the rate, in KiB/s below 1 MiB/s, and the time left: the
# slow part on a network drive), then the venv unpacked.
job="$1.restore-$2"
every="${4:-20}"
total=$(stat -c %s "$3" 2>/dev/null || echo 0)
i=0
while [ ! -e "$job.rc" ]; do
  [ "$i" -lt 9000 ] || { echo "the venv restore did not finish in 900 s ($job.log)" >&2; exit 1; }
  sleep 0.1
  i=$((i + 1))
  if [ $((i % every)) -ne 0 ] || [ -e "$job.rc" ]; then continue; fi
  done_bytes=$(stat -c %s "$1.snapshot" 2>/dev/null || echo 0)
  kib=$(du -sk "$1.new" 2>/dev/null | cut -f1)  # empty where the unpacked venv was just swapped in
  unpacked=$(( ${kib:-0} / 1024 ))
  if [ "$unpacked" -eq 0 ] && [ "$done_bytes" -lt "$total" ]; then
    s=$(( $(date +%s) - $(stat -c %Y "$1.new" 2>/dev/null || date +%s) ))
    [ "$s" -gt 0 ] || s=1
    rate=$((done_bytes / s))
    if [ "$rate" -ge 1048576 ]; then rate="$((rate / 1048576)) MiB/s"; else rate="$((rate / 1024)) KiB/s"; fi
    left=""
    [ "$done_bytes" -le 0 ] || left=", $(( (total - done_bytes) * s / done_bytes )) s left"
    echo "venv snapshot: $((done_bytes / 1048576)) MiB of $((total / 1048576)) MiB read from the persistent path, ${rate}${left}" >&2
  else
    echo "venv snapshot: ${unpacked} MiB unpacked" >&2
  fi
done
cat "$job.log" >&2
rc=$(cat "$job.rc")
rm -f "$job.rc" "$job.log"
exit "$rc"
