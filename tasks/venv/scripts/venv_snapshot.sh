# $1 venv, $2 snapshot folder, $3 snapshot, $4 its file name, $5 compression (none, gzip, zstd), $6 where
# its sha256 goes (root's local disk; the controller keeps it from there): a tar of the venv (written
# aside, then renamed); the other snapshots in the folder are removed. A tar that fails part-way fails
# the step (its status is kept aside: sh has no pipefail), never leaves a short snapshot.
mkdir -p "$2" || exit 1
part="$3.part"
case "$5" in
  zstd) pack() { zstd -q -T0 -3 -c; } ;;
  gzip) pack() { gzip -1; } ;;
  *) pack() { cat; } ;;
esac
# The sha256 is taken of the bytes as they are written (tee), never by reading the .part back from the
# drive: whoever can write the drive could swap the file in between and have their tar's digest recorded.
rm -f "$part" "$6" "$6.part"
if ! { tar -cf - -C "$1" .; echo $? > "$3.tar-rc"; } | pack | tee "$part" | sha256sum | cut -d" " -f1 > "$6.part" \
  || [ "$(cat "$3.tar-rc")" != 0 ] || [ ! -s "$part" ]; then
  rm -f "$part" "$3.tar-rc" "$6.part"
  echo "venv snapshot $3 could not be written" >&2
  exit 1
fi
rm -f "$3.tar-rc"
mv "$6.part" "$6" && mv "$part" "$3" && find "$2" -maxdepth 1 -name "*.tar*" ! -name "$4" -delete
