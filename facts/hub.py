"""Facts about the HuggingFace cache: whether a model revision is there, without the network."""

from __future__ import annotations

from pyinfra.api import FactBase, StringCommand

from remote import shell, source


class HubSnapshot(FactBase[str | None]):
    """The cached snapshot directory of repo@revision in hf_home, asked of a venv's python (its
    huggingface_hub), or None (also where that python is missing)."""

    def command(self, python: str, hf_home: str, repo: str, revision: str) -> StringCommand:
        return shell("hub_snapshot.sh", python, hf_home, source("hub_probe.py"), repo, revision)

    def process(self, output: list[str]) -> str | None:
        for line in output:
            if line.startswith("SNAPSHOT=") and line[9:]:
                return line[9:]
        return None
