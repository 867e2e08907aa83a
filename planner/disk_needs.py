"""Disk the install needs, in bytes, per part (planner/installed.py checks the host's free space against
these before anything is written); measured here unless said otherwise. [pbs]: the standalone CPython
builds (see planner/tables.py's sources); [machine notes]: ../shared/notes, the CUDA machines' figures."""

MIB = 1024 * 1024
GIB = 1024 * MIB
# A standalone CPython [pbs] unpacked under triton_home/python, and its download.
DISK_PYTHON_STANDALONE = 250 * MIB
DISK_PYTHON_DOWNLOAD = 60 * MIB
DISK_TRITON_INSTALL = 300 * MIB  # pytriton 0.7.0 unpacked: 143 MB, twice while switching versions
DISK_TRITON_DOWNLOAD = 60 * MIB  # the 55 MB wheel in the persistent cache
DISK_VENV = {"cpu": 2 * GIB, "cuda": 9 * GIB}  # torch CPU ~0.9 GB in a venv; CUDA ~6-7 GB [machine notes]
DISK_PIP_CACHE = {"cpu": 1 * GIB, "cuda": 5 * GIB}  # downloaded wheels kept on the persistent path
# A tar of the finished venv on the persistent path (venv_snapshot): the venv's size, measured
# 1.3 GB for the CPU torch venv here; CUDA torch venvs ~6-7 GB [machine notes].
DISK_VENV_SNAPSHOT = {"cpu": 3 * GIB // 2, "cuda": 7 * GIB}
