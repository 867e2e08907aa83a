# Shared by the Python host scripts that move many bytes: inlined where a script says
# `from _progress import ...`. Lines on stderr, at most every EVERY seconds, that a run shows live.
import sys as _psys
import time as _ptime

EVERY = 2.0  # seconds between two lines: a long step never looks hung


def mib(n: int) -> str:
    return f"{n / 1048576:.1f} MiB"


def eta(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class Progress:
    """How far a transfer is: bytes of the total (where known), rate and time left."""

    def __init__(self, label: str, total: int = 0, every: float = EVERY) -> None:
        self.label, self.total, self.every = label, total, every
        self.start = self.last = _ptime.monotonic()
        self.first = -1  # bytes already there when it started (a resumed download): not in the rate
        self.shown = False

    def rate(self, done: int, now: float) -> float:
        """Bytes per second since the start (what was there before not counted)."""
        if self.first < 0:
            self.first = done
        return max(done - self.first, 0) / max(now - self.start, 1e-6)

    def line(self, done: int, now: float, what: str = "") -> str:
        rate = self.rate(done, now)
        text = f"{self.label}: {what + ' ' if what else ''}{mib(done)}"
        if self.total:
            text += f" of {mib(self.total)} ({min(done * 100 // self.total, 100)}%)"
        text += f", {rate / 1048576:.1f} MiB/s"
        if self.total and rate > 0 and done < self.total:
            text += f", {eta((self.total - done) / rate)} left"
        return text

    def update(self, done: int, what: str = "") -> None:
        """A line for done bytes, where the last one is EVERY seconds old."""
        now = _ptime.monotonic()
        if self.first < 0:
            self.first = done
        if now - self.last >= self.every:
            self.last = now
            self.shown = True
            print(self.line(done, now, what), file=_psys.stderr, flush=True)

    def finished(self, done: int) -> None:
        """The closing line (only where progress was shown: a quick step stays quiet)."""
        if self.shown:
            took = _ptime.monotonic() - self.start
            rate = max(done - max(self.first, 0), 0) / max(took, 1e-6) / 1048576
            print(f"{self.label}: {mib(done)} in {took:.1f} s ({rate:.1f} MiB/s)", file=_psys.stderr, flush=True)
