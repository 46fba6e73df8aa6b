"""The serial console: addresses, the raw line, login, checksummed frames, a shell session
and file transfers, on which boards/serial.py builds the Board protocol."""
