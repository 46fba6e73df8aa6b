"""Native codecs: C and C++ runtimes measured through a harness over a pipe.

A native codec is one more kind of codec in `evbench_agent.codecs`: the suite
pairs, alternates and replicates it as any other, but its timed loops run in
a small executable (native/ at the repository's root, one per runtime), which
the worker process drives over the protocol of docs/native-codecs.md
(`protocol`). `runtimes` names the runtimes and finds their executables;
`codec` binds one to a payload profile.
"""

__all__ = ["runtimes"]
