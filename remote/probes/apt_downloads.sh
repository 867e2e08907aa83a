# $1 apt's cache (lists, archives), $2... packages: what apt would download to install them, the
# .debs the cache lacks, read with the cache's own lists (apt-get --print-uris changes nothing).
# LISTS=absent where the cache holds no package lists; then apt's answer lines, as it prints them.
c="$1"
shift
lists=absent
for f in "$c"/lists/*_Packages*; do [ ! -e "$f" ] || lists=present; done
if [ "$lists" = absent ]; then
  echo "LISTS=absent"
  exit 0
fi
# (no binary cache written: pkgcache= and srcpkgcache= empty keep apt's answer in memory)
apt-get -o "Dir::State::Lists=$c/lists" -o "Dir::Cache::Archives=$c/archives" \
  -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= install --print-uris -qq --no-install-recommends "$@" 2>&1
exit 0
