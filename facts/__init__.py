"""Custom pyinfra facts read from a Triton target host: one remote command each, pure process()."""
