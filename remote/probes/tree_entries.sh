# TreeEntries $1 directory, $2 "files" (everything but directories, at any depth) or "children"
# (every entry directly inside): relative names, NUL-separated and hex-encoded, so that no byte of a
# name (a newline, a quote) can split or change it on the way back.
[ -d "$1" ] || exit 0
if [ "$2" = children ]; then
  find "$1" -mindepth 1 -maxdepth 1 -printf '%P\0' 2>/dev/null | od -An -v -tx1
else
  find "$1" -mindepth 1 ! -type d -printf '%P\0' 2>/dev/null | od -An -v -tx1
fi
true
