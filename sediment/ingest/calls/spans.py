"""Reading a call log line without re-parsing its replayed history.

In one Session, call *n*'s request replays the messages of call *n−1* byte for byte, and
declares the same tools again. A :class:`SpanReader` reads a record's replayed lists
(``request.messages``, ``request.input``, or a LiteLLM payload's ``messages``, and the tool list
in ``request.tools`` or a LiteLLM payload's ``model_parameters.tools``) element by element
straight from the line: an element whose text starts exactly like a container already read and
validated (``{…}`` or ``[…]``) is that very parsed object, found by comparing characters, never
parsed again; any other element is parsed where it stands. Before that, the list's bytes are
compared with the whole bytes of the few lists read last (from the first element's start to the
last one's end): when one stands there whole, followed by ``,`` or ``]``, its elements are taken
at once (a Session's previous call replayed: one comparison of bytes, before any of them is
decoded, instead of one per element). Only what follows it is decoded. The rest of the record
(the line with the lists cut out) is parsed as usual and each list is put back in its place.

Exact by construction: a JSON container's value is decided by its own characters up to its
closing bracket, so equal text at a value position is an equal value (and equal UTF-8 bytes
are equal text: the line is cut only at ASCII brackets, commas and whitespace), and the pieces
parsed apart compose to the value a whole parse gives. Whenever anything is not plain (the list
is not found by its plain key spelling, an element fails to parse or nests too deep for its
place, the separators are not ``,`` and ``]``, the rest fails, a piece is not UTF-8), the whole
line is parsed again the plain way, so every refusal (bad UTF-8, a duplicate key, nesting too
deep, a bad number) is the one a plain parse gives, word for word. Parsed objects are shared
between records: nothing downstream changes a parsed value (the translators, redaction and
the store copy what they change; the replay memo only puts, in a record's list, an object of
the very same JSON in place of an entry).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from sys import getsizeof
from typing import Any, Final

from sediment.ingest.reading.json_text import MAX_DEPTH, JsonReader, RecordProblem, _skip_ws, _utf8

#: The replayed lists read span by span, as paths of plain keys (the same lists the store keeps
#: as content blobs): the turns a call replays, and the tool list an agent sends with every call.
REPLAYED_LISTS: Final[tuple[tuple[str, ...], ...]] = (("request", "messages"), ("request", "input"), ("messages",),
                                                      ("request", "tools"), ("model_parameters", "tools"))
#: The deepest level a replayed list sits at (record 1, ``request`` 2, the list 3): an element
#: may nest ``MAX_DEPTH - LIST_LEVEL`` levels, the most any of the lists allows.
LIST_LEVEL: Final = 3
#: A shorter line is parsed whole (it cannot hold much replayed history).
MIN_LINE: Final = 4096
#: How many bytes the remembered elements take (least recently used go first): each element's
#: text as the string takes it in memory (``sys.getsizeof``: one to four bytes a character,
#: whichever the text's widest character needs) and its parsed value, every container and scalar
#: of it (a dense text such as ``[{},{},…]`` parses to some twenty times its size). The whole
#: lists remembered take as many bytes again.
MEMORY_BYTES: Final = 64 * 1024 * 1024
_HEAD: Final = 96  # the characters an element's text is first looked up by
#: What a remembered element costs besides its text and value: its record, its entries in the
#: ordered map and the head index, and the head's own string (measured: 200 to 400 bytes).
_ENTRY: Final = 448
_LISTS: Final = 8  # how many lists read last are remembered whole
_KEYS: Final = frozenset(key.encode("ascii") for path in REPLAYED_LISTS for key in path)
_PATHS: Final = frozenset(tuple(key.encode("ascii") for key in path) for path in REPLAYED_LISTS)
_PREFIXES: Final = frozenset(path[:depth] for path in _PATHS for depth in range(1, len(path)))


def _shared_depth(path: tuple[bytes, ...], other: tuple[bytes, ...]) -> int:
    """How many keys the objects holding two lists share from the record down (0: the record)."""
    depth = 0
    for mine, theirs in zip(path[:-1], other[:-1], strict=False):
        if mine != theirs:
            break
        depth += 1
    return depth


#: Per list, how deep the object is whose end stops the scan once the list is read: the deepest
#: that also holds another list's holder (``request`` for a request's messages, which its tools
#: may follow; the record itself for a LiteLLM payload's ``messages``, which its
#: ``model_parameters.tools`` may follow or precede). Where the scan stops is a matter of speed
#: only: a list it does not reach is parsed with the rest of the record.
_STOP_DEPTH: Final = {path: max(_shared_depth(path, other) for other in _PATHS if other != path) for path in _PATHS}
_LONGEST_KEY: Final = 2 + max(len(key) for key in _KEYS)
#: A string or a bracket, in a line's bytes (:data:`~sediment.ingest.reading.json_text._TOKEN`'s
#: shape: every byte of a multi-byte UTF-8 character is above ASCII, so it never ends a string).
_TOKEN: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}]', re.DOTALL)
_WHITESPACE: Final = re.compile(rb"[ \t\n\r]*")


class _Element:
    """A remembered element: its text (None once forgotten), its parsed value and the bytes that
    takes, and the element that followed it when last seen. Forgetting an element clears its text
    and value, so an element still linked from another keeps neither alive."""

    __slots__ = ("following", "size", "span", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.size = value_size(value)  # the bytes the parsed value takes in memory
        self.span: str | None = None
        self.following: _Element | None = None

    def forget(self) -> None:
        self.span = self.value = self.following = None


def value_size(value: Any) -> int:
    """The bytes a parsed JSON value takes in memory: every container and scalar in it, each
    counted where it is held (a key shared by several objects is counted for each, so this
    never counts less than the value takes)."""
    total = 0
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        total += getsizeof(node)
        kind = type(node)
        if kind is dict:
            extend(node.keys())
            extend(node.values())
        elif kind is list:
            extend(node)
    return total


class _List:
    """A list read before: the bytes from its first element's start to its last element's end (a
    view of the line it was read from, when the list is most of that line, else a copy), its
    elements' values, its last element's record, the bytes the values take, and the bytes all of
    it keeps in memory."""

    __slots__ = ("last", "size", "text", "values", "values_size")

    def __init__(self, text: memoryview | bytes, values: list[Any], last: _Element | None, values_size: int,
                 size: int) -> None:
        self.text, self.values, self.last, self.values_size, self.size = text, values, last, values_size, size


class SpanReader(JsonReader):
    """A :class:`~sediment.ingest.reading.json_text.JsonReader` for call logs: the same values and the
    same refusals, with replayed list elements read once (see the module). One reader serves
    the lines of one ingest run in order; it remembers up to ``memory_bytes`` bytes of
    element texts and their parsed values, and as many bytes again of whole lists (the last
    eight at most: their bytes, and their values again, though most are the elements'), and
    reads lines shorter than ``min_line`` the plain way."""

    def __init__(self, *, memory_bytes: int = MEMORY_BYTES, min_line: int = MIN_LINE) -> None:
        super().__init__()
        self._limit = memory_bytes
        self._min_line = min_line
        self._size = 0
        self._seen: OrderedDict[str, _Element] = OrderedDict()
        self._by_head: dict[str, str] = {}
        #: The lists read last (newest last), so a list that starts with one of them whole takes
        #: all of its elements with one comparison, and the bytes they keep in memory.
        self._lists: list[_List] = []
        self._lists_size = 0
        #: Elements found by text (``reused``) and parsed (``parsed``), for tests and the bench.
        self.reused = 0
        self.parsed = 0

    def parse(self, data: bytes | str) -> Any:
        if len(data) >= self._min_line:
            line = _encoded(data) if isinstance(data, str) else bytes(data)  # bytes(bytes) is no copy
            try:
                value = None if line is None else self._spliced(line)
            except RecordProblem:
                value = None
            if value is not None:
                return value
        return super().parse(data)

    def _spliced(self, line: bytes) -> dict[str, Any] | None:
        """The record with each replayed list read element by element (:meth:`_elements`) and the
        text around them parsed as one, each list cut out as ``[]`` and put back in its place."""
        position = _skip(line, 0)
        if not line.startswith(b"{", position):
            return None
        scan = _Scan(position + 1)
        pieces: list[str] = []
        placed: list[tuple[tuple[str, ...], list[Any]]] = []
        cut = 0  # the first byte of the line not yet taken into ``pieces``
        while (found := scan.next_list(line)) is not None:
            path, start = found
            elements, end = self._elements(line, start)
            if elements is None:
                return None
            pieces += (_utf8(line[cut:start]), "[]")
            placed.append((path, elements))
            cut = end
            scan.past_list(end)
        if not placed:
            return None
        pieces.append(_utf8(line[cut:]))
        value = super().parse("".join(pieces))
        if type(value) is not dict:
            return None  # pragma: no cover - the scan found the record's object
        for path, elements in placed:
            holder: Any = value
            for key in path[:-1]:
                holder = holder.get(key) if type(holder) is dict else None
            if type(holder) is not dict or holder.get(path[-1]) != [] or type(holder[path[-1]]) is not list:
                return None  # pragma: no cover - the scan names the list the parse puts there
            holder[path[-1]] = elements
        return value

    def _elements(self, line: bytes, start: int) -> tuple[list[Any] | None, int]:
        """The elements of the array at byte ``start`` (None: not plain) and the byte after its
        closing bracket."""
        elements: list[Any] = []
        index = _skip(line, start + 1)
        if line.startswith(b"]", index):
            return elements, index + 1
        first = index
        previous: _Element | None = None
        values_size = 0  # the bytes the elements' values take
        replayed = self._replayed(line, index)
        if replayed is not None:  # the whole of a list read before, then "," or "]"
            after = _skip(line, index + len(replayed.text))
            if line.startswith(b"]", after):  # that very list again (remembered already)
                self._lists.remove(replayed)
                self._lists.append(replayed)  # the newest again: the last to be forgotten
                self.reused += len(replayed.values)
                return list(replayed.values), after + 1
            if line.startswith(b",", after):
                elements = list(replayed.values)
                self.reused += len(elements)
                previous = replayed.last
                values_size = replayed.values_size
                index = _skip(line, after + 1)
        # What follows is decoded from here (the replayed list before it never is).
        text = _utf8(line[index:])
        position = 0
        while True:
            element, span = self._known(text, position, previous)
            if element is not None and span is not None:
                self.reused += 1
                end = position + len(span)
            else:
                value, end = self.value_at(text, position, MAX_DEPTH - LIST_LEVEL)  # deeper: parsed whole
                self.parsed += 1
                span = text[position:end]
                element = _Element(value) if span[0] in "{[" else None  # a scalar's end needs lookahead
            if element is None:
                elements.append(value)
                values_size += getsizeof(value)
            else:
                elements.append(element.value)
                values_size += element.size
                element = self._remember(span, element, previous)  # the one remembered for this text
            previous = element
            position = _skip_ws(text, end)
            if text.startswith("]", position):
                break
            if not text.startswith(",", position):
                return None, 0
            position = _skip_ws(text, position + 1)
        self._remember_list(line, first, index + _byte_length(text, end), elements, previous, values_size)
        return elements, index + _byte_length(text, position + 1)

    def _replayed(self, line: bytes, index: int) -> _List | None:
        """The newest remembered list whose whole bytes stand at ``index`` (a Session's previous
        call, whatever other Sessions' calls came between)."""
        for position in range(len(self._lists) - 1, -1, -1):
            listed = self._lists[position]
            if line.startswith(listed.text, index):
                return listed
        return None

    def _remember_list(self, line: bytes, first: int, end: int, elements: list[Any], last: _Element | None,
                       values_size: int) -> None:
        whole = 2 * (end - first) >= len(line)  # a view keeps the whole line
        held = len(line) if whole else end - first
        size = held + getsizeof(elements) + values_size
        if size > self._limit:
            return
        span = memoryview(line)[first:end] if whole else line[first:end]
        self._lists.append(_List(span, elements, last, values_size, size))
        self._lists_size += size
        while self._lists_size > self._limit or len(self._lists) > _LISTS:
            self._lists_size -= self._lists.pop(0).size

    def _known(self, text: str, index: int, previous: _Element | None) -> tuple[_Element | None, str | None]:
        """The remembered element whose text stands at ``index``, if any."""
        following = previous.following if previous is not None else None
        candidate = following.span if following is not None else None
        if candidate is not None and text.startswith(candidate, index):
            return following, candidate
        candidate = self._by_head.get(text[index:index + _HEAD])
        if candidate is None or not text.startswith(candidate, index):
            return None, None
        element = self._seen.get(candidate)
        return (None, None) if element is None else (element, candidate)

    def _remember(self, span: str, element: _Element, previous: _Element | None) -> _Element:
        """Remember ``element`` as the text ``span`` (or refresh the one remembered for it, which is
        returned in its place: a text parsed again when another shares its head), linked from
        ``previous``."""
        known = self._seen.get(span)
        if known is not None:
            self._seen.move_to_end(span)
            element = known
        else:
            element.span = span
            self._seen[span] = element
            self._size += getsizeof(span) + element.size + _ENTRY
        self._by_head[span[:_HEAD]] = span
        if previous is not None:
            previous.following = element
        self._evict()  # here, not once a line is read: a line refused halfway has remembered elements too
        return element

    def _evict(self) -> None:
        while self._size > self._limit and self._seen:
            span, element = self._seen.popitem(last=False)
            self._size -= getsizeof(span) + element.size + _ENTRY
            element.forget()
            if self._by_head.get(span[:_HEAD]) == span:
                del self._by_head[span[:_HEAD]]


def _encoded(text: str) -> bytes | None:
    """``text`` as UTF-8 (None when it holds a lone surrogate: a plain parse reads it)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _skip(line: bytes, index: int) -> int:
    """The index of the first byte at or after ``index`` that is not JSON whitespace."""
    match = _WHITESPACE.match(line, index)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _byte_length(text: str, characters: int) -> int:
    """How many UTF-8 bytes the first ``characters`` characters of ``text`` take."""
    return characters if text.isascii() else len(text[:characters].encode("utf-8"))


class _Scan:
    """A scan of a record's line for its replayed lists (:data:`REPLAYED_LISTS`), found by their
    keys' plain spellings. Only the containers on a listed path are entered; any other is skipped
    whole. After a list is found, the caller reads it and resumes the scan past its end, up to the
    end of the object where no other list can follow (:data:`_STOP_DEPTH`): the rest of the record
    is left to the parse."""

    def __init__(self, position: int) -> None:
        self._position = position  # just inside the record's object
        self._path: list[bytes | None] = []  # the keys of the open containers below the record
        self._key: bytes | None = None
        self._holder: int | None = None  # the depth of the object whose end ends the scan
        self._found: tuple[bytes | None, ...] = ()  # the list found last
        self._done = False

    def next_list(self, line: bytes) -> tuple[tuple[str, ...], int] | None:
        """The path and start index of the next replayed list; None when the record holds no
        more (or is not plain here: the parse of what is left then decides)."""
        if self._done:
            return None
        while True:
            match = _TOKEN.search(line, self._position)
            if match is None:
                break
            at, self._position = match.span()
            char = line[at:at + 1]
            if char == b'"':
                if line.startswith(b":", _skip(line, self._position)):  # a key, not a value
                    name = line[at + 1:self._position - 1] if self._position - at <= _LONGEST_KEY else None
                    self._key = name if name in _KEYS else None
                continue
            if char in (b"[", b"{"):
                here = (*self._path, self._key)
                if char == b"[" and here in _PATHS:
                    self._found = here
                    return tuple(name.decode("ascii") for name in here if name is not None), at
                if char == b"{" and here in _PREFIXES:
                    self._path.append(self._key)
                    self._key = None
                    continue
                end = _skip_container(line, at)
                if end is None:
                    break
                self._position, self._key = end, None
                continue
            if not self._path or (self._holder is not None and len(self._path) <= self._holder):
                break  # the record's own object, or the one no other list can follow, closed
            self._path.pop()
            self._key = None
        self._done = True
        return None

    def past_list(self, end: int) -> None:
        """Resume after the list just found, which ends before byte ``end``."""
        stop = _STOP_DEPTH[self._found]  # type: ignore[index]  # a path of _PATHS: no None in it
        self._position, self._key = end, None
        self._holder = stop if self._holder is None else min(self._holder, stop)


def _skip_container(line: bytes, index: int) -> int | None:
    depth = 0
    for match in _TOKEN.finditer(line, index):
        char = line[match.start()]
        if char == 0x22:  # a string
            continue
        depth += 1 if char in (0x5B, 0x7B) else -1  # "[", "{"
        if depth == 0:
            return match.end()
    return None
