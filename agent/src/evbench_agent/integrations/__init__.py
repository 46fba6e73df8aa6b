"""The lab systems around a run: LAVA's test-shell signals (`lava`) and evbench's
units spelled for LAVA (`lava_units`), and the labgrid place a run ran in
(`lab_record`)."""

__all__ = ["lava_units"]
