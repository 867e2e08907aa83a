# VenvPackages' probe, run by the venv's Python (valid Python 3.8). importlib.metadata sees what pip
# installed, with local versions such as 2.5.1+cu124, which pyinfra's pip facts (a regex) skip.
import importlib.metadata as m
import sys

print("PY", "{}.{}.{}".format(*sys.version_info[:3]))
for d in m.distributions():
    print("PKG", (d.metadata["Name"] or "").lower().replace("_", "-"), d.version)
