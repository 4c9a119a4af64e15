"""The words of a page: visible text and main text counted and hashed in one walk of the tree, the main text's
first words kept, lorem ipsum noticed (PageData's text fields)."""

import hashlib
import re

from lxml import etree

from crawler import limits
from crawler.parse.data import PageData
from crawler.parse.markers import TreeMarkers, tree_markers
from crawler.speedups import native
from crawler.words import CJK_RANGES, first_words, words_of

WORD_UNIT_CHARACTERS = "characters"  # PageData.word_unit / Page.word_unit of a text counted in characters
INVISIBLE_TAGS = frozenset(("script", "style", "noscript", "template", "svg", "head"))
# Elements that separate words when rendered: "<p>a</p><p>b</p>" is two words, "a<b>b</b>" is one.
BLOCK_TAGS = frozenset(
    "address article aside blockquote br dd details dialog div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section summary table tbody td tfoot "
    "th thead tr ul img input button select textarea label caption iframe video audio canvas".split()
)


def collapse(text: str | None) -> str:
    # str.split() and the regex \s agree on what whitespace is (every code point); split is the faster of the two.
    return " ".join(text.split()) if text else ""


class _WordStream:
    """Words of text arriving in pieces ("a<b>b</b>" is one word), counted and hashed as they come. Pieces are
    gathered up to TEXT_STEP_CHARS and split in one go (a word costs no Python call of its own), and a big page's
    text is never held whole. The hash is sha1 of the words joined by one space, lower-cased.

    The text walk appends to `pieces` itself (a method call per piece cost a fifth of the walk) and calls `spill`
    now and then; `add` does both for the rarer callers."""

    def __init__(self):
        self.count = 0
        self._hash = hashlib.sha1()  # noqa: S324 - a fingerprint for duplicate detection, not security
        self.pieces: list[str] = []  # changed in place only: the walk holds its append
        self._counted = 0  # pieces whose length _size holds
        self._size = 0
        self._step_chars = limits.TEXT_STEP_CHARS
        self.cjk_chars = 0  # CJK characters among the words (crawler.words.CJK_RANGES)
        self.cjk_words = 0  # words holding one

    def add(self, text: str | None) -> None:
        if text:
            self.pieces.append(text)
            self.spill()

    def add_words(self, lowered: str, count: int, cjk_chars: int, cjk_words: int) -> None:
        """`count` whole words already split, lower-cased and joined by one space, with the CJK characters among
        them and the words holding one: a step of words_of's here (_step), or of the C text walk's
        (crawler.speedups.native.text_walk)."""
        self.cjk_chars += cjk_chars
        self.cjk_words += cjk_words
        self._emit(lowered, count)

    def spill(self) -> None:
        """Split what was gathered once it reaches a step."""
        pieces = self.pieces
        self._size += sum(map(len, pieces[self._counted :]))
        self._counted = len(pieces)
        if self._size >= self._step_chars:
            self._step(final=False)

    def _step(self, *, final: bool) -> None:
        words = words_of("".join(self.pieces), partial=not final)  # a last word may go on in the next piece
        self.pieces.clear()
        self._counted = self._size = 0
        if words.rest:
            self.pieces.append(words.rest)
            self._counted, self._size = 1, len(words.rest)
            # A word longer than a step (no whitespace for megabytes) waits for twice its length, not one step
            # more: joined again at every step it would cost the square of its length.
            self._step_chars = max(limits.TEXT_STEP_CHARS, 2 * len(words.rest))
        if words.count:
            self.add_words(words.joined, words.count, words.cjk_chars, words.cjk_words)

    def _emit(self, lowered: str, count: int) -> None:
        """`count` words, lower-cased and joined by one space (lower-casing them one by one gives the same)."""
        if self.count:
            self._hash.update(b" ")  # hashed in two updates: no copy of the step's text with a space before it
        self._hash.update(lowered.encode("utf-8"))
        self.count += count

    @property
    def in_characters(self) -> bool:
        """Most of the text is written without spaces (Chinese, Japanese): its CJK characters outnumber its other
        words, so it is counted in characters."""
        return self.cjk_chars > self.count - self.cjk_words

    @property
    def units(self) -> int:
        """Each CJK character one unit, every other word one (crawler.words.Words.units)."""
        return self.count - self.cjk_words + self.cjk_chars

    def close(self) -> str:
        self._step(final=True)
        return self._hash.hexdigest() if self.count else ""


class _MainWords(_WordStream):
    """The main text's words: counted and hashed like the visible text, the first ones kept, lorem ipsum noticed."""

    def __init__(self):
        super().__init__()
        self._kept: list[str] = []  # steps' lower-cased text, the last one cut at the word limit
        self._kept_words = 0
        self.lorem = False
        self._last = ""

    @property
    def kept(self) -> str:
        """The first MAX_MAIN_WORDS_KEPT words, joined by one space."""
        return " ".join(self._kept)

    def _emit(self, lowered: str, count: int) -> None:
        room = limits.MAX_MAIN_WORDS_KEPT - self._kept_words
        if room >= count:
            self._kept.append(lowered)  # kept whole: no word is split out on its own
            self._kept_words += count
        elif room > 0:
            self._kept.append(first_words(lowered, room))
            self._kept_words += room
        if not self.lorem:
            # The substring test first: the regex over every step's text cost more than the rest of _emit.
            if "lorem" in lowered or "lorem" in self._last:
                self.lorem = _LOREM.search(self._last + " " + lowered) is not None
            self._last = lowered.rpartition(" ")[2]
        super()._emit(lowered, count)


_LOREM = re.compile(r"\blorem\s+ipsum\b")
_LOREM_AS_WRITTEN = re.compile(r"\blorem\s+ipsum\b", re.IGNORECASE)
# Code samples and form fields: their wording is the subject or the reader's input, not the page's own text.
_CODE_TAGS = frozenset(("pre", "code", "kbd", "samp", "textarea"))
# The walk asks the visible stream to measure what it gathered each time this many more pieces came (a piece is an
# element's text or tail, or a space), and hands the main text its run so far then: a step is TEXT_STEP_CHARS,
# measured in bulk rather than piece by piece.
_SPILL_PIECES = 512
_BOILERPLATE_TAGS = frozenset(("nav", "header", "footer", "aside"))
_BOILERPLATE_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary"))
if native is not None:  # the C walk's tag lists: these, given once
    native.text_tags(BLOCK_TAGS, INVISIBLE_TAGS, _BOILERPLATE_TAGS, _BOILERPLATE_ROLES, CJK_RANGES)


def page_text(root, page: PageData, url: str, markers: TreeMarkers | None = None) -> None:
    """Visible text (script/style/noscript/template/svg/head left out) and main text, in one walk of the tree.

    Main text: the <main>/[role=main] elements when the page has them, else the visible text minus nav, header,
    footer and aside (by tag or role). The walk skips invisible subtrees (their tails still count: "a<script>x
    </script>b" is the one word "ab"), so the tree is never changed."""
    mains = (markers or tree_markers(root)).mains
    main_set = set(mains)
    if len(mains) > limits.MAIN_ELEMENTS_ONE_WALK_MAX or any(_hidden_or_nested(m, main_set) for m in mains):
        main = _MainWords()
        _main_text_alone(mains, main)  # rare markup the one walk does not model: the main text walked on its own
        visible, _ = _one_walk(root, mains, with_main=False)
    else:
        visible, main = _one_walk(root, mains, with_main=True)
    page.text_hash = visible.close()
    page.main_text_hash = main.close()
    # A page mostly in Chinese or Japanese is counted in characters (each CJK character one, any other word one),
    # its visible and main text alike; the unit is decided on the visible text, the page as a whole.
    if visible.in_characters:
        page.word_unit = WORD_UNIT_CHARACTERS
        page.word_count, page.main_word_count = visible.units, main.units
    else:
        page.word_count, page.main_word_count = visible.count, main.count
    page.main_text = main.kept
    short = main.count <= limits.SHORT_MAIN_TEXT_WORDS_MAX
    if main.lorem or (short and main.count):
        # A second walk only for the few pages that need the text outside code: lorem ipsum seen somewhere (rare)
        # or a short main text (cheap to walk). The one walk above stays free of code tracking.
        prose = _main_prose(root, mains)
        if short:
            page.short_main_prose = prose
        if main.lorem:
            page.lorem_excerpt = excerpt(prose, _LOREM_AS_WRITTEN)
            page.lorem_ipsum = bool(page.lorem_excerpt)


def excerpt(text: str, pattern: re.Pattern, context_chars: int = limits.EVIDENCE_CONTEXT_CHARS) -> str:
    """The first match of `pattern` in `text` with up to `context_chars` around it, cut at whole words ("…" where
    cut); "" when it does not match."""
    match = pattern.search(text)
    if match is None:
        return ""
    return excerpt_at(text, match.start(), match.end(), context_chars)


def excerpt_at(text: str, first: int, last: int, context_chars: int = limits.EVIDENCE_CONTEXT_CHARS) -> str:
    """text[first:last] with up to `context_chars` around it, cut at whole words ("…" where cut)."""
    start, end = max(0, first - context_chars), min(len(text), last + context_chars)
    if start > 0:
        space = text.find(" ", start, first)
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", last, end)
        end = space if space >= 0 else end
    return ("…" if start > 0 else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def _main_prose(root, mains: list) -> str:
    """The main text (as page_text defines it) outside invisible elements and code samples, as written, collapsed; its
    first PROSE_SCAN_CHARS_MAX characters or a little more (a 15 MiB page of lorem ipsum is not copied whole)."""
    pieces: list[str] = []
    add = pieces.append
    size = 0
    by_main_elements, main_set = bool(mains), set(mains)
    for scope in mains if by_main_elements else [root]:
        if by_main_elements and _hidden_or_nested(scope, main_set):
            continue
        walk = etree.iterwalk(scope, events=("start", "end"))
        for event, el in walk:
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag in INVISIBLE_TAGS or tag in _CODE_TAGS or (not by_main_elements and _boilerplate(el, tag)):
                    walk.skip_subtree()  # its "end" still comes, and adds its tail
                    continue
                if tag in BLOCK_TAGS:
                    add(" ")
                if el.text:
                    add(el.text)
                    size += len(el.text)
            else:
                if tag in BLOCK_TAGS:
                    add(" ")
                if el is not scope and el.tail:
                    add(el.tail)
                    size += len(el.tail)
            if size > limits.PROSE_SCAN_CHARS_MAX:
                return collapse("".join(pieces))
        add(" ")
    return collapse("".join(pieces))


def _hidden_or_nested(main_el, main_set: set) -> bool:
    """A main element inside an invisible one (<template><main>) or inside another main element."""
    if main_el.tag in INVISIBLE_TAGS:
        return True
    return any(a in main_set or a.tag in INVISIBLE_TAGS for a in main_el.iterancestors())


def _boilerplate(el, tag: str) -> bool:
    return tag in _BOILERPLATE_TAGS or (el.get("role") or "").strip().lower() in _BOILERPLATE_ROLES


def _one_walk(root, mains: list, *, with_main: bool) -> tuple[_WordStream, _MainWords | None]:
    """The visible text and, `with_main`, the main text of one walk of the tree: in C (crawler.speedups'
    text_walk, which also splits, lower-cases and counts the words as words_of would, and hands the streams whole
    words) where it was built, else, or where the C walk meets a node it does not model, by _walk_text with fresh
    streams."""
    if native is not None:
        visible, main = _WordStream(), _MainWords() if with_main else None
        try:
            native.text_walk(
                root,
                tuple(mains),
                visible.add_words,
                main.add_words if main is not None else None,
                limits.TEXT_STEP_CHARS,
            )
            return visible, main
        except NotImplementedError:
            pass
    visible, main = _WordStream(), _MainWords() if with_main else None
    _walk_text(root, visible, main, set(mains))
    return visible, main


def _walk_text(root, visible: _WordStream, main: _MainWords | None, main_set: set) -> None:
    """Feed the visible text to `visible` and, unless None, the main text to `main` (see page_text).

    The main text is runs of the visible text's pieces: the walk notes where the current run began in the
    visible stream's pieces (`main_from`, None outside the main text) and copies each run whole to the main
    stream when it ends (or before the visible stream splits its pieces), instead of appending every piece to
    both: this loop runs twice per element of every page."""
    by_boilerplate = main is not None and not main_set  # no <main>: the main text is all but nav, header…
    main_starts = main_set if main is not None else frozenset()  # elements that begin a run (<main>)
    main_from = 0 if by_boilerplate else None
    main_off_at = None  # the boilerplate element (no <main>) whose subtree the main text leaves out
    # The stream's own list, appended to directly; each attribute read and call made once per event (el.tag
    # makes a new string at every read).
    seen = visible.pieces
    see = seen.append
    # Measured again only once another _SPILL_PIECES pieces came: a stream holding more pieces than that but less
    # than a step was measured at every element's end.
    spill_at = _SPILL_PIECES
    walk = etree.iterwalk(root, events=("start", "end"))
    skip_subtree = walk.skip_subtree
    for event, el in walk:
        # A comment's or processing instruction's tag is a function: in none of the tag sets, as "" would be.
        tag = el.tag
        block = tag in BLOCK_TAGS
        if event == "start":
            if tag in INVISIBLE_TAGS:
                skip_subtree()  # its "end" still comes, and adds its tail
                continue
            if main_from is None:
                if el in main_starts:
                    main_from = len(seen)  # the main element's own space and text are main text
            elif by_boilerplate and _boilerplate(el, tag):
                main.pieces.extend(seen[main_from:])
                main.spill()
                main_from, main_off_at = None, el
            if block:
                see(" ")
            text = el.text
            if text:
                see(text)
        else:
            if el is main_off_at:
                main_from, main_off_at = len(seen), None  # the boilerplate's closing space and tail are main text
            if block:
                see(" ")
            if main_from is not None and el in main_starts:
                main.pieces.extend(seen[main_from:])
                main.add(" ")  # the end of one main element: its tail is not main text
                main_from = None
            tail = el.tail if el is not root else None
            if tail:
                see(tail)
            if len(seen) >= spill_at:
                if main_from is not None:
                    main.pieces.extend(seen[main_from:])
                    main.spill()
                visible.spill()  # may leave only a word's start in `seen`, which the main text has now
                if main_from is not None:
                    main_from = len(seen)
                spill_at = len(seen) + _SPILL_PIECES
    if main_from is not None:
        main.pieces.extend(seen[main_from:])
    if by_boilerplate:
        main.pieces.append(" ")
    visible.spill()
    if main is not None:
        main.spill()


def _main_text_alone(mains: list, words: _MainWords) -> None:
    """The main text of main elements the one walk cannot take (nested, or inside an invisible element): each
    walked as its own scope, invisible subtrees skipped."""
    for scope in mains:
        walk = etree.iterwalk(scope, events=("start", "end"))
        for event, el in walk:
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag in INVISIBLE_TAGS:
                    walk.skip_subtree()
                    continue
                if tag in BLOCK_TAGS:
                    words.add(" ")
                words.add(el.text)
            else:
                if tag in BLOCK_TAGS:
                    words.add(" ")
                if el is not scope:
                    words.add(el.tail)
        words.add(" ")
