# $1 a requirements.lock: torch's line into $1.torch, every other line into $1.rest, and $1.rest in
# $2 parts (default 1) $1.rest.0 ... a line each in turn: pip downloads one file at a time, so the
# parts are downloaded at once (torch comes from its own index, the rest from PyPI or the configured
# index: never one index for both). The caller asks for no more parts than the rest has lines.
grep '^torch==' "$1" > "$1.torch" || true
grep -v '^torch==' "$1" > "$1.rest" || true
parts=${2:-1}
part=0
while [ "$part" -lt "$parts" ]; do
    awk -v n="$parts" -v i="$part" 'NR % n == i' "$1.rest" > "$1.rest.$part"
    part=$((part + 1))
done
