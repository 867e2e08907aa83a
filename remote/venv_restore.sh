# $1 venv, $2 snapshot: unpack beside the venv, then swap; a damaged snapshot is removed, the venv
# kept. The size saved beside it catches a snapshot cut at a member boundary, which tar accepts.
v="$1"
snap="$2"
rm -rf "$v.new" "$v.old"
mkdir -p "$v.new"
if [ "$(stat -c %s "$snap")" != "$(cat "$snap.size" 2>/dev/null)" ] || ! tar -xf "$snap" -C "$v.new" \
  || [ ! -x "$v.new/bin/python" ]; then
  rm -rf "$v.new" "$snap" "$snap.size"
  echo "venv snapshot $snap could not be unpacked; removed it. Run again to install from the wheelhouse." >&2
  exit 1
fi
[ ! -e "$v" ] || mv -T "$v" "$v.old"
mv -T "$v.new" "$v"
rm -rf "$v.old"
