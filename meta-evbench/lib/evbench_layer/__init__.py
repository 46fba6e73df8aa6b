#
# SPDX-License-Identifier: MIT
#
"""meta-evbench's own Python, for its recipes (bitbake puts each layer's lib/ on sys.path)."""
