# $1 python, $2 venv: a venv made at its own path (a venv is not relocatable); a replaced one waits
# aside and comes back if the new one cannot be made.
v="$2"
rm -rf "$v.old"
[ ! -e "$v" ] || mv -T "$v" "$v.old"
if "$1" -m venv "$v"; then
  rm -rf "$v.old"
else
  rm -rf "$v"
  [ ! -e "$v.old" ] || mv -T "$v.old" "$v"
  exit 1
fi
