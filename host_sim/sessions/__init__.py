"""Sessions and turns: the `Host`, its handles, and where forks happen (``_engine.py``)."""

from ._handles import SessionHandle, TurnHandle
from ._host import Completion, EffectStatus, Host, Submission, ViewResult

__all__ = ["Completion", "EffectStatus", "Host", "SessionHandle", "Submission", "TurnHandle", "ViewResult"]
