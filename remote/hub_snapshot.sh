# HubSnapshot $1 python (a venv's), $2 HF_HOME, $3 probe source, $4 repo, $5 revision: the cached
# snapshot, offline.
[ -x "$1" ] || exit 0
HF_HOME="$2" HF_HUB_OFFLINE=1 "$1" -c "$3" "$4" "$5" 2>/dev/null
true
