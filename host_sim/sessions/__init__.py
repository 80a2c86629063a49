"""Sessions and turns: the `Host`, its handles, where forks happen (``_engine.py``) and
what one turn does (``_turns.py``)."""

from ..lanes._renderer import ViewResult
from ._handles import SessionHandle, TurnHandle
from ._host import Completion, EffectStatus, Host, Submission

__all__ = ["Completion", "EffectStatus", "Host", "SessionHandle", "Submission", "TurnHandle", "ViewResult"]
