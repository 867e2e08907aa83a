# LinkerCache: the loader's cache.
. ./lib.sh
ldconfig_p
