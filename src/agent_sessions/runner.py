"""The runner: runs an agent turn by turn and keeps the conversation in a session.

With ``session=...`` an application no longer threads history between runs::

    session = SQLiteSession("user_123", "conversations.db")
    await Runner.run(agent, "What's the weather?", session=session)
    await Runner.run(agent, "How about tomorrow?", session=session)  # remembers

It knows sessions only through the :class:`~agent_sessions.protocol.Session` protocol
(any object with ``session_id`` and the four async methods; ``session_settings`` is
optional) and keeps the Agents SDK's session semantics:

- the history is read once per run, honouring the resolved ``limit``
  (``RunConfig.session_settings`` laid over the session's own settings);
- the model's first input is the history followed by the new input (a string becomes a
  user message, a list is appended), unless ``RunConfig.session_input_callback``
  reshapes it;
- only the new turn's items are saved: the new input before the first model call, each
  tool turn (the model's calls with their outputs) after that turn, the final output at
  the end; old history is never saved again, whatever the callback returns;
- retrying a run whose model call failed before any answer (the same input, which the
  failed run already saved) neither saves nor sends that input twice;
- a tool call or output whose partner was cut off by the limit is not sent to the model;
- a failing ``add_items`` or model call propagates out of ``run`` and out of a stream;
- the models of every agent the run may reach are resolved before anything is saved, so
  an agent without a usable model fails without touching the session;
- a session with an ``after_run`` method (such as
  :class:`~agent_sessions.bounded.CompactingSession` or
  :class:`~agent_sessions.branches.BranchingSession`) has it called, and awaited if it
  returns an awaitable, once a run has ended normally and its items are saved: before
  :meth:`Runner.run` returns, and for a streamed run after ``stream_events()`` has
  delivered its last event and ended (so it never delays the stream; ``await
  result.wait()`` waits for it). A hook that accepts one positional argument is called
  as ``after_run(result)`` with the :class:`RunResult`; one that accepts none as
  ``after_run()``. Its failure is logged (logger ``agent_sessions``), never raised: the
  run itself succeeded;
- ``RunResult.usage`` is the run's token usage: the :class:`~agent_sessions.models.Usage`
  of every model call of the run summed (one request per call; a model that reports no
  usage adds a request with zero tokens), for streamed runs too.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import logging
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from .agent import Agent, RunContextWrapper
from .events import (
    AgentUpdatedStreamEvent,
    RunItemEventName,
    RunItemStreamEvent,
    StreamEvent,
    TextDeltaEvent,
)
from .items import (
    call_key,
    function_call_output,
    input_to_items,
    is_function_call,
    is_function_call_output,
    message_role,
    message_text,
)
from .models import (
    Model,
    ModelBehaviorError,
    ModelNotConfiguredError,
    ModelRequest,
    ModelResponse,
    TextDelta,
    Usage,
)
from .protocol import Item, SessionSettings, coerce_session_settings
from .tools import ToolArgumentsError

__all__ = [
    "DEFAULT_MAX_TURNS",
    "MaxTurnsExceeded",
    "ModelBehaviorError",
    "ModelNotConfiguredError",
    "RunCancelledError",
    "RunConfig",
    "RunResult",
    "RunResultStreaming",
    "Runner",
    "RunnerSession",
    "SessionInputCallback",
    "call_after_run",
]

DEFAULT_MAX_TURNS = 10

logger = logging.getLogger("agent_sessions")

SessionInputCallback: TypeAlias = Callable[
    [list[Item], list[Item]], list[Item] | Awaitable[list[Item]]
]
"""``callback(history, new_input) -> model_input``, sync or async. It receives copies."""


class RunnerSession(Protocol):
    """What the runner needs of a session: the :class:`~agent_sessions.protocol.Session`
    protocol, where ``session_settings`` is optional (as in the Agents SDK): a class with
    ``session_id`` and the four async methods is enough."""

    session_id: str

    async def get_items(self, limit: int | None = None) -> list[Item]: ...

    async def add_items(self, items: list[Item]) -> None: ...

    async def pop_item(self) -> Item | None: ...

    async def clear_session(self) -> None: ...


class MaxTurnsExceeded(RuntimeError):
    """The run needed more model calls than ``max_turns`` allows."""


class RunCancelledError(RuntimeError):
    """The results of a streamed run were read after :meth:`RunResultStreaming.cancel`."""


@dataclass(frozen=True)
class RunConfig:
    """Settings of one run.

    ``session_settings`` overrides the session's own settings for this run (its
    non-``None`` values win). ``session_input_callback`` builds the model's first input
    from ``(history, new_input)`` and must return a list of items.
    """

    session_settings: SessionSettings | None = None
    session_input_callback: SessionInputCallback | None = None

    @classmethod
    def coerce(cls, config: RunConfig | Mapping[str, Any] | None) -> RunConfig:
        """``config`` as a ``RunConfig``: a mapping of its fields (as the SDK accepts) is
        converted, unknown keys are a ``TypeError`` naming them."""
        if config is None:
            return cls()
        if isinstance(config, RunConfig):
            return config
        if isinstance(config, Mapping):
            unknown = sorted(str(key) for key in config if key not in _RUN_CONFIG_FIELDS)
            if unknown:
                raise TypeError(
                    f"unknown run_config keys: {', '.join(unknown)} (this runner knows "
                    f"{', '.join(sorted(_RUN_CONFIG_FIELDS))})"
                )
            return cls(
                session_settings=coerce_session_settings(config.get("session_settings")),
                session_input_callback=config.get("session_input_callback"),
            )
        raise TypeError(
            f"run_config must be a RunConfig, a dict or None, got {type(config).__name__}"
        )


_RUN_CONFIG_FIELDS = frozenset({"session_settings", "session_input_callback"})


@dataclass(frozen=True)
class RunResult:
    """The outcome of a finished run.

    ``input`` is this run's new input as items (without history); ``new_items`` every
    item the run produced; ``final_output`` the text of the last assistant message;
    ``usage`` the token usage of the run's model calls, summed.
    """

    input: list[Item]
    new_items: list[Item]
    final_output: str
    last_agent: Agent
    usage: Usage = field(default_factory=Usage)

    def to_input_list(self) -> list[Item]:
        """This run's input followed by its new items: the next run's input without a
        session."""
        return [*self.input, *self.new_items]


CancelMode: TypeAlias = Literal["immediate", "after_turn"]
"""How :meth:`RunResultStreaming.cancel` stops a run."""


class RunResultStreaming:
    """A streamed run. It starts at once, as a task of the running event loop, whether or
    not :meth:`stream_events` is iterated; its events wait in a queue for the iteration.
    Once the run has finished, :attr:`final_output` and the other results are available.

    Errors of the run (model, tool lookup, session) are raised from the iteration.
    :meth:`cancel`, breaking out of the iteration, or cancelling the iterating task stop
    the run; the session then holds the run's input (once it was saved) and every turn
    that was saved whole, never part of a turn (``add_items`` is atomic, also when
    cancelled).
    """

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
        self._error: BaseException | None = None
        self._iterated = False
        self._ended = False  # the run's events are all queued; only after_run may be left
        self._task = asyncio.get_running_loop().create_task(self._drive())
        # a callback, not a finally: a task cancelled before its first step runs no code
        self._task.add_done_callback(self._finished)

    async def _drive(self) -> None:
        async for event in self._run.events():
            self._queue.put_nowait(event)
        self._ended = True
        self._queue.put_nowait(None)  # the stream ends here: after_run does not delay it
        await self._run.after_run()

    def _finished(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled():
            self._error = task.exception()  # handed to whoever iterates the stream
        if not self._ended:
            self._queue.put_nowait(None)

    async def stream_events(self) -> AsyncGenerator[StreamEvent, None]:
        """The run's events, in order. May be iterated once; leaving the iteration early
        (``break``, ``aclose()``, a cancelled task) stops the run."""
        if self._iterated:
            raise RuntimeError("stream_events() can be iterated only once per run")
        self._iterated = True
        try:
            while (event := await self._queue.get()) is not None:
                yield event
            if self._error is not None:
                raise self._error
        finally:
            if not self._task.done() and not self._ended:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)

    async def wait(self) -> None:
        """Wait until the run's task is over: the run and the session's ``after_run`` hook
        (a compaction), which runs after the stream has ended. Never raises the run's
        error (:meth:`stream_events` does)."""
        await asyncio.gather(self._task, return_exceptions=True)

    def cancel(self, mode: CancelMode = "immediate") -> None:
        """Stop the run, as the Agents SDK's ``cancel`` does.

        ``"immediate"`` cancels the run's task where it is: the turn in progress is not
        saved (a write already under way completes whole or not at all).
        ``"after_turn"`` lets the current turn finish and be saved, then stops before the
        next model call. Either way :meth:`stream_events` then ends without an error, and
        the results raise :class:`RunCancelledError` (unless the run had already finished).
        """
        if mode == "immediate":
            self._task.cancel()
        elif mode == "after_turn":
            self._run.stop_after_turn = True
        else:
            raise ValueError(f"cancel mode must be 'immediate' or 'after_turn', got {mode!r}")

    @property
    def is_complete(self) -> bool:
        """Whether the run has stopped: finished, failed or cancelled."""
        return self._task.done()

    @property
    def final_output(self) -> str:
        return self.result.final_output

    @property
    def new_items(self) -> list[Item]:
        return self.result.new_items

    @property
    def last_agent(self) -> Agent:
        return self.result.last_agent

    @property
    def usage(self) -> Usage:
        """The token usage of the finished run (see :attr:`RunResult.usage`)."""
        return self.result.usage

    @property
    def result(self) -> RunResult:
        """The finished run's result; ``RuntimeError`` before the run has finished,
        :class:`RunCancelledError` after a cancelled one."""
        if self._run.result is not None:
            return self._run.result
        if self._task.cancelled() or self._run.stopped:
            raise RunCancelledError("the run was cancelled before it finished")
        if self._error is not None:
            raise RuntimeError(f"the run failed: {self._error!r}") from self._error
        raise RuntimeError("the run has not finished: iterate stream_events() to its end")


class Runner:
    """Runs agents: :meth:`run`, :meth:`run_sync` and :meth:`run_streamed`.

    ``starting_agent``, ``input``, ``context``, ``max_turns``, ``session`` and
    ``run_config`` (a :class:`RunConfig` or a dict of its fields) have the Agents SDK's
    names and meaning.
    """

    @classmethod
    async def run(
        cls,
        starting_agent: Agent,
        input: str | list[Item],
        *,
        context: Any = None,
        session: RunnerSession | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        run_config: RunConfig | Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Run ``starting_agent`` on ``input`` until the model answers without a tool call.

        With a ``session`` the run sees its history and saves its new items there.
        ``context`` reaches instructions functions as ``RunContextWrapper.context``.
        """
        run = _Run(
            starting_agent,
            input,
            session,
            max_turns,
            RunConfig.coerce(run_config),
            RunContextWrapper(context),
            streaming=False,
        )
        async for _ in run.events():
            pass
        assert run.result is not None  # events() ends only with a result or an exception
        await run.after_run()
        return run.result

    @classmethod
    def run_sync(
        cls,
        starting_agent: Agent,
        input: str | list[Item],
        *,
        context: Any = None,
        session: RunnerSession | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        run_config: RunConfig | Mapping[str, Any] | None = None,
    ) -> RunResult:
        """:meth:`run` for code without an event loop (it starts one). Inside a running
        loop it raises ``RuntimeError``: await :meth:`run` there."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # no loop running: the one case run_sync is for
        else:
            raise RuntimeError(
                "Runner.run_sync() cannot run inside an event loop; await Runner.run()"
            )
        return asyncio.run(
            cls.run(
                starting_agent,
                input,
                context=context,
                session=session,
                max_turns=max_turns,
                run_config=run_config,
            )
        )

    @classmethod
    def run_streamed(
        cls,
        starting_agent: Agent,
        input: str | list[Item],
        *,
        context: Any = None,
        session: RunnerSession | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        run_config: RunConfig | Mapping[str, Any] | None = None,
    ) -> RunResultStreaming:
        """:meth:`run` with events: the run starts at once (a task of the running event
        loop: call it from async code); iterate ``stream_events()`` on the returned object.
        Bad arguments (agent, input, session, max_turns, run_config) raise here, before
        the task starts."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "Runner.run_streamed() starts the run as a task: call it inside a running "
                "event loop (from async code)"
            ) from None
        run = _Run(
            starting_agent,
            input,
            session,
            max_turns,
            RunConfig.coerce(run_config),
            RunContextWrapper(context),
            streaming=True,
        )
        return RunResultStreaming(run)


@dataclass
class _Run:
    """One run's state; :meth:`events` drives it."""

    agent: Agent
    raw_input: str | list[Item]
    session: RunnerSession | None
    max_turns: int
    config: RunConfig
    context: RunContextWrapper[Any]
    streaming: bool
    result: RunResult | None = None
    generated: list[Item] = field(default_factory=list)
    stop_after_turn: bool = False
    stopped: bool = False
    models: dict[int, Model] = field(default_factory=dict)
    new_input: list[Item] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        if not isinstance(self.agent, Agent):
            raise TypeError(f"starting_agent must be an Agent, got {type(self.agent).__name__}")
        if isinstance(self.max_turns, bool) or not isinstance(self.max_turns, int):
            raise TypeError(f"max_turns must be an int >= 1, got {type(self.max_turns).__name__}")
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")
        if self.session is not None:
            _check_session(self.session)
        self.new_input = input_to_items(self.raw_input)

    async def events(self) -> AsyncIterator[StreamEvent]:
        new_input = self.new_input
        self._resolve_models()  # no model: fail before anything is saved
        instructions = await self.agent.get_instructions(self.context)
        model_input = await self._prepare_input(new_input)
        yield AgentUpdatedStreamEvent(self.agent)
        for turn in range(self.max_turns):
            if turn:
                instructions = await self.agent.get_instructions(self.context)
            model = self.models[id(self.agent)]
            response: ModelResponse | None = None
            request = ModelRequest(
                instructions, [*model_input, *self.generated], self.agent.tool_specs()
            )
            if self.streaming:
                async for event in model.stream(request):
                    if isinstance(event, TextDelta):
                        yield TextDeltaEvent(event.text, self.agent.name)
                    else:
                        response = event
                if response is None:
                    raise ModelBehaviorError("the model's stream ended without a response")
            else:
                response = await model.respond(request)
            self.usage += _call_usage(response)
            turn_items = [dict(item) for item in response.output]
            calls = [item for item in turn_items if is_function_call(item)]
            for item in turn_items:
                yield self._item_event(item)
            next_agent: Agent | None = None
            for call in calls:
                output, target = await self._execute(call, handing_off=next_agent is not None)
                next_agent = next_agent or target
                turn_items.append(output)
                event_name: RunItemEventName = "handoff_occurred" if target else "tool_output"
                yield RunItemStreamEvent(event_name, output, self.agent.name)
            await self._save(turn_items)
            self.generated += turn_items
            if not calls:
                self.result = RunResult(
                    new_input, self.generated, _final_text(turn_items), self.agent, self.usage
                )
                return
            if next_agent is not None:
                self.agent = next_agent
                yield AgentUpdatedStreamEvent(next_agent)
            if self.stop_after_turn:
                self.stopped = True
                return
        raise MaxTurnsExceeded(f"the run did not finish within max_turns={self.max_turns}")

    async def after_run(self) -> None:
        """The session's ``after_run`` hook, if it has one, given the result when it takes
        an argument; its failure is logged."""
        try:
            await call_after_run(self.session, self.result)
        except Exception:
            logger.exception(
                "after_run of session %r failed; the run's items are saved",
                getattr(self.session, "session_id", None),
            )

    def _resolve_models(self) -> None:
        """The model of every agent this run may reach, and each agent's tools checked."""
        pending = [self.agent]
        while pending:
            agent = pending.pop()
            if id(agent) in self.models:
                continue
            agent.tool_specs()  # a misconfigured agent fails before anything is saved
            self.models[id(agent)] = agent.get_model()
            pending.extend(agent.handoffs)

    async def _prepare_input(self, new_input: list[Item]) -> list[Item]:
        """The model's first input; saves the new input to the session."""
        if self.session is None:
            return new_input
        history = await _read_history(self.session, self.config)
        already_saved = _is_unanswered_tail(history, new_input)
        if already_saved:
            history = history[: len(history) - len(new_input)]
        callback = self.config.session_input_callback
        if callback is None:
            model_input, to_save = [*history, *new_input], new_input
        else:
            model_input, to_save = await _apply_callback(callback, history, new_input)
        if not (already_saved and to_save == new_input):
            await self._save(to_save)
        return _without_orphan_tool_items(model_input)

    async def _save(self, items: list[Item]) -> None:
        if self.session is not None and items:
            await self.session.add_items(items)

    async def _execute(self, call: Item, *, handing_off: bool) -> tuple[Item, Agent | None]:
        """The output item of ``call``, and the agent it hands off to (if it is a handoff)."""
        name, call_id = call.get("name"), str(call.get("call_id"))
        for target in self.agent.handoffs:
            if target.handoff_tool_name == name:
                if handing_off:
                    return function_call_output(call_id, "Error: only one handoff per turn"), None
                return function_call_output(call_id, json.dumps({"assistant": target.name})), target
        tool = next((tool for tool in self.agent.tools if tool.name == name), None)
        if tool is None:
            return function_call_output(call_id, f"Error: there is no tool named {name!r}"), None
        try:
            output = await tool.invoke(str(call.get("arguments", "")))
        except ToolArgumentsError as exc:
            output = f"Error: {exc}"
        except Exception as exc:  # a failing tool is the model's to handle, not a crash
            output = f"Error: tool {name} raised {type(exc).__name__}: {exc}"
        return function_call_output(call_id, output), None

    def _item_event(self, item: Item) -> RunItemStreamEvent:
        if is_function_call(item):
            handoff_names = {target.handoff_tool_name for target in self.agent.handoffs}
            name: RunItemEventName = (
                "handoff_requested" if item.get("name") in handoff_names else "tool_called"
            )
            return RunItemStreamEvent(name, item, self.agent.name)
        if message_role(item) == "assistant":
            return RunItemStreamEvent("message_output_created", item, self.agent.name)
        raise ModelBehaviorError(f"the model returned an item the runner cannot handle: {item!r}")


async def call_after_run(session: object, result: RunResult | None) -> None:
    """Call ``session.after_run`` as the runner does after a run: ``after_run(result)``
    when the hook can take one positional argument, else ``after_run()``; an awaitable
    it returns is awaited, its exceptions propagate. A session without the hook: nothing.
    For wrappers that hand the hook on to the session they hold."""
    hook = getattr(session, "after_run", None)
    if not callable(hook):
        return
    returned = hook(result) if _takes_an_argument(hook) else hook()
    if inspect.isawaitable(returned):
        await returned


def _call_usage(response: ModelResponse) -> Usage:
    """One model call's usage: one request, whatever the model counted as requests."""
    usage = getattr(response, "usage", None)
    if not isinstance(usage, Usage):
        return Usage(requests=1)
    return Usage(1, usage.input_tokens, usage.output_tokens, usage.total_tokens)


def _takes_an_argument(hook: Callable[..., object]) -> bool:
    """Whether ``hook`` can be called with one positional argument (``after_run(result)``);
    a hook whose signature cannot be read is called without one."""
    try:
        inspect.signature(hook).bind(None)
    except (TypeError, ValueError):
        return False
    return True


_SESSION_METHODS = ("get_items", "add_items", "pop_item", "clear_session")


def _check_session(session: object) -> None:
    """``TypeError`` unless ``session`` has the protocol's members (``session_settings``
    is optional, as in the Agents SDK)."""
    missing = [name for name in _SESSION_METHODS if not callable(getattr(session, name, None))]
    if not hasattr(session, "session_id"):
        missing.insert(0, "session_id")
    if missing:
        raise TypeError(
            f"session must have session_id and the async methods {', '.join(_SESSION_METHODS)}; "
            f"{type(session).__name__} lacks {', '.join(missing)}"
        )


async def _read_history(session: RunnerSession, config: RunConfig) -> list[Item]:
    # session_settings is optional: a session written for the SDK's protocol may lack it
    own = coerce_session_settings(getattr(session, "session_settings", None)) or SessionSettings()
    settings = own.resolve(config.session_settings)
    if settings.limit is None:
        history = await session.get_items()
    else:
        history = await session.get_items(limit=settings.limit)
    if history is None:
        return []  # a skeleton get_items that returns nothing: no history yet
    if not isinstance(history, list):
        raise TypeError(
            f"{type(session).__name__}.get_items() must return a list of items, "
            f"got {type(history).__name__}"
        )
    return history


def _is_unanswered_tail(history: list[Item], new_input: list[Item]) -> bool:
    """Whether ``history`` ends with ``new_input``: a run that saved this input failed
    before any answer, and this run is its retry."""
    return 0 < len(new_input) <= len(history) and history[-len(new_input) :] == new_input


async def _apply_callback(
    callback: SessionInputCallback, history: list[Item], new_input: list[Item]
) -> tuple[list[Item], list[Item]]:
    """The callback's model input, and the items of it that belong to the new turn."""
    history_copy, new_copy = copy.deepcopy(history), copy.deepcopy(new_input)
    combined = callback(history_copy, new_copy)
    if inspect.isawaitable(combined):
        combined = await combined
    if not isinstance(combined, list):
        raise TypeError(
            f"session_input_callback must return a list of items, got {type(combined).__name__}"
        )
    for index, item in enumerate(combined):
        if not isinstance(item, dict):
            raise TypeError(
                f"session_input_callback returned a {type(item).__name__} at index {index}, "
                "not an item (a dict)"
            )
    return combined, _new_turn_items(combined, history_copy, new_copy)


def _new_turn_items(combined: list[Item], history: list[Item], new_input: list[Item]) -> list[Item]:
    """The items of ``combined`` that are not history: new input items (each once) and
    items the callback made. History is recognised by identity, then by content."""
    history_ids, new_ids = {id(item) for item in history}, {id(item) for item in new_input}
    unmatched_history = Counter(_fingerprint(item) for item in history)
    seen: set[int] = set()
    new_items: list[Item] = []
    for item in combined:
        if id(item) in seen or id(item) in history_ids:
            continue
        seen.add(id(item))
        if id(item) not in new_ids and unmatched_history[_fingerprint(item)] > 0:
            unmatched_history[_fingerprint(item)] -= 1
            continue
        new_items.append(item)
    return new_items


def _fingerprint(item: Item) -> str:
    return json.dumps(item, sort_keys=True, default=repr)


def _without_orphan_tool_items(items: list[Item]) -> list[Item]:
    """``items`` without tool calls lacking their output and outputs lacking their call
    (a limit may cut a pair in two); model APIs refuse either."""
    call_ids = {call_key(item) for item in items if is_function_call(item)}
    output_ids = {call_key(item) for item in items if is_function_call_output(item)}
    if call_ids == output_ids:
        return items  # the common case: every pair complete
    paired = call_ids & output_ids
    return [
        item
        for item in items
        if not (is_function_call(item) or is_function_call_output(item)) or call_key(item) in paired
    ]


def _final_text(items: list[Item]) -> str:
    messages = [message_text(item) for item in items if message_role(item) == "assistant"]
    return messages[-1] if messages else ""
