# PythonInterpreters' probe, run by each python3.X (valid Python 3.8): one tab-separated line.
import importlib.util
import os
import sys
import sysconfig

v = "{}.{}".format(*sys.version_info[:2])
so = f"libpython{v}.so.1.0"
d = sysconfig.get_config_var("LIBDIR") or ""
m = sysconfig.get_config_var("MULTIARCH") or ""
found = [p for p in (os.path.join(d, so), os.path.join(d, m, so)) if os.path.exists(p)]
can_venv = all(importlib.util.find_spec(n) for n in ("venv", "ensurepip"))
real = os.path.realpath(sys.executable)
fields = ["PY", v, sys.executable, sys.version.split()[0], found[0] if found else "", str(int(can_venv)), real]
print("\t".join(f.replace("\t", " ").replace("\n", " ") for f in fields))
