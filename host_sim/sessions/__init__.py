"""Sessions and turns: the `Host`, its handles, and where forks happen (``_engine.py``)."""

from ._handles import SessionHandle, TurnHandle
from ..lanes._renderer import ViewResult
from ._host import Completion, EffectStatus, Host, Submission

__all__ = ["Completion", "EffectStatus", "Host", "SessionHandle", "Submission", "TurnHandle", "ViewResult"]
