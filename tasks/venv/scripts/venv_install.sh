# $1 venv, $2 wheelhouse, $3 lock, $4 "reinstall" or "", $5 tools folder, $6 uv version, $7... the uv
# wheel's allowed sha256s: exactly the locked files of the wheelhouse into the venv, each checked
# against its sha256, no index, wheels only (never an sdist's build run as root). With uv where the wheelhouse holds its pinned wheel (tools/): the
# wheel's sha256 is checked, its binary unpacked once into the tools folder; else with pip.
v="$1" wh="$2" lock="$3" again="$4" tools="$5" version="$6"
shift 6
. ./uv_binary.sh
for whl in "$wh"/tools/uv-"$version"-*.whl; do
  uv_from_wheel "$whl" "$tools" "$version" "$@" && break
done
uv="$tools/uv-$version/uv"
if [ -x "$uv" ]; then
  # uv unpacks each wheel once into a cache beside the venv (same file system) and hard-links the
  # files into it; the cache goes once they are in (the venv's links keep them)
  cache="$v.uv.tmp"
  rm -rf "$cache"
  "$uv" pip install --python "$v/bin/python" --no-index --only-binary :all: --find-links "$wh" --require-hashes --no-deps \
    ${again:+--reinstall} --link-mode hardlink --cache-dir "$cache" --quiet -r "$lock"
  rc=$?
  rm -rf "$cache"
  exit "$rc"
else
  echo "uv $version is not in $wh/tools: installing with pip" >&2
  "$v/bin/pip" install --only-binary :all: --disable-pip-version-check --no-index --no-compile ${again:+--force-reinstall} \
    --progress-bar off --find-links "$wh" --require-hashes --no-deps -r "$lock"
fi
