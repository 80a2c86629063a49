"""Complete, runnable, type-checked example mods."""
