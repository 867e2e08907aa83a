# $1 staged file (in a private mktemp -d directory of the login user), $2 destination, $3 mode: written
# under umask 077 into DEST.new (unreadable by others from its first byte), given its mode, then renamed
# over DEST. Every upload under sudo goes this way: never through a /tmp name another user can predict.
set -e
umask 022
mkdir -p "$(dirname "$2")" # folders made on the way are 0755: the server's user reads uploaded models
umask 077
rm -f "$2.new"
cat "$1" > "$2.new"
chmod "$3" "$2.new"
mv -f "$2.new" "$2"
