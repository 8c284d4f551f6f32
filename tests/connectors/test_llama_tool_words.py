"""Which tools the embedded model is offered for a request (`relevant_tools`).

The 135M model calls a tool it is offered far more often than it should, so what it is
offered decides whether a person asking for a haiku is asked to approve a file write.
These run without the model: the offer is plain word matching.
"""

from __future__ import annotations

import pytest

from connectors.llama_mapping import plan_tool_use, relevant_tools
from gui_agent.tools.builtin import default_tools
from schema import Message, Role, SessionSettings, ToolSchema

BUILT_IN = default_tools().schemas()


def offered(text: str, tools: tuple[ToolSchema, ...] = BUILT_IN) -> list[str]:
    """The tool names offered for `text` as the app sends it (its system prompt first)."""
    system = Message(role=Role.SYSTEM, content=SessionSettings().system_prompt)
    plan = plan_tool_use([system, Message(role=Role.USER, content=text)], tools, "auto")
    assert plan is not None and plan.allow_answer
    return [tool.name for tool in plan.tools]


@pytest.mark.parametrize(
    "request_text",
    [
        # each was offered a built-in tool by a verb or one word of run_python's long
        # description, and the model called it for the first seven (seeds 7 and 11)
        "List the planets in order.",
        "Show me how to make pancakes.",
        "Write an email to my boss asking for a day off.",
        "How do I keep bread fresh?",
        "What do I need for a camping trip?",
        "Read me a short poem.",
        "Create a workout plan for beginners.",
        "Summarize the plot of Hamlet.",
        "Write a haiku about autumn.",
        "How does memory work in the brain?",
        "What time is it in Tokyo?",
        "Explain the process of mitosis.",
        # no file named: a fraction, "and/or", an abbreviation, a web address
        "Is 1/2 cup of sugar too much, e.g. for a cake?",
        "Salt and/or pepper on eggs?",
        "What is google.com?",
    ],
)
def test_a_verb_or_a_word_of_a_long_description_offers_no_tool(request_text: str) -> None:
    assert offered(request_text) == []


@pytest.mark.parametrize(
    ("request_text", "wanted"),
    [
        ("List the files in the current folder", "list_files"),
        ("What files are in my session folder?", "list_files"),
        ("Run python to compute 2**100", "run_python"),
        ("Calculate 17*23 with python", "run_python"),
        ("Read the file notes.txt", "read_file"),
        ("Open config.json and tell me the port", "read_file"),
        ("Show me what's in data/report.csv", "read_file"),
        ("Write 'hello' to greeting.txt", "write_file"),
        ("What is in ~/notes?", "list_files"),
        ("Create a file called todo.md with three items", "write_file"),
        ("Run this:\n```\nprint(sum(range(10)))\n```", "run_python"),
    ],
)
def test_a_request_naming_what_a_tool_works_on_offers_it(request_text: str, wanted: str) -> None:
    assert wanted in offered(request_text)


def test_a_custom_tool_is_offered_by_its_name_or_two_words_of_its_first_sentence() -> None:
    stocks = ToolSchema(
        name="quote",
        description="Look up the latest share price of a listed company. Prices lag by a day.",
    )
    assert relevant_tools("Get me a quote for ACME", [stocks]) == (stocks,)
    assert relevant_tools("What is the share price of ACME?", [stocks]) == (stocks,)
    # one word of the first sentence, or words only after it, are not enough
    assert relevant_tools("What is the price of bread?", [stocks]) == ()
    assert relevant_tools("Why do prices lag?", [stocks]) == ()


def test_plurals_and_word_stems_match() -> None:
    files = ToolSchema(name="list_files", description="List the files.")
    calculator = ToolSchema(name="calculator", description="Evaluate arithmetic.")
    assert relevant_tools("Which file is the newest?", [files]) == (files,)
    assert relevant_tools("calculate 3 + 4", [calculator]) == (calculator,)


def test_a_verb_naming_one_of_the_relevant_tools_narrows_the_offer_to_it() -> None:
    """The model picked list_files for "Read the file notes.txt" when offered all three."""
    assert offered("Read the file notes.txt") == ["read_file"]
    assert offered("List the files in the current folder") == ["list_files"]
    assert offered("Write 'hello' to greeting.txt") == ["write_file"]
    # no verb of a tool's name: every relevant tool stays on offer
    assert offered("Open config.json and tell me the port") == [
        "list_files",
        "read_file",
        "write_file",
    ]
