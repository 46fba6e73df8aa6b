"""What a message costs on the buses EV subsystems use: frames, bits, time on the bus.

Pure computation (no bus needed), one module per bus; budget.py puts them
together for a codec's measured messages. docs/buses.md has the rules.
"""

__all__ = ["budget", "command", "measured", "render", "transport"]
