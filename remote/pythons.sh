# PythonInterpreters $1 probe source, then minor versions: each pythonX.Y found, probed.
probe="$1"
shift
for v; do
  p=$(command -v "python$v" 2>/dev/null) || continue
  "$p" -c "$probe" 2>/dev/null || printf 'BROKEN\t%s\t%s\n' "$v" "$p"
done
true
