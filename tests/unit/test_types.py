"""The type checker (mypy, pyproject.toml's [tool.mypy]) finds nothing beyond its baseline, which only shrinks."""

import pytest

from tests import mypy_baseline


def test_no_type_error_beyond_the_baseline_and_none_fixed_left_in_it() -> None:
    found, known = mypy_baseline.current(), mypy_baseline.baseline()
    new = sorted((found - known).elements())
    assert not new, "new type errors (fix them):\n" + "\n".join(new)
    fixed = sorted((known - found).elements())
    assert not fixed, (
        "fixed, still in tests/mypy-baseline.txt (run python -m tests.mypy_baseline --write):\n" + "\n".join(fixed)
    )


def test_a_checker_that_did_not_run_is_named_never_taken_for_a_clean_run() -> None:
    with pytest.raises(
        RuntimeError, match=r"no_such_checker did not run \(exit 1\): .*No module named no_such_checker"
    ):
        mypy_baseline.current("no_such_checker")
