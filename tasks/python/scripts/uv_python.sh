# A standalone CPython installed by the pinned uv. $1 uv's wheel (its sha256 checked against $13...),
# $2 tools folder, $3 uv version, $4 install dir (local disk), $5 archive cache, $6 uv cache (both on the
# persistent path), $7 what to install ("3.12", "3.11.9"), $8 its minor, $9 machine (x86_64), $10 mirror,
# $11 downloads list URL, $12 "offline" or "", then the wheel's allowed sha256s.
# uv checks each archive against the sha256 of its list (its own, or $11's), cached ones too; then the
# tree is checked (no link out of it, no set-id bit, no device), made unwritable by group and others, and
# its interpreter proven (venv, ensurepip, ssl) before the marker .provisioner-MINOR is written.
whl="$1" tools="$2" version="$3" dir="$4" archives="$5" cache="$6" want="$7" minor="$8" arch="$9"
shift 9
mirror="$1" list="$2" offline="$3"
shift 3
. ./uv_binary.sh
uv_from_wheel "$whl" "$tools" "$version" "$@" || { echo "uv $version: no usable wheel at $whl" >&2; exit 1; }
uv="$tools/uv-$version/uv"
marker="$dir/.provisioner-$minor"
rm -f "$marker"
mkdir -p "$dir" "$archives" "$cache"
export UV_PYTHON_INSTALL_DIR="$dir" UV_PYTHON_CACHE_DIR="$archives" UV_CACHE_DIR="$cache" UV_NO_CONFIG=1
[ -z "$mirror" ] || export UV_PYTHON_INSTALL_MIRROR="$mirror"
[ -z "$list" ] || export UV_PYTHON_DOWNLOADS_JSON_URL="$list"
# the host's trust store (a TLS-inspecting proxy's CA), where it has one
[ ! -f /etc/ssl/certs/ca-certificates.crt ] || export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
"$uv" python install --no-bin --color never ${offline:+--offline} "$want" || exit 1
home="$dir/cpython-$minor-linux-$arch-gnu"
python="$home/bin/python$minor"
[ -x "$python" ] || { echo "uv installed no $python" >&2; exit 1; }
bad=$(python3 -c '
import os, stat, sys
top = os.path.realpath(sys.argv[1])
for root, dirs, files in os.walk(top):
    for name in dirs + files:
        path = os.path.join(root, name)
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode) and not os.path.realpath(path).startswith(top + os.sep):
            print(path, "points outside", top)
            break
        if mode & (stat.S_ISUID | stat.S_ISGID) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            print(path, "is set-id or not a plain file, directory or link")
            break
    else:
        continue
    break
' "$dir")
[ -z "$bad" ] || { echo "refused, uv's CPython: $bad" >&2; exit 1; }
chmod -R go-w "$dir"
"$python" -I -B -c 'import venv, ensurepip, ssl' || { echo "$python cannot make a venv with pip" >&2; exit 1; }
echo "CPython $("$python" -I -c 'import platform; print(platform.python_version())') at $home (uv $version)"
: > "$marker"
