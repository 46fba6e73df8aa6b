"""Benchmark suites. Each has `run(spec, writer, progress)`; see spec.SUITES."""
