"""The API under pressure: guesses sent all at once, tokens with claims nobody issues,
answers that come twice, edits while a turn runs, streams read slowly or dropped."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from jose import jwt

from backends.api import LoginThrottles
from connectors.scripted import call
from gui_agent.auth import LoginThrottle
from schema import ApprovalRequested, MessageType, Role, TextDelta
from tests.backends.api.live import SECRET, Api, Backend, is_idle, running_backend

ALICE = ("alice", "alice-password-1")
GUESSES = 24
NOW = 1_000.0


def frozen() -> float:
    """A clock that never moves: no throttle wait ever runs out during the test."""
    return NOW


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Backend]:
    """Password login, with throttles whose clock stands still."""
    throttles = LoginThrottles(
        by_user=LoginThrottle(clock=frozen),
        by_address=LoginThrottle(free_attempts=20, clock=frozen),
    )
    with running_backend(tmp_path, users=[ALICE], throttles=throttles) as backend:
        yield backend


async def _guess_at_once(base_url: str, count: int) -> list[int]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        answers = await asyncio.gather(
            *(
                http.post("/api/login", json={"username": "alice", "password": f"guess-{n}"})
                for n in range(count)
            )
        )
    return [answer.status_code for answer in answers]


def test_guesses_sent_all_at_once_are_throttled_like_guesses_in_a_row(guarded: Backend) -> None:
    """Five wrong passwords are free, then each costs a wait. Sent in one burst, the
    guesses must not all be checked before the first failure is counted."""
    statuses = asyncio.run(_guess_at_once(guarded.base_url, GUESSES))
    free = LoginThrottle().free_attempts
    assert sorted(set(statuses)) == [401, 429]
    assert statuses.count(401) == free + 1  # the attempts that found no wait were checked
    assert statuses.count(429) == GUESSES - free - 1


def test_a_token_with_a_session_scope_is_refused(backend: Backend) -> None:
    """No token is issued with `sid`; one signed with the server's key that carries it is
    refused by every endpoint rather than honoured as full access."""
    api = backend.client().login()
    session_id = api.create_session()
    issued = backend.tokens.verify(api.token or "")
    now = int(issued.issued_at.timestamp())
    claims = {"sub": "local", "iat": now, "exp": now + 600, "iss": "gui-agent", "jti": "x"}
    scoped = backend.client(jwt.encode({**claims, "sid": session_id}, SECRET, algorithm="HS256"))
    for url in (f"/api/sessions/{session_id}", "/api/sessions", "/api/models"):
        refused = scoped.get(url)
        assert refused.status_code == 401, (url, refused.text)
        assert "never issues" in refused.json()["error"]["message"]
    # the same token without the claim is good: only the scope is what is refused
    plain = backend.client(jwt.encode(claims, SECRET, algorithm="HS256"))
    assert plain.get(f"/api/sessions/{session_id}").status_code == 200
    assert "sid" not in jwt.get_unverified_claims(api.token or "")


# -- 409: well formed, but not now ----------------------------------------------------------


def error_of(response: httpx.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, str] = body["error"]
    return error


def test_a_second_answer_to_an_approval_is_409_and_changes_nothing(
    backend: Backend, api: Api
) -> None:
    backend.scripted.push(call("run_python", code="print(6*7)"), "Done.")
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}/approvals"
    with api.events(session_id) as stream:
        api.send(session_id, "compute")
        asked = stream.until(lambda e: isinstance(e, ApprovalRequested))[-1]
        assert isinstance(asked, ApprovalRequested)
        first = api.post(f"{url}/{asked.approval_id}", json={"decision": "deny", "note": "no"})
        assert first.status_code == 200, first.text
        again = api.post(f"{url}/{asked.approval_id}", json={"decision": "allow_once"})
        stream.until(is_idle)
    assert again.status_code == 409, again.text
    assert error_of(again)["code"] == "conflict"
    assert "already answered" in error_of(again)["message"]
    later = api.post(f"{url}/{asked.approval_id}", json={"decision": "allow_once"})
    assert later.status_code == 409 and "deny" in error_of(later)["message"]
    confirmations = [m for m in api.messages(session_id) if m.type is MessageType.CONFIRMATION]
    assert [m.metadata["decision"] for m in confirmations] == ["deny"]  # the first answer holds
    never = api.post(f"{url}/never-asked", json={"decision": "allow_once"})
    assert never.status_code == 404 and error_of(never)["code"] == "not_found"
    malformed = api.post(f"{url}/{asked.approval_id}", json={"decision": "perhaps"})
    assert malformed.status_code == 400


def test_an_approval_closed_by_stop_is_409(backend: Backend, api: Api) -> None:
    backend.scripted.push(call("run_python", code="print(1)"), "Done.")
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "compute")
        asked = stream.until(lambda e: isinstance(e, ApprovalRequested))[-1]
        assert isinstance(asked, ApprovalRequested)
        assert api.post(f"/api/sessions/{session_id}/stop").json() == {"stopped": True}
        stream.until(is_idle)
    late = api.post(
        f"/api/sessions/{session_id}/approvals/{asked.approval_id}",
        json={"decision": "allow_once"},
    )
    assert late.status_code == 409, late.text
    assert asked.approval_id in error_of(late)["message"]


def test_retry_edit_and_clear_while_a_turn_runs_are_409_and_change_nothing(api: Api) -> None:
    session_id = api.create_session(model="slow")
    control = f"/api/sessions/{session_id}/control"
    with api.events(session_id) as stream:
        api.send(session_id, "count slowly")
        stream.until(lambda e: isinstance(e, TextDelta))
        for body in (
            {"action": "retry"},
            {"action": "edit_last", "text": "count faster"},
            {"action": "clear"},
        ):
            refused = api.post(control, json=body)
            assert refused.status_code == 409, (body, refused.text)
            message = error_of(refused)["message"]
            assert "a turn is running" in message and f"/api/sessions/{session_id}/stop" in message
        detail = api.session(session_id)
        assert detail["busy"] and detail["messages"][0]["content"] == "count slowly"
        assert api.post(f"/api/sessions/{session_id}/stop").json() == {"stopped": True}
        stream.until(is_idle)
    assert api.post(control, json={"action": "clear"}).status_code == 200


def test_two_retries_at_once_start_one_turn_and_the_other_is_409(
    backend: Backend, api: Api
) -> None:
    """A double click on Retry: one new turn, and a clear refusal for the other, whichever
    arrives first."""
    session_id = api.create_session(model="slow")
    control = f"/api/sessions/{session_id}/control"
    with api.events(session_id) as stream:
        api.send(session_id, "question")
        stream.until(lambda e: isinstance(e, TextDelta))
        assert api.post(f"/api/sessions/{session_id}/stop").json() == {"stopped": True}
        stream.until(is_idle)
        clients = [backend.client(api.token), backend.client(api.token)]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda c: c.post(control, json={"action": "retry"}), clients))
        assert sorted(a.status_code for a in answers) == [202, 409], [a.text for a in answers]
        refused = next(a for a in answers if a.status_code == 409)
        assert error_of(refused)["code"] == "conflict"
        stream.until(lambda e: isinstance(e, TextDelta))
        assert api.post(f"/api/sessions/{session_id}/stop").json() == {"stopped": True}
        stream.until(is_idle)
    users = [m.content for m in api.messages(session_id) if m.role is Role.USER]
    assert users == ["question"]  # retried once, not twice


# -- event streams: dropped, resumed, read slowly ------------------------------------------


def test_a_stream_dropped_mid_turn_resumes_with_no_gap_and_no_duplicate(api: Api) -> None:
    """A client loses its connection while a reply streams: the turn goes on, and
    reconnecting with the last id it saw gives exactly the events after it."""
    session_id = api.create_session(model="slow")
    with api.events(session_id) as watcher:  # another tab, reading all along
        with api.events(session_id) as first:
            api.send(session_id, "count")
            before = first.until(lambda e: isinstance(e, TextDelta) and e.delta == "tick5 ")
            last_id = f"{first.hello['epoch']}-{before[-1].seq}"
        # disconnected; the run goes on meanwhile
        watched = watcher.until(lambda e: isinstance(e, TextDelta) and e.delta == "tick40 ")
        with api.events(session_id, last_event_id=last_id) as resumed:
            assert resumed.hello["resync"] is False and resumed.hello["busy"] is True
            after = resumed.until(lambda e: isinstance(e, TextDelta) and e.delta == "tick60 ")
            assert api.post(f"/api/sessions/{session_id}/stop").json() == {"stopped": True}
            after += resumed.until(is_idle)
        watched += watcher.until(is_idle)
    seqs = [e.seq for e in before + after]
    assert seqs == list(range(1, len(seqs) + 1))  # contiguous: nothing lost, nothing twice
    assert [e.model_dump() for e in before + after] == [e.model_dump() for e in watched]
    ticks = "".join(e.delta for e in before + after if isinstance(e, TextDelta))
    assert ticks.startswith("tick0 tick1 tick2 ") and "tick60 " in ticks
    reply = api.messages(session_id)[1]
    assert reply.content == ticks  # the saved reply is what the client was shown


def test_a_client_that_reads_slowly_neither_stalls_the_turn_nor_misses_events(
    backend: Backend, api: Api
) -> None:
    """One client opens the stream and reads nothing until the turn is over; the turn
    ends for everyone else as usual, and the slow client then gets every event in order."""
    backend.scripted.push("A reply with a few words in it, streamed piece by piece.")
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}/events"
    slow = backend.client(api.token)
    with slow.http.stream("GET", url, headers=slow.headers) as held:
        assert held.status_code == 200
        with api.events(session_id) as fast:
            api.send(session_id, "go")
            seen = fast.until(is_idle)
        lines = held.iter_lines()
        ids: list[int] = []
        while len(ids) < len(seen):
            line = next(lines)
            if line.startswith("id: "):
                ids.append(int(line.rsplit("-", 1)[1]))
    assert ids == [e.seq for e in seen]
    assert api.session(session_id)["state"] == "STOP"
