# CRuntime: glibc's version, and every GLIBCXX_ version libstdc++.so.6 provides.
. ./lib.sh
getconf GNU_LIBC_VERSION 2>/dev/null || true
for f in $(ldconfig_p | awk '$1 == "libstdc++.so.6" {print $NF}'); do
  grep -ao 'GLIBCXX_[0-9][0-9.]*[0-9]' "$f" 2>/dev/null
done | sort -u
