"""The type checker (mypy, pyproject.toml's [tool.mypy]) finds nothing beyond its baseline, which only shrinks."""

from tests import mypy_baseline


def test_no_type_error_beyond_the_baseline_and_none_fixed_left_in_it() -> None:
    found, known = mypy_baseline.current(), mypy_baseline.baseline()
    new = sorted((found - known).elements())
    assert not new, "new type errors (fix them):\n" + "\n".join(new)
    fixed = sorted((known - found).elements())
    assert not fixed, (
        "fixed, still in tests/mypy-baseline.txt (run python -m tests.mypy_baseline --write):\n" + "\n".join(fixed)
    )
