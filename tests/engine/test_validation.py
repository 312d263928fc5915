"""Input validation and session ownership: typed errors, and the stored session is untouched after an error."""

from __future__ import annotations

import pytest

from engine.errors import InvalidInput, SessionForbidden, TextTooLong
from engine.session import InMemorySessionStore, SessionState, SessionStatus, StaleSession
from protocol.http_chat import ChatRequest, FillSlotsRequest, TurnStatus
from tests.support.fakes import FakeModelClient, Rig, base_settings

LIMIT = 12


def rig_waiting_for_destination() -> Rig:
    settings = base_settings().model_copy(update={"max_text_chars": LIMIT})
    return Rig(models=FakeModelClient().sure("导航", "cabin_nav_to"), settings=settings)


async def waiting_session(rig: Rig) -> dict:
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="导航"))
    assert resp.status == TurnStatus.waiting_slot
    state = await rig.store.load("s1")
    assert state is not None and state.status == SessionStatus.waiting_slot
    return state.model_dump()


async def unchanged(rig: Rig, before: dict) -> None:
    after = await rig.store.load("s1")
    assert after is not None and after.model_dump() == before


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "\u3000"])
async def test_empty_or_whitespace_text_is_invalid(text: str) -> None:
    rig = rig_waiting_for_destination()
    before = await waiting_session(rig)
    calls = len(rig.models.calls)
    with pytest.raises(InvalidInput) as err:
        await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=text))
    assert type(err.value) is InvalidInput and err.value.field == "text" and err.value.code == "invalid_input"
    with pytest.raises(InvalidInput) as err:
        await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", text=text))
    assert err.value.field == "text"
    await unchanged(rig, before)
    assert len(rig.models.calls) == calls


async def test_fill_slots_needs_text_or_slots() -> None:
    rig = rig_waiting_for_destination()
    before = await waiting_session(rig)
    with pytest.raises(InvalidInput) as err:
        await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1"))
    assert err.value.field == "text"
    await unchanged(rig, before)


async def test_text_over_the_limit_is_too_long() -> None:
    rig = rig_waiting_for_destination()
    before = await waiting_session(rig)
    with pytest.raises(TextTooLong) as err:
        await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="去" * (LIMIT + 1)))
    assert err.value.field == "text" and err.value.code == "text_too_long"
    assert isinstance(err.value, InvalidInput)
    with pytest.raises(TextTooLong):
        await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", text="去" * (LIMIT + 1)))
    await unchanged(rig, before)


async def test_text_at_the_limit_is_accepted() -> None:
    rig = rig_waiting_for_destination()
    await waiting_session(rig)
    text = "去" + "公" * (LIMIT - 2) + "司"
    assert len(text) == LIMIT
    resp = await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", text=text))
    assert resp.status == TurnStatus.completed


async def test_default_limit_comes_from_settings() -> None:
    rig = Rig()
    limit = rig.settings.max_text_chars
    with pytest.raises(TextTooLong):
        await rig.engine.chat(ChatRequest(user_id="u1", text="好" * (limit + 1)))
    assert rig.models.calls == []


async def test_session_of_another_user_is_forbidden() -> None:
    rig = rig_waiting_for_destination()
    before = await waiting_session(rig)
    with pytest.raises(SessionForbidden) as err:
        await rig.engine.chat(ChatRequest(user_id="intruder", session_id="s1", text="去公司"))
    assert err.value.field == "session_id" and err.value.code == "session_forbidden"
    with pytest.raises(SessionForbidden):
        await rig.engine.fill_slots(
            FillSlotsRequest(user_id="intruder", session_id="s1", slots={"destination": "公司"})
        )
    await unchanged(rig, before)
    assert rig.vehicle("intruder").destination is None and rig.vehicle("u1").destination is None
    # the owner can still finish the task
    done = await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", text="去公司"))
    assert done.status == TurnStatus.completed


async def test_unknown_slot_in_fill_slots_is_invalid_and_changes_nothing() -> None:
    rig = rig_waiting_for_destination()
    before = await waiting_session(rig)
    with pytest.raises(InvalidInput) as err:
        await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", slots={"song": "晴天"}))
    assert err.value.field == "slots.song"
    with pytest.raises(InvalidInput) as err:
        await rig.engine.fill_slots(
            FillSlotsRequest(user_id="u1", session_id="s1", slots={"destination": "公司", "zzz": 1, "aaa": 2})
        )
    assert err.value.field == "slots.aaa"
    await unchanged(rig, before)
    assert rig.vehicle("u1").destination is None
    done = await rig.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", slots={"destination": "公司"}))
    assert done.status == TurnStatus.completed


# --------------------------------------------------------------------------- InMemorySessionStore


async def test_stale_version_save_raises() -> None:
    store = InMemorySessionStore(ttl_s=60)
    state = SessionState(session_id="s", user_id="u")
    await store.save(state)
    assert state.version == 1
    a, b = await store.load("s"), await store.load("s")
    a.turns = 1
    await store.save(a)
    assert a.version == 2
    b.turns = 99
    with pytest.raises(StaleSession):
        await store.save(b)
    kept = await store.load("s")
    assert kept.turns == 1 and kept.version == 2
    assert b.version == 1, "a rejected save must not bump the caller's version"


async def test_new_session_with_an_existing_id_is_stale() -> None:
    store = InMemorySessionStore(ttl_s=60)
    await store.save(SessionState(session_id="s", user_id="u"))
    with pytest.raises(StaleSession):
        await store.save(SessionState(session_id="s", user_id="u"))


async def test_store_returns_copies() -> None:
    store = InMemorySessionStore(ttl_s=60)
    state = SessionState(session_id="s", user_id="u", slots={"destination": "公司"})
    await store.save(state)
    state.slots["destination"] = "家"
    loaded = await store.load("s")
    assert loaded.slots == {"destination": "公司"}
    loaded.slots.clear()
    assert (await store.load("s")).slots == {"destination": "公司"}
    assert await store.load("missing") is None


async def test_expired_session_is_forgotten() -> None:
    store = InMemorySessionStore(ttl_s=-1)
    await store.save(SessionState(session_id="s", user_id="u"))
    assert await store.load("s") is None
