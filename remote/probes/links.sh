# Links $@ paths: per path one line "KIND PATH TARGET", path and target hex-encoded (any byte of a
# name arrives intact); KIND is link, dir (a real directory), other or absent; TARGET only for a link.
hex() { printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n'; }
for p; do
  if [ -L "$p" ]; then
    echo "link $(hex "$p") $(hex "$(readlink -- "$p")")"
  elif [ -d "$p" ]; then
    echo "dir $(hex "$p")"
  elif [ -e "$p" ]; then
    echo "other $(hex "$p")"
  else
    echo "absent $(hex "$p")"
  fi
done
true
