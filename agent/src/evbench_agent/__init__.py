"""evbench agent: serialization and link benchmarks that run on the board.

`__all__` is the public API's top level: the modules and subpackages the host
may import, each with its own `__all__` (agent/README.md, "Public API"). What
both sides share (the results format, the analysis, the comparison, the errors)
is not here but in the core, `evbench_core`, which this package imports.
"""

__version__ = "0.2.0"

__all__ = [
    "__version__",
    "arms",
    "buses",
    "command_line",
    "integrations",
    "link",
    "native",
    "options",
    "payloads",
    "platform",
    "registry",
    "run",
    "spec",
    "telemetry",
]
