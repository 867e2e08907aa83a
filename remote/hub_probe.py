# HubSnapshot's probe, run by the venv's Python: the cached snapshot of argv[1]@argv[2], offline.
import sys

try:
    from huggingface_hub import snapshot_download

    print("SNAPSHOT=" + snapshot_download(sys.argv[1], revision=sys.argv[2], local_files_only=True))
except Exception as e:
    print("ABSENT=" + type(e).__name__)
