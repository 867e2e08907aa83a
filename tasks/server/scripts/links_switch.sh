# $1 link, $2 target, $3 link, $4 target ...: each link made to point at its target: a new link,
# renamed over the old one, so a reader sees the old target or the new, never none. Something that
# is not a link in a link's place is refused (the adopt step moves an old directory aside first).
# The target a link leaves is touched: pruning keeps the newest, and that is the one to roll back to.
set -e
while [ "$#" -ge 2 ]; do
  if [ -e "$1" ] && [ ! -L "$1" ]; then
    echo "$1 is not a link (a directory from an older install?): run deploy/provision.py, it moves it aside" >&2
    exit 1
  fi
  [ -e "$2" ] || { echo "$2 is missing: cannot switch $1 to it" >&2; exit 1; }
  mkdir -p "$(dirname "$1")"
  old=$(readlink "$1" || true)
  rm -rf "$1.new"
  ln -s "$2" "$1.new"
  mv -T "$1.new" "$1"
  [ -z "$old" ] || [ "$old" = "$2" ] || touch -c "$old"
  shift 2
done
