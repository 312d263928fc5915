"""An audio bomb: a FLAC of silence that declares no length (STREAMINFO's sample count 0) and decodes to `seconds` of
audio from a few bytes per 65,535-sample frame (one CONSTANT subframe each). Five hours are 64 KB on disk and
1.15 GB as the float32 samples at 16 kHz that Whisper reads."""

from __future__ import annotations

import math

RATE = 16000
BLOCK = 65535  # the largest FLAC block


def _crc8(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def _crc16_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
        table.append(crc)
    return table


_CRC16 = _crc16_table()


def _crc16(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16[(crc >> 8) ^ byte]
    return crc


def silent_flac(seconds: float) -> bytes:
    """Mono, 16 kHz, 16-bit silence in fixed 65,535-sample frames; STREAMINFO says the length is unknown."""
    # min/max block size, min/max frame size unknown, then rate (20 bits), channels-1 (3), bits-1 (5), samples (36)
    streaminfo = BLOCK.to_bytes(2, "big") * 2 + bytes(6) + ((RATE << 44) | (15 << 36)).to_bytes(8, "big") + bytes(16)
    parts = [b"fLaC", b"\x80" + len(streaminfo).to_bytes(3, "big"), streaminfo]
    for number in range(math.ceil(seconds * RATE / BLOCK)):
        # sync + fixed blocking, block size from the header's end + 16 kHz, mono + 16 bits, the frame number (UTF-8
        # coded, as FLAC does), then the block size - 1
        header = b"\xff\xf8\x75\x08" + chr(number).encode("utf-8") + (BLOCK - 1).to_bytes(2, "big")
        frame = header + bytes([_crc8(header)]) + b"\x00\x00\x00"  # a CONSTANT subframe of the sample 0
        parts.append(frame + _crc16(frame).to_bytes(2, "big"))
    return b"".join(parts)


def decoded_bytes(seconds: float) -> int:
    """What a whole decode holds: float32 samples at 16 kHz."""
    return int(seconds * RATE) * 4
