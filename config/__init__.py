"""Settings, the paths derived from them, model entries and version comparison: the bottom layer."""
