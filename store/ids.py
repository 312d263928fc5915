"""Time-ordered ids (UUID version 7, RFC 9562) for the rows a turn inserts.

A random (version 4) key puts each insert on a random leaf of every B-tree index it is in. On a large table that leaf
is seldom cached, and the first change to it after a checkpoint writes all 8 kB of it to the WAL again (a full-page
image) before the commit can flush. Measured here on a database of 590,000 messages, a new user's first turn with
random ids wrote 11 full-page images and 73 kB of WAL, with time-ordered ones 4 and 30 kB; its commit took 2.3
against 1.85 ms (`config/TUNING.md`). The first 48 bits are the Unix time in ms, so a new id sorts after, and its
index entries sit next to, the ids made just before it; the other 74 bits are random. The database makes the same
kind for the rows it names itself (`baton_uuid7()`, migration 0009)."""

from __future__ import annotations

import secrets
import time
import uuid


def new_id() -> uuid.UUID:
    """A new version-7 UUID: time in ms, then random bits."""
    raw = bytearray((time.time_ns() // 1_000_000).to_bytes(6, "big") + secrets.token_bytes(10))
    raw[6] = (raw[6] & 0x0F) | 0x70  # version 7
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 9562 variant
    return uuid.UUID(bytes=bytes(raw))
