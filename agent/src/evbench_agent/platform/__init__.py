"""Facts of the board the agent runs on: which board it is (`board_identity`), its
CAN interfaces and UARTs (`bus_interfaces`), its memory and the agent's peak RSS
(`memory`), and an installed distribution's version (`installed_version`)."""

__all__ = ["bus_interfaces"]
