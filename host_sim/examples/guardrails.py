"""Hooks: host-wide policy with ``before_action``.

A hook on a host action sees that action from every mod and the user; a ``command:`` hook
sees invocations of this mod's own command. ``Deny`` raises `ActionDeniedError` in the
caller.
"""

from __future__ import annotations

from modular_sdk import (
    ActionEvent,
    Allow,
    Deny,
    HookDecision,
    ModMetadata,
    SlashCommandContext,
    before_action,
    define_mod,
    slash_command,
)


def no_deep_forks(event: ActionEvent) -> HookDecision:
    if event.author.kind == "mod" and event.author.mod_id == "runaway":
        return Deny(reason="the runaway mod may not fork sessions")
    return Allow()


def only_users_purge(event: ActionEvent) -> HookDecision:
    if event.author.kind != "user":
        return Deny(reason="only a person may run /purge")
    return Allow()


def purge(argument: str | None, ctx: SlashCommandContext) -> str:
    return "Nothing to purge."


mod = define_mod(
    metadata=ModMetadata(display_name="Guardrails", description="Policies for forks and purges"),
    commands=[slash_command(id="purge", description="Forget scratch sessions", run=purge)],
    hooks=[
        before_action("session.fork", no_deep_forks),
        before_action("command:purge", only_users_purge),
    ],
)
