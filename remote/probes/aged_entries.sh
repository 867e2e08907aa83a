# AgedEntries $@ directories: for each, a line "DIR HEX(dir)", then every entry directly inside it
# as "MTIME KIND NAME" (KIND as find's %y: d directory, f file, l link), NUL-separated and
# hex-encoded (od), so that no byte of a name can split or change it.
for d; do
  printf 'DIR %s\n' "$(printf '%s' "$d" | od -An -v -tx1 | tr -d ' \n')"
  [ -d "$d" ] || continue
  find "$d" -mindepth 1 -maxdepth 1 -printf '%T@ %y %P\0' 2>/dev/null | od -An -v -tx1
done
true
