# FreeSpace $1: df of the nearest existing directory at or above the path, and its file system's type.
p="$1"
while [ ! -e "$p" ] && [ "$p" != / ]; do p=$(dirname "$p"); done
echo "PATH=$p"
echo "TYPE=$(findmnt -n -o FSTYPE --target "$p" 2>/dev/null)"
df -Pk "$p" 2>/dev/null | tail -n +2
