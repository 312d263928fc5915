"""Arabic and Chinese numeral parsing: 二十二点五 → 22.5, 一百零五 → 105, 两 → 2."""

from __future__ import annotations

import re

Number = int | float

_DIGIT_VALUES = {
    "零": 0,
    "〇": 0,
    "幺": 1,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_BIG_UNITS = {"万": 10_000, "亿": 100_000_000}
_ZEROS = "零〇"

_CN_DIGITS = "零〇一二两三四五六七八九"
_CN_INT = rf"[{_CN_DIGITS}十][{_CN_DIGITS}十百千万亿]*"
_CN_NUM = rf"{_CN_INT}(?:点[{_CN_DIGITS}]+)?"
_AR_NUM = r"\d+(?:\.\d+)?"
_NUM = rf"(?:{_AR_NUM}|{_CN_NUM})"
_INT = rf"(?:\d{{1,4}}|{_CN_INT})"
# _INT where a match begins: a Chinese numeral never right after one that could begin it (a match there is a match one
# character earlier), which keeps a long run of numerals from being tried at each of them (quadratic)
_INT_FIRST = rf"(?:\d{{1,4}}|(?<![{_CN_DIGITS}十]){_CN_INT})"
_NUMBER_RE = re.compile(rf"(?P<num>{_NUM})(?P<half>[个点度]?半)?")
# A lone 一 in these words means "a / a bit", not the number one.
_FILLER_AFTER_ONE = set("下些起样直定般会切旦边共同致点")


def _tidy(value: Number) -> Number:
    """Return an int for integral floats so 22.0 reads as 22."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _cn_digit_string(token: str) -> str:
    return "".join(str(_DIGIT_VALUES[c]) for c in token)


def _cn_int(token: str) -> int | None:
    """Chinese integer: 十八, 一百零五, 两万三 (=23000), 二零二六 (digit by digit)."""
    if not token:
        return None
    if all(c in _DIGIT_VALUES for c in token):
        return int(_cn_digit_string(token))
    total = section = digit = last_unit = 0
    for char in token:
        if char in _DIGIT_VALUES:
            digit = _DIGIT_VALUES[char]
        elif char in _SMALL_UNITS:
            last_unit = _SMALL_UNITS[char]
            section += (digit or 1) * last_unit
            digit = 0
        elif char in _BIG_UNITS:
            last_unit = _BIG_UNITS[char]
            total += ((section + digit) or 1) * last_unit
            section = digit = 0
        else:
            return None
    abbreviated = digit and last_unit >= 100 and token[-2] not in _ZEROS and token[-2] not in _DIGIT_VALUES
    if abbreviated:  # 一百五 = 150, 两千三 = 2300
        digit *= last_unit // 10
    return total + section + digit


def _number_token(token: str) -> Number | None:
    """Parse one Arabic or Chinese number token, decimals included (二十二点五)."""
    if token[0].isdigit():
        return _tidy(float(token)) if "." in token else int(token)
    whole, _, fraction = token.partition("点")
    integer = _cn_int(whole)
    if integer is None:
        return None
    if not fraction:
        return integer
    return _tidy(float(f"{integer}.{_cn_digit_string(fraction)}"))


def _is_filler_one(text: str, match: re.Match[str]) -> bool:
    return match.group(0) == "一" and text[match.end() : match.end() + 1] in _FILLER_AFTER_ONE


def _match_value(match: re.Match[str]) -> Number | None:
    value = _number_token(match.group("num"))
    if value is not None and match.group("half"):
        value = _tidy(value + 0.5)
    return value


def parse_chinese_number(text: str) -> Number | None:
    """First number in `text`, Arabic or Chinese: 二十二点五 → 22.5, 二十六度半 → 26.5, 两 → 2."""
    for match in _NUMBER_RE.finditer(text or ""):
        if _is_filler_one(text, match):
            continue
        value = _match_value(match)
        if value is not None:
            return value
    return None


def _int(token: str | None) -> int | None:
    if not token:
        return None
    value = _number_token(token)
    return value if isinstance(value, int) else None
