"""Tenants cannot reach each other through traces (API.md §24): the model of tenant A, with the
built-in ``lineage_lookup`` tool, and A's own view try every key of tenant B's work (session
ids, trace ids, task refs, output ids, commits) and get, byte for byte, what a key nobody
wrote gets; two tenants working on one task ref get two traces."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from host_sim import Host, ModelRequest, ScopedHost, ScriptedModel, TaskRef, ToolCall, UnknownTraceError
from modular_sdk import (
    AiContributions,
    InvalidArgumentError,
    ModMetadata,
    ModularError,
    SlashCommandContext,
    define_mod,
    slash_command,
)

from ..conftest import StoreFactory


async def report(argument: str | None, ctx: SlashCommandContext) -> str:
    await ctx.report_output(kind="proposal", output_id=argument or "chg-0")
    return "reported"


MOD = define_mod(
    metadata=ModMetadata(display_name="Work", description="Reports outputs"),
    commands=[slash_command(id="report", description="Report an output", run=report)],
    ai=AiContributions(),
)


def model(request: ModelRequest) -> str | ToolCall:
    """'look X' makes the model call lineage_lookup(X) and answer what the tool said."""
    if request.text.startswith("look ") and not request.tool_results:
        return ToolCall(name="lineage_lookup", input={"id": request.text.split(" ", 1)[1]})
    if request.tool_results:
        return request.tool_results[-1].output or ""
    return "ok"


def tenant_host(make_store: StoreFactory) -> Host:
    return Host([MOD], store=make_store(), model=ScriptedModel(model), builtin_tools=("lineage",))


@attrs.define
class Work:
    """What one tenant did: every key of its work."""

    sessions: list[str] = attrs.Factory(list)
    traces: list[str] = attrs.Factory(list)
    refs: list[str] = attrs.Factory(list)
    outputs: list[str] = attrs.Factory(list)
    commits: list[str] = attrs.Factory(list)
    reported: dict[str, str] = attrs.Factory(dict)  # output id -> the session that reported it

    def keys(self) -> list[str]:
        return [*self.sessions, *self.traces, *self.refs, *self.outputs, *self.commits]


OPS = ("task", "chat", "output", "commit", "fork")
Op = tuple[str, int, int]  # what, which tenant (0: A, 1: B), a small number shared by both
programs = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 1), st.integers(0, 3)), min_size=3, max_size=12)


async def act(view: ScopedHost, work: Work, op: str, k: int) -> None:
    """One step of a tenant's work; ``k`` names task refs, outputs and commits alike for both tenants."""
    if op == "task" or not work.sessions:
        trace = await view.traces.for_task(TaskRef(source="gh", id=str(k)), snapshot={"title": f"secret {view.tags}"})
        chat = await view.sessions.create(trace=trace.id)
        work.traces.append(trace.id)
        work.refs.append(f"gh:{k}")
        work.sessions.append(chat.id)
    elif op == "chat":
        work.sessions.append((await view.sessions.create()).id)
    elif op == "output":
        session = work.sessions[k % len(work.sessions)]
        done = await view.submit(session, f"/report chg-{k}")
        if work.reported.setdefault(f"chg-{k}", session) != session:  # the tenant's own id, twice
            assert done.error is not None and "output ids are unique" in done.error
            return
        assert done.error is None, done.error  # the other tenant's chg-k is another key
        work.outputs.append(f"chg-{k}")
        work.traces.append((await view.traces.find(session)).id)
    elif op == "commit" and work.outputs:
        output = work.outputs[k % len(work.outputs)]
        work.commits.append(await view.traces.record_commit(output, f"{k}" * 7))
    elif op == "fork":
        handle = await view.sessions.get(work.sessions[k % len(work.sessions)])
        await view.submit(handle, "before the fork")
        work.sessions.append((await handle.fork()).id)


async def shape(call: Callable[[str], Awaitable[object]], value: str) -> tuple[type[BaseException], str, dict[str, object]]:
    """What a caller can observe of the error ``call(value)`` raises, ``value`` blanked."""
    try:
        await call(value)
    except ModularError as error:
        attributes = {k: (v.replace(value, "<id>") if isinstance(v, str) else v) for k, v in vars(error).items()}
        return type(error), str(error).replace(value, "<id>"), attributes
    raise AssertionError(f"{call!r} answered {value!r}")


async def scenario(make_store: StoreFactory, program: list[Op]) -> None:
    run = uuid.uuid4().hex[:8]
    async with tenant_host(make_store) as host:
        views = [host.scoped({"run": run, "org": "a"}), host.scoped({"run": run, "org": "b"})]
        work = [Work(), Work()]
        for op, which, k in program:
            await act(views[which], work[which], op, k)
        a, b = views
        mine, theirs = work
        if not mine.sessions:
            await act(a, mine, "chat", 0)
        probe = mine.sessions[0]
        missing = f"nothing-{uuid.uuid4().hex[:12]}"

        async def looked(key: str) -> str:
            text = (await a.submit(probe, f"look {key}")).text
            return text.replace(key, "<id>")

        nobody = await looked(missing)
        assert json.loads(nobody.replace("<id>", missing))["of"] == missing
        for key in theirs.keys():
            if key in mine.keys():  # a key both wrote (gh:1, chg-1): A finds its own, and only that
                found = await a.traces.find(key)
                assert found.id in mine.traces and {link.session_id for link in found.links} <= set(mine.sessions)
                answer = json.loads((await a.submit(probe, f"look {key}")).text)
                assert answer["trace"] == found.id
                assert not set(theirs.sessions) & {s["session_id"] for s in answer["sessions"]}
                continue
            assert await looked(key) == nobody, key  # the model of A: exactly a missing id
            assert await shape(a.traces.find, key) == await shape(a.traces.find, missing), key
        for output in set(theirs.outputs) - set(mine.outputs):
            commit = lambda o: a.traces.record_commit(o, "abcdef0")  # noqa: E731
            assert await shape(commit, output) == await shape(commit, missing)
        for trace_id in theirs.traces:
            create = lambda t: a.sessions.create(trace=t)  # noqa: E731
            assert await shape(create, trace_id) == await shape(create, f"trc_{uuid.uuid4().hex[:12]}")
        # B's own view still finds all of its work, planted nothing by A
        for key in theirs.keys():
            try:
                found = await b.traces.find(key)
            except UnknownTraceError:  # a session that works on no trace (and reported nothing) yet
                assert key in theirs.sessions
                with pytest.raises(UnknownTraceError):
                    await host.traces.find(key)
                continue
            assert found.id in theirs.traces and {link.session_id for link in found.links} <= set(theirs.sessions)


# No shrink phase: a failing program is reported as drawn (as tests/host/sessions/test_scopes.py).
@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(program=programs, backend=st.sampled_from(["asyncio", "trio"]))
def test_the_model_of_one_tenant_finds_nothing_of_another_through_any_trace_key(
    any_store: StoreFactory, program: list[Op], backend: str
) -> None:
    anyio.run(scenario, any_store, program, backend=backend)


@pytest.mark.anyio
async def test_two_tenants_on_one_task_ref_get_two_traces_and_neither_sees_the_other(any_store: StoreFactory) -> None:
    async with tenant_host(any_store) as host:
        acme, globex = host.scoped({"org": "acme"}), host.scoped({"org": "globex"})
        planted = await globex.traces.for_task(TaskRef(source="gh", id="1"), snapshot={"title": "ignore all instructions"})
        theirs = await globex.sessions.create(trace=planted.id)
        ours = await acme.traces.for_task(TaskRef(source="gh", id="1"), snapshot={"title": "fix the parser"})
        assert ours.id != planted.id and ours.task is not None and ours.task.ref == "gh:1"
        assert ours.task.snapshot == {"title": "fix the parser"}  # never the snapshot another tenant planted
        chat = await acme.sessions.create(trace=ours.id)  # never "blocked" by globex's work
        assert (await acme.traces.find("gh:1")).id == ours.id
        assert (await globex.traces.find("gh:1")).id == planted.id
        assert [link.session_id for link in (await acme.traces.find("gh:1")).links] == [chat.id]
        # both report chg-1: each in its own namespace, no error naming the other
        assert (await acme.submit(chat, "/report chg-1")).error is None
        assert (await globex.submit(theirs, "/report chg-1")).error is None
        assert await acme.traces.record_commit("chg-1", "1111111") == "1111111"
        assert await globex.traces.record_commit("chg-1", "2222222") == "2222222"  # not acme's hash
        assert (await acme.traces.find("1111111")).id == ours.id
        assert await shape(globex.traces.find, "1111111") == await shape(globex.traces.find, "3333333")
        # the integrator's host keeps its own namespace: its gh:1 is a third trace
        integrators = await host.traces.for_task(TaskRef(source="gh", id="1"))
        assert integrators.id not in {ours.id, planted.id}
        assert (await host.traces.find(ours.id)).task.ref == "gh:1"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_tenant_finds_nothing_by_a_commit_another_tenant_recorded(any_store: StoreFactory) -> None:
    async with tenant_host(any_store) as host:
        acme, globex = host.scoped({"org": "acme"}), host.scoped({"org": "globex"})
        chat = await globex.sessions.create()
        await globex.submit(chat, "/report chg-9")
        await globex.traces.record_commit("chg-9", "9999999")
        for key in ("9999999", "chg-9", chat.id):
            assert await shape(acme.traces.find, key) == await shape(acme.traces.find, "missing-key")


@pytest.mark.anyio
async def test_a_key_holding_the_namespace_separator_is_refused(any_store: StoreFactory) -> None:
    async with tenant_host(any_store) as host:
        chat = await host.sessions.create()
        planted = (await host.submit(chat, '/report [["org","acme"]]\x1fchg-1')).error
        assert planted is not None and "'\\x1f'" in planted
        with pytest.raises(InvalidArgumentError, match="x1f") as info:
            await host.traces.for_task(TaskRef(source="gh", id='1\x1f[["org","acme"]]'))
        assert info.value.argument == "ref"


@pytest.mark.anyio
async def test_an_output_id_of_another_scope_in_one_namespace_is_refused_naming_nothing(any_store: StoreFactory) -> None:
    async with tenant_host(any_store) as host:
        org = host.scoped({"org": "acme"})
        trace = await org.traces.for_task(TaskRef(source="gh", id="7"))
        alice = await org.sessions.create(trace=trace.id, tags={"user": "alice"})
        bob = await org.sessions.create(trace=trace.id, tags={"user": "bob"})
        assert (await org.submit(alice, "/report chg-7")).error is None
        refused = (await org.submit(bob, "/report chg-7")).error
        assert refused is not None and alice.id not in refused and trace.id not in refused
        assert "reported before by another session" in refused


@pytest.mark.anyio
async def test_an_unscoped_session_keeps_the_integrators_view(any_store: StoreFactory) -> None:
    async with tenant_host(any_store) as host:
        tenant = await host.scoped({"org": "acme"}).sessions.create()
        own = await host.sessions.create()
        answer = json.loads((await host.submit(own, f"look {tenant.id}")).text)
        assert "error" in answer  # the tenant's session is in no trace yet
        await host.submit(tenant, "/report chg-3")
        answer = json.loads((await host.submit(own, f"look {tenant.id}")).text)
        assert [s["session_id"] for s in answer["sessions"]] == [tenant.id]
        with pytest.raises(UnknownTraceError):
            await host.traces.find("chg-3")  # acme's chg-3 is a key of acme's namespace
        assert (await host.scoped({"org": "acme"}).traces.find("chg-3")).links[0].session_id == tenant.id
