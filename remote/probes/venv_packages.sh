# VenvPackages $1 venv: its Python (pyvenv.cfg) and packages (each *.dist-info/METADATA's Name and Version),
# read as files: nothing of the venv is run (a wheel's .pth file runs its code in every interpreter that
# starts there, and this runs as root). Prints nothing where there is no venv; BROKEN where its interpreter
# leads nowhere (the base Python removed) or pyvenv.cfg names no version.
[ -f "$1/pyvenv.cfg" ] || [ -x "$1/bin/python" ] || exit 0
[ -x "$1/bin/python" ] || { echo BROKEN; exit 0; }
version=$(sed -n 's/^version\(_info\)\{0,1\} *= *\([0-9][0-9.]*\).*$/\2/p' "$1/pyvenv.cfg" 2>/dev/null | head -n 1)
[ -n "$version" ] || { echo BROKEN; exit 0; }
echo "PY $version"
for meta in "$1"/lib/python3*/site-packages/*.dist-info/METADATA; do
  if [ ! -f "$meta" ] || [ -L "$meta" ]; then continue; fi
  # the header ends at its first blank line; a package names itself once (CRLF lines too: pip's own)
  awk '{ sub("\r$", "") } /^$/ { exit } /^Name:/ && !n { n = tolower($2); gsub("_", "-", n) } /^Version:/ && !v { v = $2 }
    END { if (n != "" && v != "") print "PKG", n, v }' "$meta"
done
