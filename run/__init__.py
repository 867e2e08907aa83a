"""Run plumbing: how a pyinfra run reads hosts (the one-round-trip batch), the pyinfra internals it relies
on, and what it reports at its end (summary, timings, the audit's verdict, host log lines)."""
