"""A text's words as `str.split()` finds them, joined by one space and lower-cased, and counted: in bulk with
numpy over the text's code points, with no Python object per word.

`" ".join(text.split()).lower()` made a string per word (~55 ns each, 0.3 ms on a 5,000-word page, for the
visible text and again for the main text); this marks each character as whitespace or not with one table lookup
and keeps the characters of words plus one space after each word, ~4x less CPU on prose.

Languages written without spaces between words (Chinese, Japanese) make one "word" of a whole sentence that way:
a 521-character Japanese page split into 140 such runs. So words_of also counts the Han, Hiragana and Katakana
characters (CJK_RANGES) of the words and how many words hold one; crawler.parse.text counts such a text in
characters (`Words.units`) when those characters are most of it. Hangul is not among them: Korean puts spaces
between words (eojeol), so split() counts Korean right. Thai, Lao, Khmer and Myanmar are written without spaces
too and would need a dictionary to segment; they are counted as split() finds them.
"""

import re
import string
from dataclasses import dataclass

import numpy as np

# Every code point str.isspace() (and so str.split()) takes for whitespace; tests/crawler/test_words.py checks
# the list against Python's own.
WHITESPACE = (
    0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
    *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
)  # fmt: skip
_BEYOND = max(WHITESPACE) + 1  # code points from here on are never whitespace; the table's last entry is False
_IS_SPACE = np.zeros(_BEYOND + 1, dtype=bool)
_IS_SPACE[list(WHITESPACE)] = True
_SPACE = 0x20
_ASCII_WHITESPACE_RUNS = ((0x09, 0x0D), (0x1C, 0x1F))  # and the space itself: the ASCII part of WHITESPACE
_LOWER_TABLE_SIZE = 0x3000  # Latin, Greek, Cyrillic, Armenian, Georgian…: lower-cased by table
_NON_ASCII = 0x80
_NO_SIMPLE_LOWER = -1
# Final sigma: str.lower() writes "ς" at a word's end and "σ" elsewhere, the one lower-casing that depends on the
# neighbours (CPython's handle_capital_sigma); a text with it is lower-cased by str.lower().
_CAPITAL_SIGMA = 0x3A3
# Characters counted one by one in text without spaces (inclusive ranges): the iteration marks 々〆〇, Hiragana,
# Katakana (its middle dot ・ is punctuation), Katakana phonetic extensions, CJK Unified Ideographs and Extension A,
# compatibility ideographs, halfwidth Katakana, and the supplementary ideograph planes (Extensions B onwards).
CJK_RANGES = (
    (0x3005, 0x3007), (0x3040, 0x309F), (0x30A0, 0x30FA), (0x30FC, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x3134F),
)  # fmt: skip
_CJK_FIRST = CJK_RANGES[0][0]
_UTF16_UNIT_BYTES = 2
_SURROGATE_FIRST, _SURROGATE_LAST = 0xD800, 0xDFFF
_CJK_CHARACTER = re.compile("([" + "".join(f"{chr(first)}-{chr(last)}" for first, last in CJK_RANGES) + "])")


def _lower_table() -> np.ndarray:
    """Each code point below _LOWER_TABLE_SIZE to its lower case, or -1 when str.lower() makes it more than one
    character or depends on its neighbours."""
    table = np.arange(_LOWER_TABLE_SIZE, dtype=np.int32)
    for code in range(_NON_ASCII, _LOWER_TABLE_SIZE):
        lowered = chr(code).lower()
        table[code] = ord(lowered) if len(lowered) == 1 else _NO_SIMPLE_LOWER
    table[_CAPITAL_SIGMA] = _NO_SIMPLE_LOWER
    return table


_LOWER = _lower_table()  # ~3 ms at import, 48 KiB
# bytes.translate table of an ASCII text's kept characters: whitespace (a separator) to a space, A-Z to a-z.
_ASCII_FOLD = bytes.maketrans(
    bytes(code for code in WHITESPACE if code < _NON_ASCII) + string.ascii_uppercase.encode(),
    bytes(_SPACE for code in WHITESPACE if code < _NON_ASCII) + string.ascii_lowercase.encode(),
)


@dataclass(frozen=True, slots=True)
class Words:
    joined: str  # the words, lower-cased, joined by one space
    count: int
    rest: str = ""  # with `partial`: the last word when the text did not end in whitespace (it may go on)
    cjk_chars: int = 0  # CJK_RANGES characters among the words
    cjk_words: int = 0  # words holding at least one of them

    @property
    def units(self) -> int:
        """The text counted with each CJK character as one unit and every other word as one."""
        return self.count - self.cjk_words + self.cjk_chars


def words_of(text: str, *, partial: bool = False) -> Words:
    """`Words(" ".join(text.split()).lower(), len(text.split()))`; with `partial`, a last word the text does not
    end after (no whitespace follows it) is left out of both and returned as `rest`."""
    if not text:
        return Words("", 0)
    ascii_only = text.isascii()
    if ascii_only:
        chars = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:
        chars = _code_points(text)
    space = _whitespace(chars, ascii_only)
    rest = ""
    if partial and not space[-1]:
        # The last whitespace character: argmax stops at the first True of the reversed mask (flatnonzero of the
        # whole mask cost ~20 us on a 35,000-character step).
        from_end = int(np.argmax(space[::-1]))
        cut = len(space) - from_end if space[-1 - from_end] else 0  # a character index: one item per character
        rest = text[cut:]
        chars, space = chars[:cut], space[:cut]
        if not cut:
            return Words("", 0, rest)
    word = ~space
    word_chars = int(np.count_nonzero(word))
    if not word_chars:
        return Words("", 0, rest)
    # Kept: the characters of words, and the first whitespace character after each word (as one space): a
    # character is kept when it or the one before it belongs to a word.
    keep = word.copy()
    np.logical_or(word[1:], word[:-1], out=keep[1:])
    kept = chars[keep]  # a copy (boolean indexing)
    ends_in_space = bool(space[-1])
    # Every word but the last is followed by one kept separator, and the last too when the text ends in whitespace.
    count = len(kept) - word_chars + (not ends_in_space)
    if ends_in_space:  # no separator after the last word
        kept = kept[:-1]
    if ascii_only:
        # Its separators are its only whitespace: one bytes.translate makes them spaces and lower-cases A-Z.
        return Words(kept.tobytes().translate(_ASCII_FOLD).decode("ascii"), count, rest)
    separators = space[keep][: len(kept)]
    separators &= kept != _SPACE  # the few that are not a space already (newlines, NBSP…)
    kept[separators] = _SPACE
    cjk_chars, cjk_words = _cjk(chars, word)
    return Words(_lowered(kept), count, rest, cjk_chars, cjk_words)


def _code_points(text: str) -> np.ndarray:
    """One array item per character of a non-ASCII text: 16-bit when every character is in the Basic
    Multilingual Plane and none is a surrogate (most text: accents, curly quotes, ©, CJK), else 32-bit. Half the
    memory of 32-bit for every array made from it, and a 35,000-character step's arrays (70 KB) stay under
    malloc's 128 KiB mmap threshold: at 140 KB each was mapped and page-faulted afresh, ~115 faults a step."""
    utf16 = text.encode("utf-16-le", "surrogatepass")
    if len(utf16) == _UTF16_UNIT_BYTES * len(text):  # no character took two units (a surrogate pair)
        chars = np.frombuffer(utf16, dtype=np.uint16)
        # Lone surrogates are one unit each, but a high one next to a low one would decode as one character.
        if not ((chars - _SURROGATE_FIRST) <= (_SURROGATE_LAST - _SURROGATE_FIRST)).any():
            return chars
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _decoded(kept: np.ndarray) -> str:
    """The code points of a _code_points array (or a part of one) as a string."""
    codec = "utf-16-le" if kept.dtype == np.uint16 else "utf-32-le"
    return kept.tobytes().decode(codec, "surrogatepass")


def _cjk(chars: np.ndarray, word: np.ndarray) -> tuple[int, int]:
    """(CJK characters, words holding one) of the characters `chars` whose word mask is `word`."""
    if not (chars >= _CJK_FIRST).any():
        return 0, 0
    cjk = np.zeros(len(chars), dtype=bool)
    largest = np.iinfo(chars.dtype).max
    for first, last in CJK_RANGES:
        if first > largest:  # beyond a 16-bit array's plane: none there
            continue
        cjk |= (chars - first) <= (last - first)  # unsigned: below `first` wraps to a large number
    positions = np.flatnonzero(cjk)
    if not positions.size:
        return 0, 0
    starts = word.copy()
    starts[1:] &= ~word[:-1]
    word_ids = np.cumsum(starts)[positions]  # increasing: a new id where another word starts
    return int(positions.size), int(1 + np.count_nonzero(word_ids[1:] != word_ids[:-1]))


def _whitespace(chars: np.ndarray, ascii_only: bool) -> np.ndarray:
    """Which characters are whitespace: the ASCII ones by comparison, any others by table."""
    space = chars == _SPACE
    for first, last in _ASCII_WHITESPACE_RUNS:
        space |= (chars - first) <= (last - first)  # unsigned: below `first` wraps to a large number
    if not ascii_only:
        high = np.flatnonzero(chars >= _NON_ASCII)
        if high.size:
            space[high] = _IS_SPACE[np.minimum(chars[high], _BEYOND)]
    return space


def _lowered(kept: np.ndarray) -> str:
    """The code points as a lower-cased string: ASCII letters and table-mapped ones in numpy, anything else (a
    capital sigma, a letter lower-cased to two characters, code points past the table) by str.lower()."""
    upper = (kept - ord("A")) <= (ord("Z") - ord("A"))
    np.add(kept, ord("a") - ord("A"), out=kept, where=upper)  # in place: twice as fast as kept[upper] += …
    high = np.flatnonzero(kept >= _NON_ASCII)
    if high.size:
        values = kept[high]
        if int(values.max()) >= _LOWER_TABLE_SIZE:
            return _decoded(kept).lower()
        lowered = _LOWER[values]
        if (lowered == _NO_SIMPLE_LOWER).any():
            return _decoded(kept).lower()
        kept[high] = lowered
    return _decoded(kept)


def first_words(joined: str, count: int) -> str:
    """The first `count` words of a text joined by one space (what words_of returns)."""
    if count <= 0:
        return ""
    if joined.isascii():
        spaces = np.flatnonzero(np.frombuffer(joined.encode("ascii"), dtype=np.uint8) == _SPACE)
        return joined[: int(spaces[count - 1])] if len(spaces) >= count else joined
    return " ".join(joined.split(" ", count)[:count])


def cjk_spaced(joined: str) -> str:
    """A text of words joined by one space with each CJK character made a word of its own ("東京は晴れ" ->
    "東 京 は 晴 れ"): what near duplicates compare in a text written without spaces. Unchanged without one."""
    if joined.isascii() or not _CJK_CHARACTER.search(joined):
        return joined
    return " ".join(_CJK_CHARACTER.sub(r" \1 ", joined).split())
