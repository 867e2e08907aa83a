# InitSystem: PID 1's name, whether systemd booted the host, notebook hints (variable names only).
echo "PID1=$(cat /proc/1/comm 2>/dev/null)"
[ -d /run/systemd/system ] && echo SYSTEMD_BOOTED
[ -d /content ] && echo CONTENT_DIR
env | cut -d= -f1 | grep -E '^(COLAB_|KAGGLE_)' | sed 's/^/ENV=/'
true
