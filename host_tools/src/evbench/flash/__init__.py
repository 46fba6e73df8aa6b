"""Flashing: a bmap-aware image writer for SD cards, files, and a board's eMMC over SSH.

bmap.py parses the block map, source.py streams the (compressed) image,
target.py decides whether a device may be written, writer.py writes and
verifies, emmc.py does the same on a board through its Board transport.
"""
