# $1 venv, $2 snapshot folder, $3 snapshot, $4 its file name: a tar of the venv (written aside, then
# renamed, its size beside it); the other snapshots in the folder are removed.
mkdir -p "$2" && tar -cf "$3.part" -C "$1" . && stat -c %s "$3.part" > "$3.size" && mv "$3.part" "$3" \
  && find "$2" -maxdepth 1 -name "*.tar*" ! -name "$4" ! -name "$4.size" -delete
