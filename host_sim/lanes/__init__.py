"""Lanes: the ext-host lane (commands, tools, hooks, effects) and the renderer lane (views)."""
