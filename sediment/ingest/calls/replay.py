"""The replay memo: an agent's call replays the calls before it, so what a Session's previous
call sent again (a message, a group of items, a tool list, a system prompt) is read from the
memo, as the very object read before, instead of being translated again.

Replayed means the same JSON (:func:`same_json`): ``1``, ``1.0`` and ``true`` are different
values, so a replayed message whose number is spelled otherwise is read (and stored) anew. The
format modules reach the memo through :class:`~sediment.ingest.calls.toolkit.Notes`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import takewhile
from operator import is_, truth
from typing import Any, TypeVar

import orjson

from sediment.ingest.redaction.content import ContentCache
from sediment.model.facts import InferenceMessage


def identical_prefix(items: Sequence[Any], previous: Sequence[Any]) -> int:
    """How many leading elements of ``items`` are the very objects of ``previous`` (C speed)."""
    return len(list(takewhile(truth, map(is_, items, previous))))


def same_json(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are the same value, types included: Python's ``==`` takes
    ``1``, ``1.0`` and ``true`` (and ``0.0`` and ``-0.0``) for one, which a stored record must not.
    Once ``==`` holds, the two encodings tell them apart: orjson's, or the standard encoder's
    for what orjson refuses (an integer past 64 bits). Both spell every non-finite float alike
    (orjson as ``null``), but ``==`` holds then only for the very same float or for equal
    infinities, which are the same value."""
    if a is b:
        return True
    if a != b:
        return False
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:  # orjson.JSONEncodeError is one
        pass
    try:
        return json.dumps(a) == json.dumps(b)
    except (TypeError, ValueError):  # not plain JSON (cannot be replayed context): not the same
        return False


def adopt_same(items: list[Any], previous: Sequence[Any]) -> bool:
    """Put in ``items`` the very element of ``previous`` wherever the two hold the same JSON at
    the same position (:func:`same_json`), so what follows (redaction, the store's encoding)
    meets objects it has seen and skips them by identity; True when the two lists are then the
    same elements. The JSON of ``items`` is unchanged."""
    kept = identical_prefix(items, previous)
    for index in range(kept, min(len(items), len(previous))):
        if same_json(items[index], previous[index]):
            items[index] = previous[index]
    return len(items) == len(previous) and identical_prefix(items, previous) == len(items)


_Read = TypeVar("_Read")
#: The warning codes one reading raised, in order.
Warned = tuple[str, ...]
#: A group of consecutive items read as one message: its first item, the item after its last,
#: and its role.
Group = tuple[int, int, str]


class ReplayMemo:
    """Remembers each Session's previous call so replayed context is translated once.

    An agent's call k repeats the messages of calls 1..k-1. When a message of the current
    call equals the message at the same position of the Session's previous call, the earlier
    translation (and the earlier raw object) is reused; only new messages are translated.
    Where several items make one message (an OpenAI Responses assistant turn), a group of the
    very items the previous call grouped at the same place is that call's very message.
    The tool list, resent with every call, is read again only when it changed, so an equal
    list yields the very same definitions (and the store encodes them once). Equal means the
    same JSON, for the tools as for the messages (:func:`same_json`): ``1``, ``1.0`` and ``true``
    are different values, so a replayed message whose number is spelled otherwise is read (and
    stored) anew. A reading reused gives again the warnings it raised when it was read, so a
    call's warnings are the ones a translation without the memo raises. Holds the last call of
    at most ``sessions`` Sessions.
    """

    def __init__(self, sessions: int = 8) -> None:
        self._limit = sessions
        self._last: OrderedDict[str, tuple[str, list[Any], list[Any], list[tuple[int, Warned]]]] = OrderedDict()
        self._groups: OrderedDict[str, tuple[list[Any], dict[tuple[int, int], InferenceMessage]]] = OrderedDict()
        self._resent: OrderedDict[str, dict[str, tuple[Any, Any]]] = OrderedDict()
        self._redacted: OrderedDict[str, ContentCache] = OrderedDict()

    def _keep(self, held: OrderedDict[str, Any], session: str, value: Any) -> None:
        """``value`` as the Session's latest in ``held``, which keeps the latest ``sessions``."""
        held[session] = value
        held.move_to_end(session)
        while len(held) > self._limit:
            held.popitem(last=False)

    def content_cache(self, session: str) -> ContentCache:
        """The Session's :class:`~sediment.ingest.redaction.content.ContentCache`: its previous
        call's redacted messages and raw items, so replayed context is redacted once."""
        cache = self._redacted.get(session) or ContentCache()
        self._keep(self._redacted, session, cache)
        return cache

    def resent(self, session: str, slot: str, value: Any, read: Callable[[], _Read]) -> _Read:
        """What ``read()`` makes of ``value``, which every call sends again whole (``slot``: its
        tool list, its system prompt): the previous call's very result when the Session's previous
        call sent the same JSON there, else ``read()``. A list's entries equal to the previous
        list's entry at their place become those very entries (:func:`adopt_same`), so a tool list
        that a call resends costs its redaction and the store one identity check an entry. A
        reading that raises is not kept."""
        slots = self._resent.get(session) or {}
        last = slots.get(slot)
        if last is not None:
            if type(value) is list and type(last[0]) is list:
                same = adopt_same(value, last[0])
            else:
                same = same_json(value, last[0])
            if not same:
                last = None
        if last is None:
            last = (value, read())
        slots[slot] = last
        self._keep(self._resent, session, slots)
        result: _Read = last[1]
        return result

    def translate(self, session: str, reader: str, items: list[Any],
                  translate_one: Callable[[Any, int], tuple[_Read, Warned]],
                  ) -> tuple[list[_Read], list[tuple[int, Warned]]]:
        """Each of ``items`` read by ``translate_one`` (a message, or what a format groups into
        messages), with the warnings each reading raised: the previous call's reading, and its
        warnings, for an item of the same JSON at its place when that call's list was read by the
        same ``reader`` (a LiteLLM payload's list is read as Chat messages or as Responses items,
        call by call). Returns the readings and, in item order, the warnings of those that raised any."""
        previous = self._last.pop(session, None)
        if previous is None or previous[0] != reader:
            previous = (reader, [], [], [])
        _, previous_items, previous_read, previous_list = previous
        previous_warned = dict(previous_list)
        adopt_same(items, previous_items)  # the replayed objects themselves: no comparison
        kept = identical_prefix(items, previous_items)
        read: list[_Read] = previous_read[:kept]
        warned = [(index, codes) for index, codes in previous_warned.items() if index < kept]
        for index in range(kept, len(items)):
            if index < len(previous_items) and items[index] is previous_items[index]:
                reading, codes = previous_read[index], previous_warned.get(index, ())
            else:
                reading, codes = translate_one(items[index], index)
            read.append(reading)
            if codes:
                warned.append((index, codes))
        self._keep(self._last, session, (reader, list(items), read, warned))
        return list(read), warned

    def grouped(self, session: str, read: list[Any], groups: list[Group],
                build: Callable[[int, int, str], InferenceMessage]) -> list[InferenceMessage]:
        """The messages of ``groups`` of the items ``read`` (:meth:`translate`'s list), made by
        ``build``: the previous call's very message for a group of the same place whose
        readings are the very objects that call grouped there."""
        previous_read, previous = self._groups.pop(session, ([], {}))
        kept = identical_prefix(read, previous_read)
        made: dict[tuple[int, int], InferenceMessage] = {}
        for start, end, role in groups:
            known = previous.get((start, end)) if end <= kept else None
            made[start, end] = known if known is not None else build(start, end, role)
        self._keep(self._groups, session, (list(read), made))
        return list(made.values())
