"""run/pyinfra_internals.py: every pyinfra internal the project relies on holds in the installed pyinfra,
checked by its behaviour; one that changes is named with who relies on it."""

from __future__ import annotations

from pyinfra.api import StringCommand

from run import pyinfra_internals


def test_every_pyinfra_internal_relied_on_holds_in_the_installed_pyinfra() -> None:
    assert pyinfra_internals.changed() == []


def test_a_changed_internal_is_named_with_who_relies_on_it(monkeypatch) -> None:
    monkeypatch.setattr(pyinfra_internals, "pop_global_arguments", lambda state, host, kwargs: ({}, []))
    pyinfra_internals._in_a_run.cache_clear()  # the probe runs in a process of its own: break it in-process
    monkeypatch.setattr(pyinfra_internals, "_in_a_run", lambda: {"string": "/tmp", "function": "/tmp"})
    changed = pyinfra_internals.changed()
    assert len(changed) == 1 and changed[0].startswith("Host.current_op_global_arguments")
    assert "used by run/batch.py" in changed[0]


def test_a_command_whose_parts_no_longer_rebuild_it_is_named(monkeypatch) -> None:
    monkeypatch.setattr(StringCommand, "get_raw_value", lambda self: str(id(self)))
    changed = pyinfra_internals.changed()
    assert any(line.startswith("StringCommand.bits and StringCommand.separator") for line in changed)
