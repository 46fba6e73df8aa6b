"""evbench lab: a matrix of boards x suites x profiles x codecs, run unattended.

plan.py reads and validates LAB.yaml into entries; index.py keeps lab.json (what ran
where, written atomically as it goes); runner.py runs the entries, one board's one
after another and different boards in parallel, each an ordinary `evbench run`.
"""
