# ListeningPorts: "L ADDR:PORT INODE" per listening TCP socket, "P PID COMM INODES" per process.
cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" {print "L", $2, $10}'
for d in /proc/[0-9]*; do
  s=$(find "$d/fd" -maxdepth 1 -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n' | tr '\n' ' ')
  [ -n "$s" ] && echo "P ${d#/proc/} $(tr ' ' _ < "$d/comm" 2>/dev/null) $s"
done
true
