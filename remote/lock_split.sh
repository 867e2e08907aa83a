# $1 a requirements.lock: torch's line into $1.torch, every other line into $1.rest (torch comes
# from its own index, the rest from PyPI or the configured index: never one index for both).
grep '^torch==' "$1" > "$1.torch" || true
grep -v '^torch==' "$1" > "$1.rest" || true
