"""Compaction (API.md section 20): a summary record read from a window of turns, shown to
later model calls in place of that window.

The host asks `Compactor.history` for what a model call is given. It picks the newest
summary that applies to the session (one made in the session, or in a session of its fork
chain whose window ends at or before the fork's anchor: a fork never sees words from after
its anchor), re-reads it by id (erased or retracted: it no longer applies, the next one is
tried), and shows it as one ``HistoryEntry(kind="summary")`` followed by the entries after
its window. When that is over the budget it compacts once: the oldest window after the
summary that brings the rest under the budget, keeping the last ``keep_recent`` entries
whole, summarized (with the earlier summary first) into a new record derived from the
earlier one. Building the history costs what it sends plus a binary search: never the
session's length.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Final, Protocol

from modular_sdk import AiPromptMessage, HostAuthor, MemoryRecord, ModularError, RecordId, SessionId, TurnId, Window

from ..models._protocol import HistoryEntry, Model, ModelRequest, Reply
from ..stores._memory_records import RecordStore
from ..stores._protocol import Store
from ._book import new_record_id
from ._policy import CHARS_PER_TOKEN, ContextPolicy

__all__ = ["SUMMARY_INSTRUCTION", "CompactionError", "CompactionNotices", "Compactor", "SummaryCall"]

SUMMARY_INSTRUCTION: Final = (
    "Summarize the conversation so far (an earlier summary included) in a few sentences: keep every fact, "
    "decision and open question a later turn may need. Reply with the summary only."
)
"""What the default summarizer asks the session's model, with the window as its history."""

_ENTRY_OVERHEAD: Final = 4  # tokens a message costs beyond its text (roles, separators)


class CompactionError(ModularError, RuntimeError):
    """A summary could not be made (the summarizer failed, hung past ``model_timeout`` or
    returned no text); the turn that needed it fails. ``timed_out``: it hung."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


SummaryCall = Callable[[ModelRequest | None, Callable[[], Awaitable[object]]], Awaitable[object]]
"""How the turn that needs a summary runs the summarizer: ``call(request, run)`` awaits
``run()`` under the turn's limits (``model_timeout``), inside a chat span when ``request`` is
the default summarizer's model call (``None``: a ``summarize=`` function); it raises
`CompactionError` when ``run`` fails or hangs."""


async def _unbounded(request: ModelRequest | None, run: Callable[[], Awaitable[object]]) -> object:
    return await run()


class CompactionNotices(Protocol):
    """What compaction tells the host: the summary record and the window it was read from."""

    def recording(self, record: MemoryRecord, compacted: tuple[int, int] | None = None) -> AbstractContextManager[None]:
        """The block writes ``record``: its ``memory_recorded`` (and, for a summary of the
        turns at ordinals ``compacted``, ``session_compacted``) commit with that write."""
        ...


def covers_of(record: MemoryRecord) -> tuple[int, int] | None:
    """The ordinals a summary stands for (its ``data["covers"]``), or ``None`` for another record."""
    data = record.data
    if record.kind != "summary" or not isinstance(data, Mapping):
        return None
    covers = data.get("covers")
    if isinstance(covers, tuple) and len(covers) == 2:
        first, last = covers
        if isinstance(first, int) and isinstance(last, int):
            return first, last
    return None


class Compactor:
    """Builds a session's model history under a `ContextPolicy` (see the module docstring)."""

    __slots__ = ("_clock", "_model", "_notices", "_policy", "_store", "_summaries")

    def __init__(
        self,
        policy: ContextPolicy,
        *,
        store: Store,
        model: Model,
        clock: Callable[[], datetime],
        notices: CompactionNotices,
    ) -> None:
        self._policy = policy
        self._store = store
        self._model = model
        self._clock = clock
        self._notices = notices
        self._summaries: dict[SessionId, list[MemoryRecord]] = {}  # a cache of the store's, per session

    def _tokens(self, text: str) -> int:
        count = getattr(self._model, "count_tokens", None)
        if callable(count):
            found = count(text)
            if isinstance(found, int) and not isinstance(found, bool) and found >= 0:
                return found
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def _cost(self, entry: HistoryEntry) -> int:
        return self._tokens(entry.text) + self._tokens(entry.reply) + _ENTRY_OVERHEAD

    async def _of(self, session_id: SessionId) -> list[MemoryRecord]:
        found = self._summaries.get(session_id)
        if found is None:
            records = self._store
            found = []
            if isinstance(records, RecordStore):
                after: int | None = None
                while True:
                    page, after = await records.page_records(session_id, "summary", {}, False, 1000, after)
                    found += [r for r in page if r.erased_at is None and covers_of(r) is not None]
                    if after is None:
                        break
            self._summaries[session_id] = found
        return found

    async def _applicable(self, chain: Sequence[tuple[SessionId, int | None]]) -> MemoryRecord | None:
        """The newest live summary whose window ends within the history ``chain`` describes."""
        while True:
            best: tuple[int, MemoryRecord, list[MemoryRecord]] | None = None
            for session_id, cut in chain:
                summaries = await self._of(session_id)
                for record in reversed(summaries):
                    covers = covers_of(record)
                    if covers is not None and (cut is None or covers[1] <= cut):
                        if best is None or covers[1] > best[0]:
                            best = (covers[1], record, summaries)
                        break  # newer summaries of a session cover more: the first that fits is its best
            if best is None:
                return None
            _, record, summaries = best
            assert isinstance(self._store, RecordStore)
            fresh = await self._store.get_record(record.id)  # one read by key: erased or retracted since?
            if fresh is not None and fresh.erased_at is None and fresh.retracted_at is None:
                return fresh
            summaries.remove(record)

    async def history(
        self,
        *,
        session_id: SessionId,
        model_name: str,
        chain: Sequence[tuple[SessionId, int | None]],
        view: Sequence[HistoryEntry],
        turn_of: Callable[[int], tuple[TurnId, int]],
        prompt: str,
        last_input_tokens: int | None = None,
        call: SummaryCall = _unbounded,
    ) -> Sequence[HistoryEntry]:
        """What the model is given for a call of session ``session_id`` (see the module docstring).

        ``view``: the completed turns of its history as entries; ``turn_of(i)``: the id and
        ordinal of entry ``i``; ``chain``: the sessions whose turns the history holds, each
        with the last ordinal it holds (``None``: all); ``last_input_tokens``: what the
        model's server reported for the session's last call (the best measure there is);
        ``call``: how the summarizer is run (see `SummaryCall`).
        """
        if not isinstance(self._store, RecordStore):
            return view
        n = len(view)
        summary = await self._applicable(chain)
        start, head = 0, None
        if summary is not None:
            covers = covers_of(summary)
            assert covers is not None
            start = bisect.bisect_right(range(n), covers[1], key=lambda i: turn_of(i)[1])
            head = HistoryEntry(kind="summary", text=summary.text, reply="", covers=covers)
        budget = self._policy.max_tokens
        fixed = self._tokens(prompt) + (0 if head is None else self._cost(head))
        total, index = fixed, n
        while index > start and total <= budget:  # from the newest back: costs what is sent
            index -= 1
            total += self._cost(view[index])
        over = total > budget
        if not over and last_input_tokens is not None and n > start:
            over = last_input_tokens + self._cost(view[n - 1]) + self._tokens(prompt) > budget
        if not over:
            return view if head is None else (head, *view[start:])
        # Compact: keep the newest entries that fit in half the budget (the summary takes room
        # too), never fewer than keep_recent whole, and summarize the window before them.
        keep, kept = n, fixed
        while keep > start and kept + self._cost(view[keep - 1]) <= budget // 2:
            keep -= 1
            kept += self._cost(view[keep])
        end = min(keep, n - self._policy.keep_recent)
        if end <= start:
            return view if head is None else (head, *view[start:])
        window = [view[i] for i in range(start, end)]
        text = await self._summarize(session_id, model_name, [*(() if head is None else (head,)), *window], call)
        first_id, first_ordinal = turn_of(start)
        last_id, last_ordinal = turn_of(end - 1)
        covered = (first_ordinal if head is None or head.covers is None else head.covers[0], last_ordinal)
        record = MemoryRecord(
            id=new_record_id(),
            session_id=session_id,
            kind="summary",
            text=text,
            data={"covers": [covered[0], covered[1]]},
            read_from=Window(first=first_id, last=last_id),
            derived_from=() if summary is None else (RecordId(summary.id),),
            made_by=HostAuthor(),
            created_at=self._clock(),
        )
        with self._notices.recording(record, (first_ordinal, last_ordinal)):  # its events commit with it
            await self._store.add_record(record, [turn_of(i)[0] for i in range(start, end)])
        self._summaries.setdefault(session_id, []).append(record)
        return (HistoryEntry(kind="summary", text=text, reply="", covers=covered), *view[end:])

    async def _summarize(
        self, session_id: SessionId, model_name: str, entries: Sequence[HistoryEntry], call: SummaryCall
    ) -> str:
        try:
            summarize = self._policy.summarize
            if summarize is not None:
                given = tuple(entries)

                async def run_summarize() -> object:
                    return await summarize(given)

                text: object = await call(None, run_summarize)
            else:
                request = ModelRequest(
                    session_id=session_id,
                    model=model_name,
                    kind="prompt",
                    text=SUMMARY_INSTRUCTION,
                    message=AiPromptMessage(text=SUMMARY_INSTRUCTION),
                    history=tuple(entries),
                )

                async def run_model() -> object:
                    return await self._model.respond(request)

                reply = await call(request, run_model)
                text = reply.text if isinstance(reply, Reply) else reply
        except CompactionError:
            raise
        except ModularError as exc:
            raise CompactionError(f"the history could not be compacted: the summarizer failed ({exc})") from exc
        except Exception as exc:  # a summarizer is outside code: its failure fails this turn only
            raise CompactionError(
                f"the history could not be compacted: the summarizer raised {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(text, str) or not text.strip():
            raise CompactionError(
                f"the history could not be compacted: the summarizer returned {text!r}; it must return the summary text"
            )
        return text

    def forget_cache(self) -> None:
        """Drop what it holds of the store (a retraction or erasure elsewhere); read again on next need."""
        self._summaries.clear()
