# $1 venv, $2 snapshot: unpack beside the venv, then swap. The snapshot is read from the persistent
# path once (it may be a slow network drive): copied to the venv's local disk while its sha256 is
# taken, checked against the sha256 recorded when it was written (the drive may be shared or flaky,
# and root installs from it), and only then unpacked from the local copy. A damaged or altered one is
# named, removed, and the venv is kept. Its suffix says how it is compressed (.tar, .tar.gz, .tar.zst).
v="$1"
snap="$2"
copy="$v.snapshot"
rm -rf "$v.new" "$v.old" "$copy"
mkdir -p "$v.new"
case "$snap" in
  *.tar.zst) unpack() { zstd -q -d -c "$copy" | tar -xf - -C "$v.new"; } ;;
  *.tar.gz) unpack() { gzip -d -c "$copy" | tar -xf - -C "$v.new"; } ;;
  *) unpack() { tar -xf "$copy" -C "$v.new"; } ;;
esac
if [ "$(tee "$copy" < "$snap" | sha256sum | cut -d" " -f1)" != "$(cat "$snap.sha256" 2>/dev/null)" ]; then
  rm -rf "$v.new" "$copy" "$snap" "$snap.sha256"
  echo "venv snapshot $snap does not match its recorded sha256 (damaged or altered); removed it." \
    "Run again to install from the wheelhouse." >&2
  exit 1
fi
if ! unpack || [ ! -x "$v.new/bin/python" ]; then
  rm -rf "$v.new" "$copy" "$snap" "$snap.sha256"
  echo "venv snapshot $snap could not be unpacked; removed it. Run again to install from the wheelhouse." >&2
  exit 1
fi
rm -f "$copy"
[ ! -e "$v" ] || mv -T "$v" "$v.old"
mv -T "$v.new" "$v"
rm -rf "$v.old"
