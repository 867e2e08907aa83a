# $1 path, $2 where it goes: a real directory where a link now belongs (made by an older install) is
# moved there and a link to it put in its place, so every path into it (a venv's scripts name
# their own) still resolves, through the link.
set -e
[ -d "$1" ] && [ ! -L "$1" ] || exit 0
mkdir -p "$(dirname "$2")"
rm -rf "$2"
mv -T "$1" "$2"
ln -s "$2" "$1"
echo "moved $1 to $2 and linked it" >&2
