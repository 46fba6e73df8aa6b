"""dbc: CAN FD signals packed by cantools from protos/ev_data.dbc (evbench_agent.payloads.dbc).

Only the profiles the DBC describes (seed, ev-full), at each signal's resolution.
"""

from __future__ import annotations

from types import ModuleType

from evbench_agent.codecs.registry import PLAIN, Pair, codec
from evbench_agent.payloads import Profile


def can_carry(profile: Profile) -> bool:
    from evbench_agent.payloads import dbc

    return dbc.describes(profile)


# meta-python has carried python3-cantools since 2020 (39.4.4 at the pin).
@codec(
    "dbc",
    module="cantools",
    distribution="cantools",
    yocto="python3-cantools",
    carries=PLAIN,
    description="CAN FD signals packed by cantools from protos/ev_data.dbc (seed, ev-full)",
    can_carry=can_carry,
    exact=False,  # each value to its signal's resolution
)
def bind(module: ModuleType, profile: Profile) -> Pair:
    from evbench_agent.payloads import dbc  # only where a run uses it

    return dbc.bind(module, profile)
