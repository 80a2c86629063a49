"""Tools: an AI tool the *model* decides to call, with a typed, schema-checked input."""

from __future__ import annotations

import attrs

from modular_sdk import AiContributions, ModMetadata, ToolContext, define_mod, tool


@attrs.frozen
class SearchInput:
    """What to look for in the workspace."""

    pattern: str = attrs.field(metadata={"description": "Text to find"})
    max_results: int = 5


def search(query: SearchInput, ctx: ToolContext) -> list[str]:
    corpus = ["parser.py: def parse(text)", "lexer.py: def tokens(text)", "README.md: parse files"]
    return [line for line in corpus if query.pattern in line][: query.max_results]


mod = define_mod(
    metadata=ModMetadata(display_name="Code Search", description="Let the model search the workspace"),
    ai=AiContributions(
        tools=[tool(name="search", description="Find lines containing a pattern", input_type=SearchInput, run=search)]
    ),
)
