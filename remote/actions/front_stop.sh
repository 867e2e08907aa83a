# The front stopped (lib.sh's stop_front): $1 run dir, $2 HAProxy's program.
. ./lib.sh
stop_front "$1" "$2"
