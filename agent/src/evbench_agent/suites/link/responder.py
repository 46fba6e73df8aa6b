"""Which responder answers the link: the C responder's executable and what its build
decodes (checked before the run starts), and the rows' `responder` as the one that
answered names itself."""

from __future__ import annotations

from typing import Any

from evbench_agent.link import handshake
from evbench_agent.suites.link.plan import DEFAULT_PROFILES, link_codecs
from evbench_core.errors import UserError


def native_responder() -> str:
    """The C responder's executable (`--responder c`); a UserError when none is installed."""
    from evbench_agent.native import runtimes

    found = runtimes.find_executable(runtimes.RESPONDER)
    if found is None:
        where = ", ".join(str(directory) for directory in runtimes.search_dirs())
        raise UserError(
            f"--responder c: no {runtimes.RESPONDER} in {where}",
            hint=f"build native/ (docs/link.md) and set {runtimes.ENVIRONMENT} to its build "
            "directory, or copy a build for the board with 'evbench deploy --native DIR'",
        )
    return found


def check_native_responder(spec: Any, executable: str) -> None:
    """Refuse, before the run starts, an ack-mode run the C responder would refuse at its
    first HELLO: a codec or profile its build does not decode (its `--about` says which;
    one that cannot say leaves the refusal to the HELLO)."""
    if spec.link_mode != "ack":
        return
    from evbench_agent.native import runtimes

    about = runtimes.about(executable)
    if "ack_codecs" not in about or "ack_profiles" not in about:
        return
    hint = "use --mode echo, or the Python responder (leave out --responder c)"
    if not about["ack_codecs"]:
        raise UserError(f"--responder c: {executable} has no C runtime: echo mode only", hint=hint)
    profiles = spec.link_profiles or DEFAULT_PROFILES
    for what, asked, decoded in (
        ("codecs", link_codecs(spec), about["ack_codecs"].split(",")),
        ("profiles", profiles, about["ack_profiles"].split(",")),
    ):
        missing = [name for name in asked if name not in decoded]
        if missing:
            raise UserError(
                f"--responder c: {executable} decodes the {what} {', '.join(decoded)} "
                f"in ack mode, not {', '.join(missing)}",
                hint=hint,
            )


def name_the_responder(accepted: dict[str, Any], *params_of_kinds: dict[str, Any]) -> None:
    """The rows' `responder` is what answered, as its HELLO answer names itself (one
    started by hand at --peer too), not what the run would have started."""
    said = handshake.implementation(accepted)
    if said is None:
        return
    for params in params_of_kinds:
        if said == "python":  # the default, left out as before
            params.pop("responder", None)
        else:
            params["responder"] = said
