# OsRelease: /etc/os-release and the machine architecture.
cat /etc/os-release 2>/dev/null
echo "ARCH=$(uname -m)"
