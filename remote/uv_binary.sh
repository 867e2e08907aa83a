# Shared: uv's binary from its pinned wheel, inlined where a script says `. ./uv_binary.sh`.

# uv_from_wheel WHEEL TOOLS VERSION SHA256...: TOOLS/uv-VERSION/uv unpacked from WHEEL (once) when the
# wheel's sha256 is one of those given; 0 where that binary is then in place.
uv_from_wheel() {
  whl="$1" tools="$2" version="$3"
  shift 3
  uv="$tools/uv-$version/uv"
  [ -x "$uv" ] && return 0
  [ -f "$whl" ] || return 1
  sum=$(sha256sum < "$whl" | cut -d" " -f1)
  ok=""
  for allowed in "$@"; do [ "$sum" != "$allowed" ] || ok=1; done
  if [ -z "$ok" ]; then
    echo "$whl does not match uv $version's sha256 (damaged or altered): not used" >&2
    return 1
  fi
  mkdir -p "$tools/uv-$version" && python3 -c '
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
' "$whl" "uv-$version.data/scripts/uv" "$uv.part" && chmod 755 "$uv.part" && mv "$uv.part" "$uv"
}
