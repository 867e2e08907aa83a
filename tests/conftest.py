"""Marks each test by its folder: tests/unit are `unit`, tests/e2e are `e2e`."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = Path(item.fspath).relative_to(HERE).parts[0]
        if kind in ("unit", "e2e"):
            item.add_marker(getattr(pytest.mark, kind))
