# $1 venv, $2 snapshot, $3 its sha256 as the controller recorded it when the snapshot was written, $4 the
# directory the venv's interpreter links may point into (its base Python's): unpack beside the venv, then
# swap. The snapshot is read from the persistent path once (it may be a slow network drive): copied to the
# venv's local disk while its sha256 is taken, checked against $3 (never against anything kept beside the
# snapshot: whoever can write the drive could rewrite both), and only then unpacked from the local copy,
# without owners or set-id bits, in one pass that lists each member as it goes, inside a folder only root
# may enter (VENV.new, 0700) until it is checked: no device, fifo or set-id member, no link out of the
# venv but its interpreter's. A damaged, altered or unsafe one is named, removed, and the venv is kept.
# Its suffix says how it is compressed (.tar, .tar.gz, .tar.zst).
v="$1"
snap="$2"
copy="$v.snapshot"
rm -rf "$v.new" "$v.old" "$copy"
mkdir -p "$(dirname "$v")"
mkdir -m 700 "$v.new" || exit 1
tree="$v.new/venv"
case "$snap" in
  *.tar.zst) stream() { zstd -q -d -c "$copy"; } ;;
  *.tar.gz) stream() { gzip -d -c "$copy"; } ;;
  *) stream() { cat "$copy"; } ;;
esac
refuse() {
  rm -rf "$v.new" "$copy" "$snap" "$snap.sha256"
  echo "venv snapshot $snap $1; removed it. Run again to install from the wheelhouse." >&2
  exit 1
}
if [ -z "$3" ] || [ "$(tee "$copy" < "$snap" | sha256sum | cut -d" " -f1)" != "$3" ]; then
  refuse "does not match the sha256 the controller recorded when it was written (damaged or altered)"
fi
# Unpacked and listed at once (-vv: ls -l's type and mode letters of each member, as `tar -tv` gives them):
# b, c, p (devices, fifos) or an s/S (set-id) are refused. tar's status is kept aside (sh has no pipefail).
mkdir "$tree"
unsafe=$({ stream | tar --no-same-owner --no-same-permissions -xvvf - -C "$tree"; echo $? > "$v.new/rc"; } \
  | cut -c1-10 | grep -c '^[bcp]\|^...[sS]\|^......[sS]')
if [ "$unsafe" != 0 ]; then
  refuse "holds a device, fifo or set-id file, which no venv has"
fi
# bin/python is there: a file, or a link to the venv's base Python, which need not exist yet (a standalone
# CPython a reset host installs again while this runs in the background: its link dangles until then)
if [ "$(cat "$v.new/rc")" != 0 ] || { [ ! -L "$tree/bin/python" ] && [ ! -x "$tree/bin/python" ]; }; then
  refuse "could not be unpacked"
fi
# links: relative and without '..' (lib64 -> lib), or the interpreter's (bin/python*) into $4
if [ -n "$(find "$tree" -type l \( -lname '/*' -o -lname '*..*' \) ! -path "$tree/bin/python*" -print -quit)" ]; then
  refuse "holds a link that leaves the venv"
fi
for link in "$tree"/bin/python*; do
  [ -L "$link" ] || continue
  case "$(readlink "$link")" in
    /*) [ "$(dirname "$(readlink "$link")")" = "$4" ] || refuse "links $(basename "$link") out of the venv, not to its Python in $4" ;;
  esac
done
rm -f "$copy"
[ ! -e "$v" ] || mv -T "$v" "$v.old"
mv -T "$tree" "$v"
rm -rf "$v.old" "$v.new"
