# MissingLibraries $1 LD_LIBRARY_PATH, then files: per existing file, what ldd cannot find.
LD_LIBRARY_PATH="$1"
export LD_LIBRARY_PATH
shift
for f in "$@"; do
  [ -f "$f" ] || continue
  echo "@file $f"
  ldd "$f" 2>/dev/null | grep "not found"
done
true
