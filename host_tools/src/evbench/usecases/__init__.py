"""The use cases, each written once against the Board protocol (evbench.boards).

`deploy` puts the agent on a board, `deploy_native` its native harnesses,
`remote_run` starts, follows, fetches and verifies a run, `diag` writes a field
report, `link_peer` places the link's responder (`--peer host|board`),
`can_peer` is that responder on the lab PC's CAN adapter, and `schema` compiles
a user's .proto into the run spec. Commands (evbench.commands) call them; they
call the transports, never a command.
"""
