"""``--model SPEC`` and ``--record CASSETTE``: which model answers turns, and recording it.

``--model`` takes ``echo`` (the default, offline), ``openai:MODEL`` or
``openai:MODEL@BASE_URL`` (any OpenAI-compatible server at an ``http://`` or ``https://``
URL; the key comes from ``$OPENAI_API_KEY``) or ``replay:CASSETTE``. ``--record CASSETTE`` writes every model call
of the run to a cassette. Everything is checked while argparse parses (the cassette to
replay is read then), so a bad spec is a usage error (exit 2) naming it, never a traceback.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from modular_sdk import ModularError

from ..models._cassette import RecordingModel, ReplayModel
from ..models._echo import EchoModel
from ..models._openai import OpenAIModel
from ..models._protocol import Model

__all__ = ["add_model_options", "chosen_model", "model_spec"]

_FORMS = "echo, openai:MODEL, openai:MODEL@BASE_URL or replay:CASSETTE"


def model_spec(text: str) -> Model:
    """The model ``text`` names; `argparse.ArgumentTypeError` saying what to pass otherwise."""
    kind, colon, rest = text.partition(":")
    try:
        if text == "echo":
            return EchoModel()
        if kind == "openai" and colon:
            name, base_url = _split_base_url(rest)
            if not name:
                raise argparse.ArgumentTypeError(
                    f"{text!r} names no model; pass openai:MODEL, e.g. openai:gpt-4o-mini or "
                    "openai:llama3.2@http://localhost:11434/v1"
                )
            if base_url is None and "@" in name:
                tail = name.rpartition("@")[2]
                raise argparse.ArgumentTypeError(
                    f"{text!r}: {tail!r} after '@' is not an http:// or https:// URL; pass "
                    "openai:MODEL@http://HOST:PORT/v1 (a model name that holds '@' takes its base "
                    "URL after it: openai:NAME@https://api.openai.com/v1)"
                )
            if base_url is None:
                return OpenAIModel(name)
            return OpenAIModel(name, base_url=base_url)
        if kind == "replay" and colon:
            if not rest:
                raise argparse.ArgumentTypeError(f"{text!r} names no cassette; pass replay:path/to/cassette.jsonl")
            return ReplayModel(rest)
    except ModularError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    raise argparse.ArgumentTypeError(f"{text!r} is not a model; pass {_FORMS}")


def _split_base_url(rest: str) -> tuple[str, str | None]:
    """``MODEL@BASE_URL`` split at the ``@`` before ``http(s)://`` (a model name may hold ``@``)."""
    for scheme in ("@http://", "@https://"):
        at = rest.find(scheme)
        if at != -1:
            return rest[:at], rest[at + 1 :]
    return rest, None


def _cassette_to_write(text: str) -> str:
    folder = Path(text).parent
    if not text or text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a file path; pass e.g. --record cassettes/run.jsonl")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(
            f"cannot record to {text!r}: its folder {str(folder)!r} does not exist; create it first"
        )
    return text


class _Model(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        chosen: object = values  # what model_spec made of the text
        if isinstance(chosen, ReplayModel) and getattr(namespace, "record", None) is not None:
            _conflict(parser)
        setattr(namespace, self.dest, chosen)


class _Record(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(getattr(namespace, "model", None), ReplayModel):
            _conflict(parser)
        setattr(namespace, self.dest, values)


def _conflict(parser: argparse.ArgumentParser) -> None:
    parser.error(
        "--record records the model that answers, and --model replay:... answers from a cassette "
        "already; record with --model echo or openai:MODEL, or drop --record"
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--model SPEC`` (default ``echo``) and ``--record CASSETTE``."""
    parser.add_argument(
        "--model",
        type=model_spec,
        action=_Model,
        default="echo",
        metavar="SPEC",
        help=f"what answers turns: {_FORMS} (default echo, offline; openai reads $OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--record",
        type=_cassette_to_write,
        action=_Record,
        default=None,
        metavar="CASSETTE",
        help="write every model call to this cassette (JSON Lines) to replay later with --model replay:CASSETTE",
    )


def chosen_model(args: argparse.Namespace) -> Model:
    """The model ``--model`` and ``--record`` ask for (`EchoModel` when the command has neither).

    Starting a recording replaces the cassette, so call this once the run starts. Raises
    `InvalidArgumentError` when the cassette cannot be written.
    """
    given: object = getattr(args, "model", None)
    model: Model = given if isinstance(given, (EchoModel, OpenAIModel, ReplayModel)) else EchoModel()
    record: str | None = getattr(args, "record", None)
    if record is not None:
        return RecordingModel(model, record)
    return model
