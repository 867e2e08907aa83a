# $1 staged file, $2 destination: written under umask 077 into DEST.new (0600 from its first byte),
# then renamed over DEST.
set -e
umask 077
mkdir -p "$(dirname "$2")"
rm -f "$2.new"
cat "$1" > "$2.new"
chmod 600 "$2.new"
mv -f "$2.new" "$2"
