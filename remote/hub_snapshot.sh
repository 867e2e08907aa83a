# HubSnapshot $1 launcher, $2 probe source, $3 repo, $4 revision: the cached snapshot, offline.
[ -x "$1" ] || exit 0
HF_HUB_OFFLINE=1 "$1" python3 -c "$2" "$3" "$4" 2>/dev/null
true
