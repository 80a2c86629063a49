"""host_sim: the host simulator that folds modular-sdk mods and runs their AI sessions."""
