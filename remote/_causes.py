"""Server log lines -> their cause and fix, shared by the host scripts that explain a failure
(wait_ready.py, model_control.py): inlined where a script says `from _causes import ...`."""

import re as _re

# Server log patterns -> (cause, fix). The first that matches a line explains it.
CAUSES = [
    (
        # Triton 2.51 runs the stub alone first; when that fails (exit != 1) it chmods the stub, which
        # the server's own (non-root) user may not: so a stub that cannot start reads as a permission error.
        ("failed to give execute permission to triton_python_backend_stub",),
        "the python backend stub does not run (Triton's trial run of it failed; as the server's user it "
        "then reports 'execute permission'): most often it cannot load its libpython (not installed, "
        "not on LD_LIBRARY_PATH) or it is for another Python than the venv",
        "run deploy/audit.py: its libpython and 'python backend stub' rows name the fix for this host",
    ),
    (
        ("libpython3",),
        "the python backend stub cannot load its libpython: the stub is for another Python than the venv, "
        "or that libpython is not installed or not on LD_LIBRARY_PATH",
        "run deploy/audit.py: its python, libpython and 'python backend stub' rows name the fix for this host",
    ),
    (
        ("error while loading shared libraries", "cannot open shared object file"),
        "a shared library is missing",
        "run deploy/audit.py: it names the library and its apt package",
    ),
    (
        ("unpack_from requires a buffer",),
        "numpy 2 in the venv: the stub of this Triton build needs numpy<2",
        "pin numpy_version to 1.26.4",
    ),
    (
        ("python version mismatch", "triton_python_backend_stub: not found"),
        "the python backend stub does not match the venv's Python",
        "re-run deploy/provision.py (triton_python)",
    ),
    (
        # The stub itself imports numpy before any model's code: where it cannot, its embedded Python did
        # not find the venv (seen: the venv made from a Python under /root, which the server's user cannot
        # run, so the stub fell back to /usr/bin/python3's prefix).
        ("failed to initialize python stub: modulenotfounderror: no module named 'numpy'",),
        "the python backend stub does not see the venv: the server's user cannot run the venv's Python "
        "(an interpreter under a home or directory only root can enter), or the venv lacks numpy",
        "run deploy/audit.py as the same settings: its python row names a Python the server's user can run; "
        "then deploy/provision.py builds the venv on it",
    ),
    (
        ("modulenotfounderror", "importerror", "syntaxerror", "nameerror", "attributeerror", "oserror", "valueerror"),
        "the model's model.py (or what it loads) failed",
        "read the traceback above; check the model's source",
    ),
    (
        ("already in use", "address in use"),
        "a port is taken",
        "stop the process on that port or set triton_http_port/grpc/metrics",
    ),
    (
        ("unexpected", "does not match", "mismatch"),
        "a model's directory name and its config name differ",
        "keep name in config.pbtxt equal to the directory",
    ),
    (
        ("out of memory", "bad_alloc", "cannot allocate memory", "oom"),
        "out of memory",
        "use fewer instances (instance_count), a smaller model, or a larger host",
    ),
]
KEYWORDS = ("error", "failed", "unable", "exception", "traceback")


def _words(phrases) -> _re.Pattern:
    """Any of the phrases as whole words: "oom" is not in "bloom", "mismatch" not in "version_mismatch"."""
    return _re.compile("|".join(rf"(?<![a-z0-9_]){_re.escape(p)}(?![a-z0-9_])" for p in phrases))


CAUSE_PATTERNS = [(_words(phrases), cause, fix) for phrases, cause, fix in CAUSES]
ERROR_WORDS = _words(KEYWORDS)
TRITON_ERROR = _re.compile(r"^E\d{4} ")  # Triton's own error lines: E<month><day> <time> ...


def is_error(line: str) -> bool:
    """A line that reports a failure: Triton's error level, or a word of failure in it. Only such a line is
    explained: a model merely named "bloom" or "oom" loading is no cause."""
    return bool(TRITON_ERROR.match(line) or ERROR_WORDS.search(line.lower()) or "terminate called" in line)


def cause_of(line: str) -> "tuple[str, str] | None":
    """(cause, fix) of an error line, the first pattern that matches it as whole words; None for none."""
    if not is_error(line):
        return None
    low = line.lower()
    return next(((cause, fix) for pattern, cause, fix in CAUSE_PATTERNS if pattern.search(low)), None)
