"""The agent's processes: fresh worker interpreters for each measurement
(`workers`), how a child ended (`child_exit`), the secrets kept from children
(`private_environment`), and stopping when the program driving the agent goes
away (`host_watch`)."""
