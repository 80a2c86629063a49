"""The errors a model raises when it cannot answer; each fails only its own turn.

The host turns them into the turn's error text (``TurnFailedError.reason``), so their
messages are written for the person reading a transcript: what failed, and what to do.
"""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["CassetteMismatchError", "ModelError"]


class ModelError(ModularError, RuntimeError):
    """A model could not answer a request.

    ``model`` names the model; ``status`` is the HTTP status the server answered with
    (``None`` when there was no answer: a refused connection, a timeout, a cassette). The
    message never holds an API key, even one the server quoted back.
    """

    def __init__(self, message: str, *, model: str, status: int | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.status = status


class CassetteMismatchError(ModelError):
    """A `ReplayModel` was asked something its cassette did not record.

    ``path`` is the cassette, ``call`` the 1-based number of the call that differs and
    ``diff`` the unified diff between the recorded request and this one (empty when the
    cassette has no call left).
    """

    def __init__(self, message: str, *, model: str, path: str, call: int, diff: str) -> None:
        super().__init__(message, model=model)
        self.path = path
        self.call = call
        self.diff = diff
