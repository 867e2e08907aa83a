"""Facts about the HuggingFace cache: whether a model revision is there, without the network."""

from __future__ import annotations

from pyinfra.api import FactBase, StringCommand

from remote import shell, source


class HubSnapshot(FactBase[str | None]):
    """The cached snapshot directory of repo@revision in HF_HOME (through the launcher's env), or None."""

    def command(self, launcher: str, repo: str, revision: str) -> StringCommand:
        return shell("hub_snapshot.sh", launcher, source("hub_probe.py"), repo, revision)

    def process(self, output: list[str]) -> str | None:
        for line in output:
            if line.startswith("SNAPSHOT=") and line[9:]:
                return line[9:]
        return None
