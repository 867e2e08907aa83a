"""Facts about the HuggingFace cache: whether a model revision is there, without the network."""

from __future__ import annotations

from pyinfra.api import FactBase, StringCommand

from remote import python


class HubSnapshot(FactBase[str | None]):
    """The snapshot folder of repo@revision that the provisioner's download completed (its marker in
    markers, every file it fetched still in the cache), or None. Offline, without huggingface_hub."""

    def command(self, markers: str, repo: str, revision: str) -> StringCommand:
        return python("python3", "hub_snapshot.py", markers, repo, revision)

    def process(self, output: list[str]) -> str | None:
        for line in output:
            if line.startswith("SNAPSHOT=") and line[9:]:
                return line[9:]
        return None
