# FreeSpace $1: df of the nearest existing directory at or above the path.
p="$1"
while [ ! -e "$p" ] && [ "$p" != / ]; do p=$(dirname "$p"); done
echo "PATH=$p"
df -Pk "$p" 2>/dev/null | tail -n +2
