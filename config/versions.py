"""Comparing version strings, the one way every layer does it."""


def version_key(version: str) -> tuple[int, ...]:
    """ "2.35" -> (2, 35), "3.4.30" -> (3, 4, 30); a local tag ("+cu124") and non-digits are dropped."""
    out = []
    for part in version.split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)
