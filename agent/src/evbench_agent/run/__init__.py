"""A run: the manager that runs the suites into a results directory (`runner`), its
planned time from a short probe (`plan_probe`), runs that outlive the connection
that started them (`detached`), and what a manifest records of the platform
(`platform_info`, also `evbench-agent info`)."""

__all__ = ["detached"]
