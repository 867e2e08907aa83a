"""The Python the venv and the python backend stub run, in one folder: its rules, then its operations.

Rules (RULES: the planner, planner/, imports these; they import no operation):
- `choice.py`: which Python: a host Python whose stub fits (numpy<2 needs <= 3.12), a standalone CPython
  (python_standalone_url), or one the pinned uv installs; where its libpython comes from.

Operations:
- `standalone.py`: a standalone CPython unpacked, or one uv installs, its archive cached for resets;
- `scripts/`: the host scripts they send (unpack_python.py, uv_python.sh).

The interpreters' fact: facts/python.py (PythonInterpreters).
"""

RULES = ("choice",)
