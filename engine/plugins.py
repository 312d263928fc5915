"""Simulated cabin and order backends with state, registered as plugins by id (seed 003 §23)."""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PluginResult:
    success: bool
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    changed: bool = True


class UnknownPlugin(Exception):
    pass


@dataclass
class Vehicle:
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


def _toggle(attr: str, value: bool, done: str, already: str) -> Callable[[Vehicle, dict], PluginResult]:
    def run(v: Vehicle, slots: dict) -> PluginResult:
        if getattr(v, attr) == value:
            return PluginResult(True, already, {attr: value}, changed=False)
        setattr(v, attr, value)
        return PluginResult(True, done, {attr: value})
    return run


def _set_ac(v: Vehicle, slots: dict) -> PluginResult:
    v.ac_on, v.temperature = True, float(slots["temperature"])
    return PluginResult(True, f"空调已调到{slots['temperature']}度", {"temperature": slots["temperature"], "ac_on": True})


def _fan(step: int) -> Callable[[Vehicle, dict], PluginResult]:
    def run(v: Vehicle, slots: dict) -> PluginResult:
        level = min(FAN_MAX, max(1, v.fan_level + step))
        changed, v.fan_level = level != v.fan_level, level
        return PluginResult(True, f"风量{'已' if changed else '已经是'}{level}档", {"fan_level": level}, changed)
    return run


def _volume(step: int) -> Callable[[Vehicle, dict], PluginResult]:
    def run(v: Vehicle, slots: dict) -> PluginResult:
        level = min(VOLUME_MAX, max(0, v.volume + step))
        changed, v.volume, v.muted = level != v.volume, level, False
        return PluginResult(True, f"音量{level}", {"volume": level}, changed)
    return run


def _navigate(v: Vehicle, slots: dict) -> PluginResult:
    v.destination = str(slots["destination"])
    return PluginResult(True, f"开始导航去{v.destination}", {"destination": v.destination})


def _nav_cancel(v: Vehicle, slots: dict) -> PluginResult:
    if v.destination is None:
        return PluginResult(True, "当前没有在导航", {}, changed=False)
    v.destination = None
    return PluginResult(True, "导航已结束", {})


def _play(v: Vehicle, slots: dict) -> PluginResult:
    v.music_playing, v.song = True, slots.get("song") or v.song
    return PluginResult(True, f"开始播放{v.song or '音乐'}", {"playing": True, "song": v.song})


def _track(step: int) -> Callable[[Vehicle, dict], PluginResult]:
    def run(v: Vehicle, slots: dict) -> PluginResult:
        v.track, v.music_playing = max(0, v.track + step), True
        return PluginResult(True, "已切换到" + ("下一首" if step > 0 else "上一首"), {"track": v.track})
    return run


def _mute(v: Vehicle, slots: dict) -> PluginResult:
    changed, v.muted = not v.muted, True
    return PluginResult(True, "已静音", {"muted": True}, changed)


CABIN_PLUGINS: dict[str, Callable[[Vehicle, dict], PluginResult]] = {
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


class OrderBackend:
    """Orders appear on first lookup with a status derived from the id, so any id is queryable and stable."""

    def __init__(self) -> None:
        self._orders: dict[str, str] = {}

    def status(self, order_id: str) -> str:
        if order_id not in self._orders:
            digest = int(hashlib.sha256(order_id.encode()).hexdigest(), 16)
            self._orders[order_id] = ORDER_STATUSES[digest % len(ORDER_STATUSES)]
        return self._orders[order_id]

    def query(self, slots: dict) -> PluginResult:
        oid = str(slots["order_id"])
        return PluginResult(True, f"订单{oid}状态：{self.status(oid)}", {"order_id": oid, "order_status": self.status(oid)}, False)

    def logistics(self, slots: dict) -> PluginResult:
        oid = slots.get("order_id")
        if not oid:
            return PluginResult(True, "您最近的包裹正在运输途中", {"logistics": "in_transit"}, False)
        status = self.status(str(oid))
        return PluginResult(True, f"订单{oid}物流状态：{status}", {"order_id": oid, "order_status": status}, False)

    def cancel(self, slots: dict) -> PluginResult:
        oid = str(slots["order_id"])
        status = self.status(oid)
        if status == "cancelled":
            return PluginResult(True, f"订单{oid}已经取消过了", {"order_id": oid, "order_status": status}, False)
        if status != "pending_shipment":
            return PluginResult(False, f"订单{oid}已发货，无法直接取消", {"order_id": oid, "order_status": status}, False)
        self._orders[oid] = "cancelled"
        return PluginResult(True, f"订单{oid}已取消", {"order_id": oid, "order_status": "cancelled"})


class PluginRegistry:
    """Executes a plugin by id against per-user simulated state (one vehicle per user, one order book)."""

    def __init__(self) -> None:
        self._vehicles: dict[str, Vehicle] = {}
        self.orders = OrderBackend()
        self._order_plugins: dict[str, Callable[[dict], PluginResult]] = {
            "plugin.order.query": self.orders.query,
            "plugin.logistics.query": self.orders.logistics,
            "plugin.order.cancel": self.orders.cancel,
            "plugin.service.transfer_human": lambda slots: PluginResult(True, "正在为您转接人工客服", {"queue_position": 1}),
        }

    def vehicle(self, user_id: str) -> Vehicle:
        return self._vehicles.setdefault(user_id, Vehicle())

    def knows(self, plugin_id: str) -> bool:
        return plugin_id in CABIN_PLUGINS or plugin_id in self._order_plugins

    def execute(self, plugin_id: str, *, user_id: str, slots: dict) -> PluginResult:
        if plugin_id in CABIN_PLUGINS:
            return CABIN_PLUGINS[plugin_id](self.vehicle(user_id), slots)
        if plugin_id in self._order_plugins:
            return self._order_plugins[plugin_id](slots)
        raise UnknownPlugin(plugin_id)
