# $1 venv, $2 snapshot: unpack beside the venv, then swap. The snapshot must match the sha256 recorded
# when it was written (the persistent path may be a shared or flaky drive, and root installs from
# it); a damaged or altered one is named, removed, and the venv is kept.
v="$1"
snap="$2"
rm -rf "$v.new" "$v.old"
mkdir -p "$v.new"
if [ "$(sha256sum < "$snap" | cut -d" " -f1)" != "$(cat "$snap.sha256" 2>/dev/null)" ]; then
  rm -rf "$v.new" "$snap" "$snap.sha256"
  echo "venv snapshot $snap does not match its recorded sha256 (damaged or altered); removed it." \
    "Run again to install from the wheelhouse." >&2
  exit 1
fi
if ! tar -xf "$snap" -C "$v.new" || [ ! -x "$v.new/bin/python" ]; then
  rm -rf "$v.new" "$snap" "$snap.sha256"
  echo "venv snapshot $snap could not be unpacked; removed it. Run again to install from the wheelhouse." >&2
  exit 1
fi
[ ! -e "$v" ] || mv -T "$v" "$v.old"
mv -T "$v.new" "$v"
rm -rf "$v.old"
