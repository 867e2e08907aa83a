# VenvPackages $1 venv, $2 probe source: its Python and packages, BROKEN where it cannot run.
[ -x "$1/bin/python" ] || exit 0
"$1/bin/python" -c "$2" 2>/dev/null || echo BROKEN
