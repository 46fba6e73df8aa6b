"""evbench agent: serialization and link benchmarks that run on the board.

`__all__` is the public API's top level: the modules and subpackages the host
may import, each with its own `__all__` (agent/README.md, "Public API").
"""

__version__ = "0.2.0"

__all__ = [
    "__version__",
    "analysis",
    "arms",
    "bus_interfaces",
    "buses",
    "command_line",
    "comparison",
    "detached",
    "errors",
    "json_schema",
    "lava_units",
    "link",
    "log_output",
    "native",
    "options",
    "payloads",
    "registry",
    "regular_file",
    "results",
    "run_ids",
    "sequential",
    "spec",
    "telemetry",
    "write_failures",
]
