"""evbench under LAVA: job definitions for AM62x and QEMU device types (job.py), and
LAVA's results turned back into ordinary run directories (results.py)."""
