"""evbench host tools: drive boards, gather results, render and compare them."""

__version__ = "0.2.0"
