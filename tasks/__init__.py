"""The install steps, as pyinfra operations: one concern per module."""
