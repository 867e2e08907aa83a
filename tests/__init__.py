"""Unit tests (fixtures of real command output) and e2e tests (real hosts over SSH)."""
