# FileDigests: "MODE SHA256 PATH" per regular file given, "- - PATH" for anything else.
for p; do
  if [ -f "$p" ]; then
    s=$(sha256sum < "$p")
    echo "$(stat -c %a "$p") ${s%% *} $p"
  else
    echo "- - $p"
  fi
done
