"""Facts about the HuggingFace cache: whether a model revision is there, without the network."""

from __future__ import annotations

from pyinfra.api import FactBase, StringCommand

from facts._shell import script_command

_PROBE = (
    "import sys\n"
    "try:\n"
    "    from huggingface_hub import snapshot_download\n"
    "    print('SNAPSHOT=' + snapshot_download(sys.argv[1], revision=sys.argv[2], local_files_only=True))\n"
    "except Exception as e:\n"
    "    print('ABSENT=' + type(e).__name__)\n"
)


class HubSnapshot(FactBase[str | None]):
    """The cached snapshot directory of repo@revision in HF_HOME (through the launcher's env), or None."""

    def command(self, launcher: str, repo: str, revision: str) -> StringCommand:
        return script_command(
            '[ -x "$1" ] || exit 0; HF_HUB_OFFLINE=1 "$1" python3 -c "$2" "$3" "$4" 2>/dev/null; true',
            launcher,
            _PROBE,
            repo,
            revision,
        )

    def process(self, output: list[str]) -> str | None:
        for line in output:
            if line.startswith("SNAPSHOT=") and line[9:]:
                return line[9:]
        return None
