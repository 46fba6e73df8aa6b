"""The link benchmark's network parts: framing, handshake, responder, client.

`framing` and `handshake` define the wire format (see the README, "Wire
format"); `responder` is the `evbench-agent serve` process and `service`
starts and stops one from another process; `client` is the periodic sender
and `saturation` the saturating one. The suite that records their figures is
`evbench_agent.suites.link`.
"""

__all__ = ["bus_responder", "framing", "isotp_options", "isotp_port", "service"]
