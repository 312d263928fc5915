"""Simulated cabin and order backends, registered as plugins by id (seed 003 §23).

Each user has one `World` — their car and their order book — that the plugins read and change. Where it
lives is the caller's choice (`Worlds`): in memory for tests and the in-process path, one PostgreSQL row per
user in the served app, committed with the turn that changed it.
"""

from __future__ import annotations

import abc
import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field


@dataclass(frozen=True)
class PluginResult:
    success: bool
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    changed: bool = True


class UnknownPlugin(Exception):
    pass


class Vehicle(BaseModel):
    window_open: bool = False
    sunroof_open: bool = False
    doors_locked: bool = True
    ac_on: bool = False
    temperature: float = 24.0
    fan_level: int = 2
    defog_front: bool = False
    defog_rear: bool = False
    music_playing: bool = False
    track: int = 0
    song: str | None = None
    volume: int = 10
    muted: bool = False
    lights_on: bool = False
    seat_heat: bool = False
    mirrors_folded: bool = False
    wiper_on: bool = False
    destination: str | None = None


FAN_MAX, VOLUME_MAX, VOLUME_STEP = 7, 30, 3
ORDER_STATUSES = ("pending_shipment", "shipped", "delivered")
STATUS_SAID = {"pending_shipment": "待发货", "shipped": "已发货", "delivered": "已签收", "cancelled": "已取消"}

Slots = dict[str, Any]
CabinPlugin = Callable[[Vehicle, Slots], PluginResult]


def _toggle(attr: str, value: bool, done: str, already: str) -> CabinPlugin:
    def run(v: Vehicle, slots: Slots) -> PluginResult:
        if getattr(v, attr) == value:
            return PluginResult(True, already, {attr: value}, changed=False)
        setattr(v, attr, value)
        return PluginResult(True, done, {attr: value})

    return run


def _set_ac(v: Vehicle, slots: Slots) -> PluginResult:
    v.ac_on, v.temperature = True, float(slots["temperature"])
    return PluginResult(
        True, f"空调已调到{slots['temperature']}度", {"temperature": slots["temperature"], "ac_on": True}
    )


def _fan(step: int) -> CabinPlugin:
    def run(v: Vehicle, slots: Slots) -> PluginResult:
        level = min(FAN_MAX, max(1, v.fan_level + step))
        changed, v.fan_level = level != v.fan_level, level
        return PluginResult(True, f"风量{'已' if changed else '已经是'}{level}档", {"fan_level": level}, changed)

    return run


def _volume(step: int) -> CabinPlugin:
    def run(v: Vehicle, slots: Slots) -> PluginResult:
        level = min(VOLUME_MAX, max(0, v.volume + step))
        changed, v.volume, v.muted = level != v.volume, level, False
        return PluginResult(True, f"音量{level}", {"volume": level}, changed)

    return run


def _navigate(v: Vehicle, slots: Slots) -> PluginResult:
    v.destination = str(slots["destination"])
    return PluginResult(True, f"开始导航去{v.destination}", {"destination": v.destination})


def _nav_cancel(v: Vehicle, slots: Slots) -> PluginResult:
    if v.destination is None:
        return PluginResult(True, "当前没有在导航", {}, changed=False)
    v.destination = None
    return PluginResult(True, "导航已结束", {})


def _play(v: Vehicle, slots: Slots) -> PluginResult:
    v.music_playing, v.song = True, slots.get("song") or v.song
    return PluginResult(True, f"开始播放{v.song or '音乐'}", {"playing": True, "song": v.song})


def _track(step: int) -> CabinPlugin:
    def run(v: Vehicle, slots: Slots) -> PluginResult:
        v.track, v.music_playing = max(0, v.track + step), True
        return PluginResult(True, "已切换到" + ("下一首" if step > 0 else "上一首"), {"track": v.track})

    return run


def _mute(v: Vehicle, slots: Slots) -> PluginResult:
    changed, v.muted = not v.muted, True
    return PluginResult(True, "已静音", {"muted": True}, changed)


CABIN_PLUGINS: dict[str, CabinPlugin] = {
    "plugin.cabin.navigation": _navigate,
    "plugin.cabin.navigation.cancel": _nav_cancel,
    "plugin.cabin.ac.on": _toggle("ac_on", True, "空调已打开", "空调已经开着了"),
    "plugin.cabin.ac.off": _toggle("ac_on", False, "空调已关闭", "空调本来就是关着的"),
    "plugin.cabin.ac_control": _set_ac,
    "plugin.cabin.fan.up": _fan(+1),
    "plugin.cabin.fan.down": _fan(-1),
    "plugin.cabin.defog.front_on": _toggle("defog_front", True, "前挡除雾已打开", "前挡除雾已经开着了"),
    "plugin.cabin.defog.rear_on": _toggle("defog_rear", True, "后挡除雾已打开", "后挡除雾已经开着了"),
    "plugin.cabin.window.open": _toggle("window_open", True, "车窗已打开", "车窗已经是打开的"),
    "plugin.cabin.window.close": _toggle("window_open", False, "车窗已关闭", "车窗已经是关着的"),
    "plugin.cabin.sunroof.open": _toggle("sunroof_open", True, "天窗已打开", "天窗已经是打开的"),
    "plugin.cabin.sunroof.close": _toggle("sunroof_open", False, "天窗已关闭", "天窗已经是关着的"),
    "plugin.cabin.doors.lock": _toggle("doors_locked", True, "车门已上锁", "车门已经锁好了"),
    "plugin.cabin.doors.unlock": _toggle("doors_locked", False, "车门已解锁", "车门已经是解锁状态"),
    "plugin.cabin.music_play": _play,
    "plugin.cabin.music.pause": _toggle("music_playing", False, "音乐已暂停", "音乐没有在播放"),
    "plugin.cabin.music.next": _track(+1),
    "plugin.cabin.music.previous": _track(-1),
    "plugin.cabin.volume.up": _volume(+VOLUME_STEP),
    "plugin.cabin.volume.down": _volume(-VOLUME_STEP),
    "plugin.cabin.volume.mute": _mute,
    "plugin.cabin.lights.on": _toggle("lights_on", True, "车灯已打开", "车灯已经开着了"),
    "plugin.cabin.lights.off": _toggle("lights_on", False, "车灯已关闭", "车灯已经是关着的"),
    "plugin.cabin.seat_heat.on": _toggle("seat_heat", True, "座椅加热已打开", "座椅加热已经开着了"),
    "plugin.cabin.seat_heat.off": _toggle("seat_heat", False, "座椅加热已关闭", "座椅加热本来就是关着的"),
    "plugin.cabin.mirror.fold": _toggle("mirrors_folded", True, "后视镜已折叠", "后视镜已经是折叠的"),
    "plugin.cabin.mirror.unfold": _toggle("mirrors_folded", False, "后视镜已展开", "后视镜已经是展开的"),
    "plugin.cabin.wiper.on": _toggle("wiper_on", True, "雨刷已打开", "雨刷已经开着了"),
    "plugin.cabin.wiper.off": _toggle("wiper_on", False, "雨刷已关闭", "雨刷已经是关着的"),
}


class World(BaseModel):
    """One user's simulated backends. An order seen for the first time gets a status derived from its id, so
    any id is queryable and a conversation is reproducible."""

    vehicle: Vehicle = Field(default_factory=Vehicle)
    orders: dict[str, str] = Field(default_factory=dict)

    def order_status(self, order_id: str) -> str:
        if order_id not in self.orders:
            digest = int(hashlib.sha256(order_id.encode()).hexdigest(), 16)
            self.orders[order_id] = ORDER_STATUSES[digest % len(ORDER_STATUSES)]
        return self.orders[order_id]


OrderPlugin = Callable[[World, Slots], PluginResult]


def _order_query(w: World, slots: Slots) -> PluginResult:
    oid = str(slots["order_id"])
    status = w.order_status(oid)
    return PluginResult(
        True, f"订单{oid}状态：{STATUS_SAID.get(status, status)}", {"order_id": oid, "order_status": status}, False
    )


def _logistics(w: World, slots: Slots) -> PluginResult:
    oid = slots.get("order_id")
    if not oid:
        return PluginResult(True, "您最近的包裹正在运输途中", {"logistics": "in_transit"}, False)
    status = w.order_status(str(oid))
    return PluginResult(
        True, f"订单{oid}物流状态：{STATUS_SAID.get(status, status)}", {"order_id": oid, "order_status": status}, False
    )


def _order_cancel(w: World, slots: Slots) -> PluginResult:
    oid = str(slots["order_id"])
    status = w.order_status(oid)
    if status == "cancelled":
        return PluginResult(True, f"订单{oid}已经取消过了", {"order_id": oid, "order_status": status}, False)
    if status != "pending_shipment":
        return PluginResult(False, f"订单{oid}已发货，无法直接取消", {"order_id": oid, "order_status": status}, False)
    w.orders[oid] = "cancelled"
    return PluginResult(True, f"订单{oid}已取消", {"order_id": oid, "order_status": "cancelled"})


ORDER_PLUGINS: dict[str, OrderPlugin] = {
    "plugin.order.query": _order_query,
    "plugin.logistics.query": _logistics,
    "plugin.order.cancel": _order_cancel,
    "plugin.service.transfer_human": lambda w, slots: PluginResult(True, "正在为您转接人工客服", {"queue_position": 1}),
}


class PluginRegistry:
    """Executes a plugin by id against one user's World; holds no state itself."""

    def knows(self, plugin_id: str) -> bool:
        return plugin_id in CABIN_PLUGINS or plugin_id in ORDER_PLUGINS

    def execute(self, plugin_id: str, *, world: World, slots: Slots) -> PluginResult:
        if plugin_id in CABIN_PLUGINS:
            return CABIN_PLUGINS[plugin_id](world.vehicle, slots)
        if plugin_id in ORDER_PLUGINS:
            return ORDER_PLUGINS[plugin_id](world, slots)
        raise UnknownPlugin(plugin_id)


class TurnWorld:
    """A user's World for one turn, loaded on first use only (most turns run no plugin). `at_hand`: loading reads
    nothing from the store (the world came with the session lease), so it is no phase of its own."""

    def __init__(self, load: Callable[[], Awaitable[World]], *, at_hand: bool = False) -> None:
        self._load = load
        self.at_hand = at_hand
        self.world: World | None = None
        self.changed = False

    async def get(self) -> World:
        if self.world is None:
            self.world = await self._load()
        return self.world


class Worlds(abc.ABC):
    """Where users' worlds live between turns."""

    @abc.abstractmethod
    async def load(self, user_id: str) -> World: ...

    @abc.abstractmethod
    async def save(self, user_id: str, world: World) -> None: ...

    def for_turn(self, user_id: str) -> TurnWorld:
        return TurnWorld(lambda: self.load(user_id))


class InMemoryWorlds(Worlds):
    def __init__(self) -> None:
        self._worlds: dict[str, World] = {}
        self._lock = asyncio.Lock()

    def world(self, user_id: str) -> World:
        """The stored world itself (tests read it)."""
        return self._worlds.setdefault(user_id, World())

    async def load(self, user_id: str) -> World:
        return self.world(user_id).model_copy(deep=True)

    async def save(self, user_id: str, world: World) -> None:
        async with self._lock:
            self._worlds[user_id] = world.model_copy(deep=True)
