"""Messages that drive turns, and the authors the host stamps on them.

Each refuses a bad field at its call with `ModDefinitionError` (also a ``ValueError``)
naming the field and the value: text that is not a ``str``, empty where text is required,
or holding a lone surrogate (which cannot be stored).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

from ._rules import text_validator

__all__ = [
    "AiMessage",
    "AiNotificationMessage",
    "AiPromptMessage",
    "AiSessionDisplayMetadata",
    "Author",
    "ModAuthor",
    "UserAuthor",
]


@attrs.frozen(kw_only=True)
class AiPromptMessage:
    """A prompt: text for the model. Immutable; ``type`` is always ``"prompt"``.

    Messages carry no author: the host stamps who sent one from the calling context.

    >>> AiPromptMessage(text="Refactor the parser").type
    'prompt'
    """

    type: Literal["prompt"] = attrs.field(default="prompt", init=False)
    text: str = attrs.field(validator=text_validator())


@attrs.frozen(kw_only=True)
class AiNotificationMessage:
    """A system event delivered into a session (never something the user said).

    Immutable; ``type`` is always ``"notification"``. It drives a turn like a prompt, and the
    model sees it as a notification.
    """

    type: Literal["notification"] = attrs.field(default="notification", init=False)
    title: str = attrs.field(validator=text_validator(non_empty=True))
    body: str = attrs.field(validator=text_validator())


AiMessage: TypeAlias = AiPromptMessage | AiNotificationMessage
"""What drives a turn; discriminated by ``type``."""


def text_of(message: AiMessage) -> str:
    """The text a model is given for a message: a prompt verbatim; a notification's title and body."""
    if isinstance(message, AiNotificationMessage):
        return f"{message.title}\n\n{message.body}" if message.body else message.title
    return message.text


@attrs.frozen(kw_only=True)
class UserAuthor:
    """The person at the keyboard: the stamp outside any mod handler. Immutable."""

    kind: Literal["user"] = attrs.field(default="user", init=False)


@attrs.frozen(kw_only=True)
class ModAuthor:
    """A mod, stamped on what its handler sends: the mod id and its command or tool.

    Immutable. Exactly one of ``command_id`` and ``tool_name`` is set for a message sent from
    a command or tool handler; both are ``None`` for an effect.
    """

    kind: Literal["mod"] = attrs.field(default="mod", init=False)
    mod_id: str = attrs.field(validator=text_validator())
    command_id: str | None = attrs.field(default=None, validator=text_validator(optional=True))
    tool_name: str | None = attrs.field(default=None, validator=text_validator(optional=True))


Author: TypeAlias = UserAuthor | ModAuthor
"""Who produced a turn's input; discriminated by ``kind``."""


@attrs.frozen(kw_only=True)
class AiSessionDisplayMetadata:
    """How a session is shown (label and optional icon). Immutable."""

    label: str = attrs.field(validator=text_validator(non_empty=True))
    icon: str | None = attrs.field(default=None, validator=text_validator(optional=True))
