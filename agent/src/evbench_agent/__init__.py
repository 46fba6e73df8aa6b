"""evbench agent: serialization and link benchmarks that run on the board."""

__version__ = "0.1.0"
