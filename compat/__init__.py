"""The compatibility rules: read a host, decide what fits it, say what is wrong and how to fix it."""
