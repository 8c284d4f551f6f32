"""RequestConverter: LMC chunks to flat dicts and messages, and our messages back to LMC."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from gui_agent.converter import (
    ChunkAssembler,
    CodeBlock,
    ContentAdded,
    MessageOpened,
    RequestConverter,
    agent_from_name,
)
from schema import (
    AgentName,
    ChatRequest,
    ImagePart,
    Message,
    MessageStatus,
    MessageType,
    Role,
)
from tests.backends.pictures import red_png

# The stream Open Interpreter documents for "What's 34/24?", with console progress noise.
OI_STREAM: list[dict[str, Any]] = [
    {"role": "assistant", "type": "code", "format": "python", "start": True},
    {"role": "assistant", "type": "code", "format": "python", "content": "34"},
    {"role": "assistant", "type": "code", "format": "python", "content": " / 24"},
    {"role": "assistant", "type": "code", "format": "python", "end": True},
    {
        "role": "computer",
        "type": "confirmation",
        "format": "execution",
        "content": {"type": "code", "format": "python", "content": "34 / 24"},
    },
    {"role": "computer", "type": "console", "start": True},
    {"role": "computer", "type": "console", "format": "active_line", "content": "1"},
    {"role": "computer", "type": "console", "format": "output", "content": "1.4166666666666667\n"},
    {"role": "computer", "type": "console", "format": "active_line", "content": None},
    {"role": "computer", "type": "console", "end": True},
    {"role": "assistant", "type": "message", "start": True},
    {"role": "assistant", "type": "message", "content": "The result"},
    {"role": "assistant", "type": "message", "content": " is 1.42."},
    {"role": "assistant", "type": "message", "end": True},
]


@pytest.fixture
def converter() -> RequestConverter:
    return RequestConverter()


# -- flatten -------------------------------------------------------------------------------------


def test_flatten_unnests_lists_and_sub_interpreter_output_without_mutating(
    converter: RequestConverter,
) -> None:
    nested: list[Any] = [
        {"role": "user", "type": "message", "content": "go"},
        [
            {"role": "assistant", "type": "message", "content": "plan"},
            [{"role": "assistant", "type": "code", "format": "python", "content": "x = 1"}],
        ],
        {
            "role": "assistant",
            "type": "message",
            "agent_name": "llm_planner",
            "content": [
                {"type": "message", "content": "sub says hi"},
                {"role": "computer", "type": "console", "format": "output", "content": "ok"},
                {"type": "message", "agent_name": "crew", "content": "crew answer"},
            ],
        },
        {
            "role": "computer",
            "type": "confirmation",
            "format": "execution",
            "content": {"type": "code", "format": "python", "content": "print(1)"},
        },
    ]
    before = copy.deepcopy(nested)

    flat = converter.flatten(nested)

    assert nested == before
    assert [chunk.get("content") for chunk in flat[:5]] == [
        "go",
        "plan",
        "x = 1",
        "sub says hi",
        "ok",
    ]
    assert flat[3] == {
        "type": "message",
        "content": "sub says hi",
        "role": "assistant",
        "agent_name": "llm_planner",
    }
    assert flat[4]["role"] == "computer"  # its own role wins
    assert flat[4]["agent_name"] == "llm_planner"
    assert flat[5]["agent_name"] == "crew"  # its own agent wins
    # The output is a copy: changing it leaves the input alone, down to nested payloads.
    flat[-1]["content"]["content"] = "rm -rf /"
    flat[0]["content"] = "changed"
    assert nested == before


def test_flatten_turns_a_bare_string_into_an_assistant_message(
    converter: RequestConverter,
) -> None:
    assert converter.flatten("hello") == [
        {"role": "assistant", "type": "message", "content": "hello"}
    ]
    assert converter.flatten(None) == []
    assert converter.flatten(iter([Message(role=Role.USER, content="typed")])) == [
        {"role": "user", "type": "message", "content": "typed"}
    ]


def test_flatten_keeps_content_lists_that_are_not_chunks(converter: RequestConverter) -> None:
    parts = [{"type": "text", "text": "a"}]
    chunk = {"role": "user", "type": "message", "content": parts}
    flat = converter.flatten(chunk)
    assert flat == [chunk]
    assert flat[0]["content"] is not parts


# -- extract_code --------------------------------------------------------------------------------


def test_extract_code_finds_fenced_blocks_with_their_languages(
    converter: RequestConverter,
) -> None:
    text = (
        "Here:\n"
        "```python\nprint('hi')\nx = 1\n```\n"
        "Then ```inline``` is not a block.\n"
        "```js title=demo\nconsole.log(1)\n```\n"
        "```\nplain\n```\n"
        "~~~bash\necho ok\n~~~\n"
        "  ```sh\n  ls\n   pwd\n  ```\n"
        "````markdown\n```python\nnested\n```\n````\n"
        "```ruby\nputs 1"
    )
    assert converter.extract_code(text) == [
        CodeBlock("python", "print('hi')\nx = 1"),
        CodeBlock("js", "console.log(1)"),
        CodeBlock("text", "plain"),
        CodeBlock("bash", "echo ok"),
        CodeBlock("sh", "ls\n pwd"),
        CodeBlock("markdown", "```python\nnested\n```"),
        CodeBlock("ruby", "puts 1"),  # unclosed: runs to the end
    ]


def test_extract_code_default_language_is_configurable() -> None:
    assert RequestConverter(default_language="python").extract_code("```\n1\n```") == [
        CodeBlock("python", "1")
    ]
    assert RequestConverter().extract_code("no code here") == []


# -- chunks_to_messages ----------------------------------------------------------------------------


def test_a_documented_open_interpreter_stream_becomes_whole_messages(
    converter: RequestConverter,
) -> None:
    before = copy.deepcopy(OI_STREAM)
    messages = converter.chunks_to_messages(OI_STREAM, agent=AgentName.AGENT_EXECUTOR)
    assert before == OI_STREAM

    assert [m.type for m in messages] == [
        MessageType.CODE,
        MessageType.CONFIRMATION,
        MessageType.CONSOLE,
        MessageType.MESSAGE,
    ]
    code, confirmation, console, reply = messages
    assert (code.content, code.language) == ("34 / 24", "python")
    assert (confirmation.content, confirmation.language) == ("34 / 24", "python")
    assert confirmation.display_only
    assert console.content == "1.4166666666666667\n"  # active_line chunks dropped
    assert console.metadata == {"lmc_role": "computer"}
    assert reply.content == "The result is 1.42."
    assert all(m.role is Role.ASSISTANT for m in messages)
    assert all(m.agent is AgentName.AGENT_EXECUTOR for m in messages)
    assert all(m.status is MessageStatus.COMPLETE for m in messages)


def test_images_become_image_messages_with_their_media_type(
    converter: RequestConverter,
) -> None:
    png = base64.b64encode(red_png()).decode()
    half = len(png) // 2
    chunks = [
        {"role": "computer", "type": "image", "format": "base64.png", "content": png},
        {"role": "computer", "type": "image", "format": "base64.jpg", "content": "/9j/4AAQ"},
        {"role": "assistant", "type": "image", "format": "url", "content": "https://x/y.png"},
        {"role": "computer", "type": "image", "content": "data:image/gif;base64,R0lGODlh"},
        {"role": "computer", "type": "image", "format": "base64.png", "start": True},
        {"role": "computer", "type": "image", "format": "base64.png", "content": png[:half]},
        {"role": "computer", "type": "image", "format": "base64.png", "content": png[half:]},
        {"role": "computer", "type": "image", "format": "base64.png", "end": True},
    ]
    messages = converter.chunks_to_messages(chunks, agent=AgentName.OTHER)
    assert [m.type for m in messages] == [MessageType.IMAGE] * 5
    assert [m.images for m in messages] == [
        (ImagePart(media_type="image/png", data=png),),
        (ImagePart(media_type="image/jpeg", data="/9j/4AAQ"),),
        (ImagePart(url="https://x/y.png"),),
        (ImagePart(media_type="image/gif", data="R0lGODlh"),),
        (ImagePart(media_type="image/png", data=png),),  # streamed image, joined
    ]


def test_an_image_that_cannot_be_kept_becomes_a_note_saying_why(
    converter: RequestConverter,
) -> None:
    """Kept as sent, it made a chat whose export every import refused."""
    png = base64.b64encode(red_png()).decode()
    chunks = [
        {"role": "assistant", "type": "image", "format": "base64.png", "content": "notbase64!!"},
        {"role": "assistant", "type": "image", "format": "base64.svg", "content": "PHN2Zz4="},
        {"role": "assistant", "type": "image", "format": "base64.jpg", "content": png},
        {"role": "assistant", "type": "image", "format": "url", "content": "ftp://x/y.png"},
    ]
    messages = converter.chunks_to_messages(chunks, agent=AgentName.OTHER)
    assert all(m.images == () for m in messages)
    assert [m.content for m in messages] == [
        "(An image the agent sent cannot be shown: its data is not base64.)",
        "(An image the agent sent cannot be shown: 'image/svg' is not an image type the app "
        "shows.)",
        "(An image the agent sent cannot be shown: the data is image/png, not image/jpeg as "
        "declared.)",
        "(An image the agent sent cannot be shown: only http(s) image addresses are shown.)",
    ]


def test_an_image_given_as_a_file_path_is_not_turned_into_a_file_reference(
    converter: RequestConverter,
) -> None:
    chunk = {"role": "computer", "type": "image", "format": "path", "content": "/etc/x.png"}
    (message,) = converter.chunks_to_messages([chunk], agent=AgentName.OTHER)
    assert message.type is MessageType.IMAGE
    assert message.images == ()


def test_agent_names_map_to_roles_case_insensitively(converter: RequestConverter) -> None:
    chunks = [
        {"role": "assistant", "type": "message", "content": "a", "agent_name": "Supervisor"},
        {"role": "assistant", "type": "message", "content": "b", "agent_name": "bob"},
        {"role": "assistant", "type": "message", "content": "c", "agent_name": "THOUGHT"},
    ]
    messages = converter.chunks_to_messages(chunks, agent=AgentName.CREW)
    assert [(m.agent, m.content) for m in messages] == [
        (AgentName.SUPERVISOR, "a"),
        (AgentName.CREW, "b"),
        (AgentName.THOUGHT, "c"),
    ]
    assert agent_from_name(None, AgentName.OTHER) is AgentName.OTHER
    assert agent_from_name(" llm_planner ", AgentName.OTHER) is AgentName.LLM_PLANNER


def test_flagless_chunks_of_one_kind_merge_and_a_start_begins_a_new_message(
    converter: RequestConverter,
) -> None:
    chunks = [
        {"role": "assistant", "type": "message", "content": "Hel"},
        {"role": "assistant", "type": "message", "content": "lo"},
        {"role": "assistant", "type": "code", "format": "bash", "content": "ls"},
        {"role": "assistant", "type": "message", "start": True, "content": "Bye"},
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "end": True},  # empty: no message
        {"role": "user", "type": "message", "content": "thanks"},
    ]
    messages = converter.chunks_to_messages(chunks, agent=AgentName.OTHER)
    assert [(m.role, m.type, m.content) for m in messages] == [
        (Role.ASSISTANT, MessageType.MESSAGE, "Hello"),
        (Role.ASSISTANT, MessageType.CODE, "ls"),
        (Role.ASSISTANT, MessageType.MESSAGE, "Bye"),
        (Role.USER, MessageType.MESSAGE, "thanks"),
    ]
    assert messages[1].language == "bash"


def test_unknown_chunk_types_are_ignored(converter: RequestConverter) -> None:
    chunks = [{"role": "server", "type": "status", "content": "busy"}]
    assert converter.chunks_to_messages(chunks, agent=AgentName.OTHER) == []


def test_the_assembler_streams_steps_and_keeps_an_interrupted_partial() -> None:
    assembler = ChunkAssembler(agent=AgentName.OTHER)
    assert assembler.feed({"role": "assistant", "type": "code", "start": True}) == []
    steps = assembler.feed({"role": "assistant", "type": "code", "format": "py", "content": "a"})
    assert isinstance(steps[0], MessageOpened)
    assert steps[0].message_type is MessageType.CODE
    assert steps[0].language == "py"
    assert steps[1] == ContentAdded(steps[0].message_id, "a")
    assert assembler.open_message_id == steps[0].message_id

    partial = assembler.interrupt()
    assert partial is not None
    assert (partial.id, partial.content, partial.status) == (
        steps[0].message_id,
        "a",
        MessageStatus.INTERRUPTED,
    )
    assert assembler.interrupt() is None
    assert assembler.finish() == []


# -- ours to LMC -------------------------------------------------------------------------------


def test_a_chat_request_becomes_the_user_dict_an_interpreter_expects(
    converter: RequestConverter,
) -> None:
    request = ChatRequest(
        session_id="s", text="What's 2+2?", images=(ImagePart(media_type="image/jpeg", data="AA"),)
    )
    assert converter.request_to_lmc(request) == [
        {"role": "user", "type": "message", "content": "What's 2+2?"},
        {"role": "user", "type": "image", "format": "base64.jpeg", "content": "AA"},
    ]
    assert converter.request_to_lmc("hi") == [converter.user_chunk("hi")]
    assert converter.user_chunk("hi") == {"role": "user", "type": "message", "content": "hi"}


def test_a_conversation_round_trips_through_lmc(converter: RequestConverter) -> None:
    conversation = [
        Message(role=Role.USER, content="compute"),
        Message(role=Role.ASSISTANT, type=MessageType.CODE, content="1+1", language="python"),
        Message(role=Role.ASSISTANT, type=MessageType.CONFIRMATION, content="1+1"),
        Message(role=Role.ASSISTANT, type=MessageType.CONSOLE, content="2\n"),
        Message(role=Role.ASSISTANT, content="It is 2."),
    ]
    lmc = converter.messages_to_lmc(conversation)
    assert lmc == [
        {"role": "user", "type": "message", "content": "compute"},
        {"role": "assistant", "type": "code", "format": "python", "content": "1+1"},
        {"role": "computer", "type": "console", "format": "output", "content": "2\n"},
        {"role": "assistant", "type": "message", "content": "It is 2."},
    ]
    back = converter.chunks_to_messages(lmc, agent=AgentName.OTHER)
    assert [(m.role, m.type, m.content) for m in back] == [
        (m.role, m.type, m.content) for m in conversation if not m.display_only
    ]
