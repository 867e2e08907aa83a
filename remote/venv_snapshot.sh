# $1 venv, $2 snapshot folder, $3 snapshot, $4 its file name: a tar of the venv (written aside, then
# renamed, its sha256 recorded beside it); the other snapshots in the folder are removed.
mkdir -p "$2" && tar -cf "$3.part" -C "$1" . && sha256sum < "$3.part" | cut -d" " -f1 > "$3.sha256" \
  && mv "$3.part" "$3" && find "$2" -maxdepth 1 -name "*.tar*" ! -name "$4" ! -name "$4.sha256" -delete
