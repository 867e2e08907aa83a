# $1 a file sent by the controller (DEST.from-controller), $2 its destination, $3 the sha256 it must have.
# It takes DEST's place only where its sha256 agrees; otherwise it is removed and the step fails, naming
# it: a host never trusts a file more for coming from the controller.
set -e
got=$(sha256sum < "$1" | cut -d' ' -f1) || got=unreadable
if [ "$got" != "$3" ]; then
    rm -f "$1"
    echo "$2: the controller's copy has sha256 $got, not $3: removed, nothing installed. Remove the" \
        "controller's cached copy (controller_cache_dir) and run again" >&2
    exit 1
fi
chmod 644 "$1"
mv -f "$1" "$2"
