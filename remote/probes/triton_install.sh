# TritonInstall $1 home, $2 regex of the libpython a stub links: what the install holds.
h="$1"
[ -d "$h" ] || exit 0
echo "REAL=$(readlink -f "$h")"
[ -x "$h/bin/tritonserver" ] && echo SERVER
[ -f "$h/TRITON_VERSION" ] && echo "VERSION=$(head -n 1 "$h/TRITON_VERSION")"
for b in "$h"/backends/*/; do [ -d "$b" ] && echo "BACKEND=$(basename "$b")"; done
[ -f "$h/backends/python/triton_python_backend_stub" ] && echo PYSTUB \
  "STUBLIB=$(grep -aoE "$2" "$h/backends/python/triton_python_backend_stub" | head -n 1)"
for s in "$h"/python_backend_stubs/*/triton_python_backend_stub; do
  [ -f "$s" ] && echo "STUB=$(basename "$(dirname "$s")")"
done
[ -f "$h/.provisioner" ] && sed "s/^/MANIFEST=/" "$h/.provisioner"
# anything in the install group or others may write (root runs it): the first one found
w=$(find "$h/" ! -type l -perm /022 -print -quit 2>/dev/null)
[ -n "$w" ] && echo "WRITABLE=$w"
true
