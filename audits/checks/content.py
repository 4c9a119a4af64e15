"""Content checks: placeholder text and soft-404 signs on one page (crawl time), near duplicates and soft 404s
over the whole crawl (finalize).

Near duplicates are measured the way a reader says "96 % of the words are the same": on the main text's words
counted with their repeats (a multiset: "the" three times is three words). Two 700-word articles that differ in one
word in 25 share 672 of their 700 words: 96 %. Three-word shingles (the scheme before issue 27, "m3:") broke three
shingles per changed word, so that pair measured ~79 % and was never reported. Each word occurrence becomes one
token (the word's hash mixed with how many times it came before: the k-th "the" is its own token), so the multiset
is a set and MinHash applies unchanged. On a page in Chinese or Japanese (counted in characters,
PageData.word_unit) each character is a word (crawler.words.cjk_spaced): "96 % of the characters".
The words alone leave their order aside, and two different texts written from one small vocabulary (generated
pages, the benchmark site: ~130 words) then share ~90 % of their words: every page of such a site read as a near
duplicate of every other. So the signature also keeps the text's word pairs (each word with the one before it,
counted with their repeats): a word replaced here and there breaks two pairs, so the share of words the same reads
(1 + pairs' Dice) / 2 from them too. A pair of pages is a near duplicate when its words say so and its pairs agree
within PAIR_SLACK (their values only check the words' order); the similarity shown is the words'.
A few words replaced read the same both ways (96 %); the same words in another order read low on their pairs;
sentences or paragraphs moved around keep their pairs and stay near duplicates.

At crawl time (`text_signature`) the words' 64-bit token hashes give 128 minima and the pairs' 128 more by
one-permutation hashing with optimal densification (`_bin_minima`: one hash a token instead of one per permutation,
the same estimate), made in one pass over the text's bytes in C (crawler.speedups; the numpy code here where it
was not built, the same values); base64 on the Page row, prefixed with the scheme
("w3:"; a page signed under another scheme, "w2:" 128 + 64 affine permutations before issue 29, "w1:" words only or
"m3:", is left out of the comparison, never compared with values that mean something else).
Finalize bands the word pairs' values the way datasketch's MinHashLSH does (its (bands, rows) choice for what a text
at the threshold reads on its pairs, LSH_SLACK under it in Jaccard; a pair whose pairs read lower still, down to
PAIR_SLACK, is reported only when a band finds it), one band at a time (banded on the words, the benchmark site's
pages shared band buckets by thousands and finalize verified millions of pairs in vain). The signatures and each
band's keys are spilled to temporary files as they are read, never held whole (1,024 bytes a page: ~1 GiB at a
million pages; 730 MiB held whole took the worker to 1.5 GiB). Each page is compared only with the few pages sharing
a band with it, never all pairs: the work grows with the pages, not their square (bench/near_duplicates.py measures
it on 100,000 pages). A bucket pairs each page with the next CANDIDATES_PER_PAGE_MAX of it only, and candidates and
matches are numpy arrays, so one template copied on 10,000 pages costs a few hundred verified pairs a page at most
(CANDIDATE_BANDS_MAX), not 10,000 (before, a Python set of every pair and a list of every match per page took the
worker to 3 GiB on the 10,000-page benchmark site). datasketch's own index holds a Python object per page and band:
560 MiB at 100,000 pages against a few MiB here. Similarity is the share of words two texts have in common (Dice on
the multisets: 2|A∩B| / (|A|+|B|), the words both have over their average length); MinHash estimates Jaccard J, and
Dice = 2J / (1 + J). The project's threshold (`near-duplicate-content` min_similarity_pct, 90 by default) is in
these units: a 96 % pair is reported with 4 points to spare (the estimate's spread is about ±1.3 points there),
a 70 % pair never.

Why one module of over 600 lines: the crawl-time signature and finalize's banding and grouping are the two halves
of one MinHash scheme (the values' layout and prefix, the permutations, the bands read from them must agree, and
the text above explains both), and the soft-404 wording here is read by the page check and the finalize check
alike. The split to make next is that wording (`soft_404_reason` and its phrases) into a module of its own.
"""

import base64
import contextlib
import functools
import os
import re
import tempfile
import uuid
from pathlib import Path

import numpy as np
from django.db.models import Count

from audits.checks.registry import as_uuid
from audits.models import Page
from crawler import limits
from crawler.parse.text import WORD_UNIT_CHARACTERS, excerpt_at
from crawler.speedups import native
from crawler.words import cjk_spaced

WORD_MINIMA = 128  # 128 × 4 bytes: a similarity estimate within ±3 points at 90 %
SIGNATURE_SEED = 1  # fixed: signatures of every page and audit must be comparable
# The word pairs' minima, a check on the words' order: what rejects two different texts from one small vocabulary
# (words 91 % the same, pairs 66 %), however many of them a crawl holds. With 64 values and PAIR_SLACK 0.1 such
# texts got through about once in 10^4 candidates: the LSH band that made a pair a candidate had already made r of
# its pair values equal, and the tail of the rest did the rest. The benchmark site, none of whose pages is a near
# duplicate, had 21 pages reported at 10,000 pages, 166 at 30,000, 1,300 at 100,000; 2 at 100,000 with
# PAIR_SLACK 0.05, and 0 with 128 values (bench/README.md).
PAIR_MINIMA = 128
# The pairs may read this much under the threshold, in words_same_from_pairs' units (where texts 90 % the same
# read 90 ± 1.5 and 96 % the same 96 ± 1): the words' own estimate decides at the threshold, not this.
PAIR_SLACK = 0.05
SIGNATURE_VALUES = WORD_MINIMA + PAIR_MINIMA  # 256 × 4 bytes a page
LSH_SLACK = 0.1  # the LSH index finds pairs down to this much below the Jaccard asked for; each is then verified
LSH_THRESHOLD_FLOOR = 0.3
LSH_QUADRATURE_NODES = PAIR_MINIMA // 2 + 1  # Gauss–Legendre is exact up to degree 2n - 1 >= the bands' values
BAND_KEY_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant (golden ratio): mixes a band's values
VERIFY_BATCH_PAIRS = 2_048  # candidate pairs compared per numpy step (two 2 MiB slices of the signatures)
URL_LOOKUP_BATCH = 1000  # page ids per query when the near duplicates' URLs are read
SIGNATURE_BLOCK_ROWS = 8_192  # signatures banded and spilled to disk together (8 MiB of values)
SIGNATURES_FILE = "signatures.u32"
# Pages a page is verified against per band bucket (the next ones in the bucket): a template with thousands of
# copies stays linear in time and memory (candidate pairs <= pages × this, 8 bytes each).
CANDIDATES_PER_PAGE_MAX = 50
CANDIDATE_BANDS_MAX = 4  # candidates stop growing past pages × CANDIDATES_PER_PAGE_MAX × this (8 bytes each)
OTHER_URLS_MAX = 3
SOFT_404_BODY_WORDS_MAX = (
    limits.SHORT_MAIN_TEXT_WORDS_MAX
)  # error-page wording in the text counts only on a page this short
SOFT_404_SCAN_WORDS = 60  # the wording must come early in the main text
SOFT_404_SENTENCES_MAX = 2  # … in its first two sentences
SOFT_404_HEADING_WORDS_MAX = 10  # a title part or H1 longer than this names a topic, not an error
SOFT_404_PAGE_WORDS_MAX = 500  # a page with more main text than this is content, whatever its title says
SOFT_404_HINT_MAX_CHARS = 200  # Page.soft_404_hint's length
SOFT_404_EXCERPT_CONTEXT_CHARS = 50  # text kept each side of the wording: the hint fits in its 200 characters
HTML_TYPES = ("text/html", "application/xhtml+xml")
# Characters a word stands for on a page counted in characters: a Chinese word is 1.5–2 characters on average, a
# Japanese one 2–3 (kana endings), so 2 keeps a short but real page (a 500-character Japanese article, ~200 words)
# over the 150-word default and a 200-character stub under it.
CHARACTERS_PER_WORD = 2

# What error pages say, in the languages most sites are written in. Lower-case, matched on collapsed text.
ERROR_PHRASES = (
    # English
    "page not found", "page cannot be found", "page can't be found", "page could not be found", "not found",
    "page does not exist", "page doesn't exist", "no longer available", "no longer exists", "nothing was found",
    "nothing found", "this page isn't available", "we couldn't find", "we can't find", "sorry, we couldn't",
    # German, French, Spanish, Italian, Portuguese, Dutch
    "seite nicht gefunden", "nicht gefunden", "existiert nicht", "page introuvable", "page non trouvée",
    "page inexistante", "n'existe pas", "página no encontrada", "no se encontró", "no existe",
    "pagina non trovata", "non trovata", "non esiste", "página não encontrada", "não encontrada", "não existe",
    "pagina niet gevonden", "niet gevonden", "bestaat niet",
    # Polish, Swedish, Danish/Norwegian, Czech, Turkish, Russian, Ukrainian
    "nie znaleziono", "strona nie istnieje", "sidan hittades inte", "siden blev ikke fundet", "siden finnes ikke",
    "stránka nenalezena", "sayfa bulunamadı", "страница не найдена", "не найдено", "сторінку не знайдено",
    # Japanese, Chinese, Korean
    "ページが見つかりません", "見つかりませんでした", "页面不存在", "找不到页面", "页面未找到", "找不到網頁",
    "페이지를 찾을 수 없습니다",
)  # fmt: skip
_PHRASES = re.compile("|".join(re.escape(p) for p in ERROR_PHRASES))
# Wording that names an error page only in a title or heading: in running text it is ordinary prose ("if the key
# is not found, return the default"), so the text must say more ("page not found", "no longer exists").
GENERIC_PHRASES = frozenset(
    ("not found", "nicht gefunden", "existiert nicht", "n'existe pas", "no existe", "non trovata", "non esiste",
     "não encontrada", "não existe", "niet gevonden", "bestaat niet", "nie znaleziono", "не найдено")
)  # fmt: skip
_BODY_PHRASES = re.compile("|".join(re.escape(p) for p in ERROR_PHRASES if p not in GENERIC_PHRASES), re.IGNORECASE)
# Words before the wording that make a heading a topic ("How to fix page not found errors", "Handling 'not found'
# in the API") or a sentence a condition ("If the key is not found…", "Returns None when the file no longer
# exists"): documentation and articles about errors, not error pages. English first, then the languages above.
_TOPIC_WORDS = frozenset(
    "how why what when fix fixing fixed handle handling debug debugging troubleshoot troubleshooting avoid "
    "avoiding prevent preventing about understanding guide tutorial wie warum beheben comment pourquoi corriger "
    "cómo como por qué solucionar come perché risolvere hoe waarom oplossen jak dlaczego как почему".split()
)
_CONDITIONAL_WORDS = frozenset(
    "if when whenever unless whether otherwise raise raises raised return returns returned throw throws thrown "
    "wenn falls ob si cuando quando se als indien jeśli gdy om hvis pokud eğer если когда якщо".split()
)
_WORD_PUNCTUATION = "\"'“”‘’«»()[]{},;:.!?¡¿"
_TITLE_SEPARATORS = re.compile(r"\s+[|\-–—·•:/]+\s+|\s*\|\s*")
_SENTENCE_END = re.compile(r"[.!?。！？](?:\s|$)")
# "404", "Error 404", "404 - Not Found", "Oops! 404": a heading or title that starts or ends with 404.
_HEADLINE_404 = re.compile(r"^\W*(?:error\W*)?404\b|\b404\W*$|\b(?:error|fehler|erreur|errore)\W+404\b")


# --- crawl time ------------------------------------------------------------------------------------


# A word occurrence's hash, with no Python object per word: the text (lower-cased words joined by one space) is
# hashed as UTF-8 bytes in numpy, each word a polynomial hash of its bytes (prefix sums of byte·B^i, a word's sum
# brought back to its start by B^-start, all modulo 2^64) mixed by MurmurHash3's 64-bit finalizer; the k-th
# occurrence of a word is its hash and k combined with odd 64-bit multipliers and mixed again. sha1 per token
# (datasketch's default) cost ~2.3 ms on a 5,000-word page, crc32 per distinct word in Python ~0.6 ms; this ~0.15.
_WORD_HASH_BASE = 0x100000001B3  # odd (FNV-1's 64-bit prime): invertible modulo 2^64
_TOKEN_MULTIPLIERS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))
_FMIX64 = (np.uint64(33), np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53))
_SPACE = 0x20  # the one byte that separates words: UTF-8 never uses it inside a multi-byte character
# Bytes of the main text signed: 5,000 words (crawler.limits.MAX_MAIN_WORDS_KEPT) are ~35 KB of prose; only a page of
# words over 50 characters long reaches this, and its text past it is left out of its signature.
SIGNED_TEXT_MAX_BYTES = 256 * 1024
# Stored signatures name their scheme: a page signed under another scheme (an audit that ran while workers were
# upgraded) is left out of the comparison instead of being compared with values that mean something else.
# "w3:": words counted with their repeats, then word pairs, one-permutation minima (`_bin_minima`); "w2:" the same
# tokens under 192 affine permutations (before issue 29); "w1:": the words alone, which read two texts drawn from
# one small vocabulary as 90 % the same; "m3:": 3-word shingles, before issue 27.
SIGNATURE_PREFIX = "w3:"
_TEXT_START = np.uint64(0x243F6A8885A308D3)  # the "word" before a text's first (pi's fraction): its first pair
_PAIR_MULTIPLIER = np.uint64(0xFF51AFD7ED558CCD)  # odd: the word before, mixed with the word


@functools.cache
def _borrow_orders(bins: int, seed: int) -> np.ndarray:
    """For each of `bins` bins, every bin in an order of its own drawn once from the seed (bins × bins indexes, made
    once per process, read-only): an empty bin takes the value of the first bin in its order that is not empty.
    The orders depend on nothing but the seed, so two texts empty in one bin look for its value the same way."""
    generator = np.random.RandomState(seed)
    return np.stack([generator.permutation(bins) for _ in range(bins)]).astype(np.intp)


@functools.cache
def _word_hash_powers() -> tuple[np.ndarray, np.ndarray]:
    """B^i and B^-i modulo 2^64 for i up to SIGNED_TEXT_MAX_BYTES (4 MiB, made once per process, read-only)."""
    size = SIGNED_TEXT_MAX_BYTES + 1
    powers = np.full(size, _WORD_HASH_BASE, dtype=np.uint64)
    inverses = np.full(size, pow(_WORD_HASH_BASE, -1, 1 << 64), dtype=np.uint64)
    powers[0] = inverses[0] = 1
    return np.cumprod(powers), np.cumprod(inverses)  # wrapping modulo 2^64, as meant


def _fmix64(x: np.ndarray) -> np.ndarray:
    shift, m1, m2 = _FMIX64
    x ^= x >> shift
    x *= m1
    x ^= x >> shift
    x *= m2
    x ^= x >> shift
    return x


def _word_hashes(text: str) -> np.ndarray:
    """One 64-bit hash per word of `text` (words separated by one space), equal words equal hashes."""
    if not text:
        return np.empty(0, dtype=np.uint64)
    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    if len(raw) > SIGNED_TEXT_MAX_BYTES:
        raw = raw[:SIGNED_TEXT_MAX_BYTES]
        cut = np.flatnonzero(raw == _SPACE)
        raw = raw[: cut[-1]] if cut.size else raw[:0]  # whole words only
    size = len(raw)
    spaces = np.flatnonzero(raw == _SPACE)
    starts = np.empty(len(spaces) + 1, dtype=np.intp)
    starts[0] = 0
    np.add(spaces, 1, out=starts[1:])
    ends = np.empty_like(starts)
    ends[:-1], ends[-1] = spaces, size
    powers, inverses = _word_hash_powers()
    # Prefix sums made in place in one array: a 35 KB text's ~280 KB temporaries cost page faults of their own.
    prefix = np.empty(size + 1, dtype=np.uint64)
    prefix[0] = 0
    np.multiply(raw, powers[:size], out=prefix[1:])
    np.cumsum(prefix[1:], out=prefix[1:])
    hashes = prefix[ends]
    hashes -= prefix[starts]
    hashes *= inverses[starts]
    return _fmix64(hashes)


def _occurrence_tokens(hashes: np.ndarray) -> np.ndarray:
    """One 64-bit token per item of `hashes`: the k-th occurrence of a value is its own token (the value and k
    mixed), so a multiset becomes a set that MinHash takes unchanged."""
    size = len(hashes)
    if not size:
        return np.empty(0, dtype=np.uint64)
    ordered = np.sort(hashes)
    run_start = np.empty(size, dtype=bool)
    run_start[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=run_start[1:])
    positions = np.arange(size, dtype=np.uint64)
    # How many equal values came before each one, plus one: its position less its run's start, plus one.
    occurrence = np.where(run_start, positions, np.uint64(0))
    np.maximum.accumulate(occurrence, out=occurrence)
    np.subtract(positions, occurrence, out=occurrence)
    occurrence += np.uint64(1)
    k1, k2 = _TOKEN_MULTIPLIERS
    occurrence *= k2
    ordered *= k1  # ordered is np.sort's own copy
    ordered ^= occurrence
    # Distinct by construction (a collision inside one text is as rare as it is harmless: MinHash keeps minima,
    # which a repeated value does not change), so no second sort.
    return _fmix64(ordered)


def word_token_hashes(text: str) -> np.ndarray:
    """One 64-bit hash per word occurrence of `text` (lower-cased words joined by one space): the
    k-th occurrence of a word is its own token, so the tokens stand for the text's words counted with their
    repeats (empty for an empty text)."""
    return _occurrence_tokens(_word_hashes(text))


def word_pair_token_hashes(text: str) -> np.ndarray:
    """One 64-bit hash per word of `text` paired with the word before it (the first with the text's start),
    counted with their repeats: the words in their order, which `word_token_hashes` leaves aside."""
    return _pair_tokens(_word_hashes(text))


def _pair_tokens(hashes: np.ndarray) -> np.ndarray:
    """word_pair_token_hashes from the text's word hashes (text_signature has them already)."""
    if not len(hashes):
        return np.empty(0, dtype=np.uint64)
    pairs = np.empty_like(hashes)
    pairs[0] = _TEXT_START
    pairs[1:] = hashes[:-1]
    pairs *= _PAIR_MULTIPLIER
    pairs ^= hashes
    return _occurrence_tokens(_fmix64(pairs))


def _bin_minima(tokens: np.ndarray, bins: int, seed: int) -> np.ndarray:
    """One-permutation MinHash with optimal densification (Shrivastava, ICML 2017), `bins` a power of two: each
    64-bit token falls in the bin its top bits name and offers its low 32 bits; a bin keeps the least it is offered.
    A bin no token fell in (a text of fewer tokens than bins has some) takes the value of the first bin in its
    `_borrow_orders` that one fell in. Every text walks a bin's order alike, so two texts agree on an empty bin
    when the first bin in its order that either filled holds its least token in both: as often as their tokens are
    shared, and the estimate stays unbiased (its spread that of `bins` permutations, measured in
    tests/audits/checks). One hash a token where `bins` permutations made `bins`: the signature went from 1.01 to
    0.52 ms a benchmark page (bench/README.md)."""
    which = (tokens >> np.uint64(64 - (bins.bit_length() - 1))).astype(np.intp)
    minima = np.full(bins, np.iinfo(np.uint32).max, dtype=np.uint32)
    np.minimum.at(minima, which, tokens.astype(np.uint32))  # the low 32 bits
    filled = np.zeros(bins, dtype=bool)
    filled[which] = True
    if not filled.all():
        empty = np.flatnonzero(~filled)
        orders = _borrow_orders(bins, seed)[empty]
        minima[empty] = minima[orders[np.arange(len(empty)), np.argmax(filled[orders], axis=1)]]
    return minima.astype("<u4")


def text_signature(text: str, *, characters: bool = False) -> str:
    """MinHash signature of `text` (lower-cased words joined by one space), prefixed with its scheme; "" when the
    text has no word: WORD_MINIMA minima over its words counted with their repeats
    (`word_token_hashes`), then PAIR_MINIMA minima over its word pairs (`word_pair_token_hashes`). With
    `characters` (a page counted in characters, PageData.word_unit), each Chinese or Japanese character is a word."""
    if characters:
        text = cjk_spaced(text)
    if not text:
        return ""
    if native is not None:  # crawler.speedups: the same minima in one pass of C (~0.3 ms less a page)
        values = native.minhash(
            text.encode("utf-8", "surrogatepass"),
            _borrow_orders(WORD_MINIMA, SIGNATURE_SEED),
            _borrow_orders(PAIR_MINIMA, SIGNATURE_SEED + 1),
        )
    else:
        values = _signature_values_numpy(text)
    return SIGNATURE_PREFIX + base64.b64encode(values).decode("ascii")


def _signature_values_numpy(text: str) -> bytes:
    """text_signature's minima as little-endian uint32 bytes, in numpy: where crawler.speedups was not built, and
    what tests/crawler/test_speedups.py holds the C version to."""
    hashes = _word_hashes(text)  # once, for the words and their pairs
    values = np.concatenate(
        [
            _bin_minima(_occurrence_tokens(hashes), WORD_MINIMA, SIGNATURE_SEED),
            _bin_minima(_pair_tokens(hashes), PAIR_MINIMA, SIGNATURE_SEED + 1),  # orders not the words'
        ]
    )
    return values.tobytes()


def signature_values(signature: str) -> np.ndarray | None:
    """A stored signature back as uint32 values (words, then pairs); None when it is missing or not of this
    scheme."""
    if not (signature or "").startswith(SIGNATURE_PREFIX):
        return None
    try:
        raw = base64.b64decode(signature[len(SIGNATURE_PREFIX) :], validate=True)
    except ValueError:
        return None
    if len(raw) != SIGNATURE_VALUES * 4:
        return None
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32)


def soft_404_reason(title: str, h1: str, prose: str, main_word_count: int) -> str:
    """Why a 2xx page reads, as a whole, like an error page, or "". The error wording must be the page's subject:

    - the title or H1, when the part of it holding the wording (titles split at " | ", " - ", " — "…) is short
      (SOFT_404_HEADING_WORDS_MAX) and does not make it a topic ("How to fix page not found errors"), and the
      page is not a long text (SOFT_404_PAGE_WORDS_MAX: an article titled so is an article);
    - or a short main text (SOFT_404_BODY_WORDS_MAX) whose first sentences (SOFT_404_SENTENCES_MAX) say it,
      unconditionally: "If the key is not found, return the default" or "raises when the file no longer exists"
      document behaviour on a working page (SciPy, issue 27), and wording this generic ("not found") is never
      enough in running text.

    `prose` is the main text outside code samples (PageData.short_main_prose): a page documenting an error
    message is not an error page."""
    if main_word_count <= SOFT_404_PAGE_WORDS_MAX:
        for label, text in (("title", title), ("heading", h1)):
            if _heading_says_error(text or ""):
                return f"the {label} says {text.strip()[:120]!r}"[:SOFT_404_HINT_MAX_CHARS]
    if main_word_count <= SOFT_404_BODY_WORDS_MAX and prose:
        wording = _text_says_error(" ".join(prose.split(" ", SOFT_404_SCAN_WORDS)[:SOFT_404_SCAN_WORDS]))
        if wording:
            return f"the text says {wording!r} ({main_word_count} words)"[:SOFT_404_HINT_MAX_CHARS]
    return ""


def _heading_says_error(text: str) -> bool:
    for part in _TITLE_SEPARATORS.split(" ".join(text.lower().split())):
        match = _PHRASES.search(part) or _HEADLINE_404.search(part)
        if match is None or len(part.split()) > SOFT_404_HEADING_WORDS_MAX:
            continue
        if not _TOPIC_WORDS & {w.strip(_WORD_PUNCTUATION) for w in part[: match.start()].split()}:
            return True
    return False


def _text_says_error(start: str) -> str:
    """The wording with the words around it when the first sentences of `start` say, unconditionally, that the
    page is not there; else ""."""
    for match in _BODY_PHRASES.finditer(start):
        before = start[: match.start()]
        ends = list(_SENTENCE_END.finditer(before))
        if len(ends) >= SOFT_404_SENTENCES_MAX:
            break
        lead = before[ends[-1].end() :] if ends else before
        if _CONDITIONAL_WORDS & {w.strip(_WORD_PUNCTUATION).lower() for w in lead.split()}:
            continue
        return excerpt_at(start, match.start(), match.end(), SOFT_404_EXCERPT_CONTEXT_CHARS)
    return ""


def content_fields_fill(page, data) -> None:
    """The content-check fields of a parsed 2xx HTML page (main text fingerprint, signature, soft-404 sign)."""
    page.main_text_hash = data.main_text_hash
    page.main_words = data.main_word_count
    page.text_signature = text_signature(data.main_text, characters=data.word_unit == WORD_UNIT_CHARACTERS)
    h1 = next((text for level, text in data.headings if level == 1 and text.strip()), "")
    title = data.titles[0] if data.titles else ""
    page.soft_404_hint = soft_404_reason(title, h1, data.short_main_prose, data.main_word_count)


def thin_content_check(data, add, limit) -> None:
    """thin-content on an indexable page: fewer words than the project's min_words, or, on a page counted in
    characters (Chinese, Japanese: PageData.word_unit), fewer than CHARACTERS_PER_WORD characters a word."""
    min_words = limit("thin-content", "min_words")
    if data.word_unit == WORD_UNIT_CHARACTERS:
        min_characters = min_words * CHARACTERS_PER_WORD
        if data.word_count < min_characters:
            add("thin-content", characters=data.word_count, min_characters=min_characters)
    elif data.word_count < min_words:
        add("thin-content", words=data.word_count, min_words=min_words)


def content_page_checks(page, data, add, limit) -> None:
    if data.lorem_ipsum:  # outside code samples: a page documenting a {% lorem %} tag shows it in <pre>/<code>
        add("lorem-ipsum", text=data.lorem_excerpt)  # the placeholder as written, with the words around it


# --- finalize --------------------------------------------------------------------------------------


def dice_from_jaccard(jaccard):
    return 2 * jaccard / (1 + jaccard)


def jaccard_from_dice(dice: float) -> float:
    return dice / (2 - dice)


def words_same_from_pairs(pair_dice):
    """The share of words two texts have in common, read from the share of their word pairs: a word replaced here
    and there breaks two pairs (itself after the one before, the next after it), so 4 % of the words replaced
    leave 92 % of the pairs."""
    return (1 + pair_dice) / 2


def text_similarity(words_dice, pair_dice, min_similarity: float):
    """What a reader means by "x % of the words are the same": the words counted with their repeats, when their
    word pairs agree that the words are in the same order (within PAIR_SLACK, the pairs' reading being the noisier
    of the two); 0 when they do not (two texts drawn from one small vocabulary, or the same words shuffled into
    other sentences, share their words and few of their pairs)."""
    in_order = words_same_from_pairs(pair_dice) >= min_similarity - PAIR_SLACK
    return np.where(in_order, words_dice, 0.0)


def lsh_bands(min_similarity: float) -> tuple[int, int]:
    """(bands, rows per band) datasketch's MinHashLSH picks over the word pairs' PAIR_MINIMA values, for the
    pairs' Jaccard a little under what a text min_similarity the same reads on them (its words replaced here and
    there). Banded on the pairs, not the words: texts that share their words but not their order (a small
    vocabulary) would otherwise share band buckets by thousands and be verified in vain. Not down to PAIR_SLACK
    under it: the 10,000-page benchmark site's 5,000-word pages from ~130 words share a third of their pairs, and
    bands that loose made a tenth of all its pairs candidates."""
    pair_dice = 2 * min_similarity - 1  # words_same_from_pairs inverted
    threshold = max(jaccard_from_dice(max(pair_dice, 0.0)) - LSH_SLACK, LSH_THRESHOLD_FLOOR)
    return _optimal_bands(round(threshold, 12), PAIR_MINIMA)


@functools.cache
def _optimal_bands(threshold: float, permutations: int) -> tuple[int, int]:
    """datasketch's `_optimal_param` with equal weights: the (bands, rows) whose false positive area (below the
    threshold) plus false negative area (above it) of the S-curve 1 - (1 - s^rows)^bands is least, first in
    datasketch's order on a tie. Its integrands are polynomials of degree bands·rows <= permutations, which
    Gauss–Legendre with LSH_QUADRATURE_NODES nodes integrates exactly: datasketch's scipy quad without importing
    scipy (~0.5 s and ~30 MiB in a worker's first finalize)."""
    nodes, weights = np.polynomial.legendre.leggauss(LSH_QUADRATURE_NODES)
    below = threshold / 2 * (nodes + 1)  # the nodes mapped onto [0, threshold] and [threshold, 1]
    above = threshold + (1 - threshold) / 2 * (nodes + 1)
    best, least = (0, 0), float("inf")
    for bands in range(1, permutations + 1):
        rows = np.arange(1, permutations // bands + 1, dtype=float)[:, None]
        false_positive = threshold / 2 * ((1 - (1 - below**rows) ** bands) @ weights)
        false_negative = (1 - threshold) / 2 * (((1 - above**rows) ** bands) @ weights)
        error = 0.5 * false_positive + 0.5 * false_negative
        n = int(np.argmin(error))  # the first of equal ones, as datasketch's strict "<" keeps
        if error[n] < least:
            best, least = (bands, n + 1), float(error[n])
    return best


def _band_keys(matrix: np.ndarray, band: int, rows: int) -> np.ndarray:
    """One 64-bit key per page for one band of its signature (equal bands, equal keys)."""
    key = np.zeros(len(matrix), dtype=np.uint64)
    for column in matrix[:, band * rows : (band + 1) * rows].T:
        key = key * BAND_KEY_MULTIPLIER + column.astype(np.uint64)  # wraps modulo 2^64, as meant
    return key


def _band_pairs(keys: np.ndarray, pages: int) -> np.ndarray:
    """Pairs of pages sharing a band key, each page with the next CANDIDATES_PER_PAGE_MAX of its bucket only, as
    sorted distinct int64 codes (smaller index × pages + larger): numpy arrays, no Python object per pair.
    Sorted positions i and i + k share a bucket when the k keys from i on are each equal to the one before: one
    bool a position per k, built from the last (before, five int64 arrays a page: ~40 MiB at a million pages)."""
    order = np.argsort(keys, kind="stable").astype(np.int32)
    ordered = keys[order]
    same = ordered[1:] == ordered[:-1]  # same[i]: sorted positions i and i + 1 share a bucket
    del ordered
    run, codes = same, []
    for offset in range(1, CANDIDATES_PER_PAGE_MAX + 1):
        if offset > 1:
            run = run[:-1] & same[offset - 1 :]  # run[i]: positions i .. i + offset all share a bucket
        position = np.flatnonzero(run)
        if not position.size:
            break
        a, b = order[position].astype(np.int64), order[position + offset].astype(np.int64)
        codes.append(np.minimum(a, b) * pages + np.maximum(a, b))
    return np.unique(np.concatenate(codes)) if codes else np.empty(0, dtype=np.int64)


def _codes_new(seen: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(`codes` not in `seen`, where each goes in `seen`); both sorted and distinct."""
    at = np.searchsorted(seen, codes)
    present = seen[np.minimum(at, len(seen) - 1)] == codes if len(seen) else np.zeros(len(codes), dtype=bool)
    return codes[~present], at[~present]


def near_duplicate_groups(rows, *, min_similarity: float):
    """Near duplicates among `rows` ((key, signature values), one per distinct text), LSH-bucketed.

    Yields (index, [(other index, similarity 0..1), …] best first, then by index) for each row with a match; an
    index is the row's position in `rows` (the keys are not held).
    Banding as in datasketch's MinHashLSH (its (bands, rows) choice), done band by band on the word pairs' values:
    each band is a sort of n 64-bit keys, a bucket pairs each page with the next CANDIDATES_PER_PAGE_MAX of it only,
    and every candidate pair is verified on the whole signature (`text_similarity`).
    Memory does not hold the signatures (1,024 bytes a page, ~1 GiB at a million pages): they are spilled to a
    temporary file as they come, in blocks of SIGNATURE_BLOCK_ROWS, with each band's keys to a file of its own.
    What is held is one band's keys and its sort (~25 bytes a page at its peak), the candidates seen so far (at
    most n × CANDIDATES_PER_PAGE_MAX × CANDIDATE_BANDS_MAX × 8 bytes, however many pages one template has; a
    handful on a site of distinct texts), those of the band being verified and the matches; verification reads the
    rows one batch of pairs needs.
    """
    bands, band_rows = lsh_bands(min_similarity)
    with tempfile.TemporaryDirectory(prefix="sitewarden-near-duplicates-") as spill:
        spill = Path(spill)
        pages = _signatures_spill(rows, spill, bands, band_rows)
        if pages < 2:
            return
        # Each band's candidates are verified as they come, those of an earlier band left out; `seen` (8 bytes a
        # candidate) grows in place of a union of every band's (np.union1d held four copies: 100 MiB of 3.3M
        # candidates at a million pages).
        seen, verified = np.empty(0, dtype=np.int64), []
        for band in range(bands):
            keys = np.fromfile(_band_file(spill, band), dtype=np.uint64)
            codes, at = _codes_new(seen, _band_pairs(keys, pages))
            del keys
            verified.append(_verified_pairs(codes, pages, spill / SIGNATURES_FILE, min_similarity))
            seen = np.insert(seen, at, codes)
            del codes, at
            if len(seen) > pages * CANDIDATES_PER_PAGE_MAX * CANDIDATE_BANDS_MAX:
                break  # one cluster of thousands of copies: each page already has more candidates than it can show
    del seen
    a, b, similarity = (np.concatenate(parts) for parts in zip(*verified, strict=True))
    del verified
    source, other, similarity = np.r_[a, b], np.r_[b, a], np.r_[similarity, similarity]  # both ways
    order = np.lexsort((other, -similarity, source))  # by page, then best first, then by index
    source, other, similarity = source[order], other[order], similarity[order]
    starts = np.flatnonzero(np.r_[True, source[1:] != source[:-1]]) if len(source) else []
    ends = np.r_[starts[1:], len(source)] if len(source) else []
    for begin, end in zip(starts, ends, strict=True):
        yield int(source[begin]), list(zip(other[begin:end].tolist(), similarity[begin:end].tolist(), strict=True))


def _signatures_spill(rows, spill: Path, bands: int, band_rows: int) -> int:
    """Write the rows' signatures to `spill`/SIGNATURES_FILE (n × SIGNATURE_VALUES uint32, in row order) and each
    band's keys to its `_band_file`, one block of SIGNATURE_BLOCK_ROWS at a time; returns n."""
    block = np.empty((SIGNATURE_BLOCK_ROWS, SIGNATURE_VALUES), dtype=np.uint32)
    pages = 0
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open(spill / SIGNATURES_FILE, "wb"))]
        files += [stack.enter_context(open(_band_file(spill, band), "wb")) for band in range(bands)]
        for _key, signature in rows:
            block[pages % SIGNATURE_BLOCK_ROWS] = signature
            pages += 1
            if pages % SIGNATURE_BLOCK_ROWS == 0:
                _block_write(block, files, band_rows)
        if pages % SIGNATURE_BLOCK_ROWS:
            _block_write(block[: pages % SIGNATURE_BLOCK_ROWS], files, band_rows)
    return pages


def _block_write(block: np.ndarray, files: list, band_rows: int) -> None:
    """Append a block of signatures to files[0] and its keys of band k to files[1 + k]."""
    block.tofile(files[0])
    for band, file in enumerate(files[1:]):
        _band_keys(block[:, WORD_MINIMA:], band, band_rows).tofile(file)


def _band_file(spill: Path, band: int) -> Path:
    return spill / f"band-{band}.u64"


def _verified_pairs(codes: np.ndarray, pages: int, signatures: Path, min_similarity: float):
    """(a, b, similarity) of the candidate pairs (`codes`, smaller index × pages + larger) whose whole signatures,
    read from the spilled file, are at least `min_similarity` the same. Each batch of VERIFY_BATCH_PAIRS pairs reads
    only the rows it needs (`_rows_read`); a memory map of the file instead brought most of it into the worker at
    every batch (the kernel maps the pages around each one touched: +100 MiB at 100,000 pages)."""
    firsts, seconds, similarities = [], [], []
    with open(signatures, "rb") as file:
        for start in range(0, len(codes), VERIFY_BATCH_PAIRS):
            a, b = np.divmod(codes[start : start + VERIFY_BATCH_PAIRS], pages)
            needed = np.unique(np.r_[a, b])
            values = _rows_read(file.fileno(), needed)
            left, right = values[np.searchsorted(needed, a)], values[np.searchsorted(needed, b)]
            words_dice = dice_from_jaccard((left[:, :WORD_MINIMA] == right[:, :WORD_MINIMA]).mean(1))
            pair_dice = dice_from_jaccard((left[:, WORD_MINIMA:] == right[:, WORD_MINIMA:]).mean(1))
            similarity = text_similarity(words_dice, pair_dice, min_similarity)
            kept = similarity >= min_similarity
            firsts.append(a[kept])
            seconds.append(b[kept])
            similarities.append(similarity[kept])
    if not firsts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0)
    return np.concatenate(firsts), np.concatenate(seconds), np.concatenate(similarities)


def _rows_read(fd: int, rows: np.ndarray) -> np.ndarray:
    """The spilled signatures at `rows` (sorted, distinct), one read per run of consecutive rows."""
    values = np.empty((len(rows), SIGNATURE_VALUES), dtype=np.uint32)
    row_bytes = SIGNATURE_VALUES * values.itemsize
    into = memoryview(values).cast("B")
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    for begin, end in zip(np.r_[0, breaks].tolist(), np.r_[breaks, len(rows)].tolist(), strict=True):
        size = (end - begin) * row_bytes
        if os.preadv(fd, [into[begin * row_bytes : end * row_bytes]], int(rows[begin]) * row_bytes) != size:
            raise OSError(f"the spilled signatures end before row {int(rows[end - 1])}")
    return values


def near_duplicates(audit, out, judged_pages) -> None:
    """near-duplicate-content: indexable pages whose main text is at least min_similarity_pct % the same as
    another's (exact copies are duplicate-content: one of each is compared here)."""
    settings = out.settings
    min_similarity = settings.threshold("near-duplicate-content", "min_similarity_pct") / 100
    min_words = settings.threshold("near-duplicate-content", "min_words")
    rows = (
        judged_pages.filter(is_indexable=True, main_words__gte=min_words)
        .exclude(text_signature="")
        .order_by("main_text_hash", "url")
        .values_list("id", "main_text_hash", "text_signature")
    )
    # Held per page while the signatures are grouped: the id as 16 raw bytes (the signatures go to disk); URLs
    # are read afterwards for the pages that have a near duplicate (an id and URL object per page was ~200 bytes).
    ids = np.empty(rows.count(), dtype="S16")  # an upper bound of the distinct texts

    def signatures():
        nonlocal ids
        last_hash, n = None, 0
        for page_id, text_hash, signature in rows.iterator(chunk_size=2000):
            if text_hash == last_hash:
                continue
            last_hash = text_hash
            values = signature_values(signature)
            if values is not None:
                if n == len(ids):
                    ids = np.resize(ids, max(1, 2 * n))
                ids[n] = as_uuid(page_id).bytes
                yield n, values
                n += 1

    # Per page only its best few and how many: a template copied on every page matches ~100 others each.
    found = [
        (index, len(matches), matches[:OTHER_URLS_MAX])
        for index, matches in near_duplicate_groups(signatures(), min_similarity=min_similarity)
    ]
    urls = _urls_by_index(ids, {i for index, _n, best in found for i in (index, *(m for m, _ in best))})
    for index, count, matches in found:
        matches.sort(key=lambda m: (-m[1], urls[m[0]]))  # best first, then by URL
        best, similarity = matches[0]
        out.add(
            "near-duplicate-content",
            page_id=_stored_id(ids, index),
            page_url=urls[index],
            similarity_pct=round(similarity * 100, 1),
            most_similar_url=urls[best],
            near_duplicates=count,
            other_urls=[urls[m] for m, _ in matches[:OTHER_URLS_MAX]],
            min_similarity_pct=settings.threshold("near-duplicate-content", "min_similarity_pct"),
        )


def _stored_id(ids: np.ndarray, index: int) -> uuid.UUID:
    """The page id held at `index` as 16 raw bytes."""
    return uuid.UUID(bytes=bytes(ids[index]).ljust(16, b"\0"))  # numpy drops trailing zero bytes


def _urls_by_index(ids: np.ndarray, indexes: set[int]) -> dict[int, str]:
    """{index: URL} of the pages at `indexes` of `ids`, read in batches."""
    by_id = {_stored_id(ids, i): i for i in indexes}
    urls: dict[int, str] = {}
    wanted = list(by_id)
    for start in range(0, len(wanted), URL_LOOKUP_BATCH):
        part = wanted[start : start + URL_LOOKUP_BATCH]
        for page_id, url in Page.objects.filter(id__in=part).values_list("id", "url"):
            urls[by_id[as_uuid(page_id)]] = url
    return urls


def soft_404s(audit, out, judged_pages) -> None:
    """soft-404: 2xx HTML pages that read like an error page, or whose tiny main text is the same on many URLs."""
    settings = out.settings
    max_words = settings.threshold("soft-404", "max_words")
    min_pages = settings.threshold("soft-404", "min_pages")
    ok_html = judged_pages.filter(status_code__gte=200, status_code__lt=300, content_type__in=HTML_TYPES)
    tiny = ok_html.filter(main_words__lt=max_words).exclude(main_text_hash="")
    groups = tiny.order_by().values("main_text_hash").annotate(n=Count("id")).filter(n__gte=min_pages)
    repeated = dict(groups.values_list("main_text_hash", "n"))  # one entry per repeated text, not per page
    candidates = ok_html.exclude(soft_404_hint="")
    if repeated:
        candidates = candidates | tiny.filter(main_text_hash__in=groups.values("main_text_hash"))
    rows = candidates.order_by("url").values_list("id", "url", "soft_404_hint", "main_text_hash", "main_words")
    for page_id, url, hint, text_hash, words in rows.iterator(chunk_size=2000):
        reasons = [hint] if hint else []
        same_text = repeated.get(text_hash) if words < max_words else None
        if same_text:
            reasons.append(f"the same {words}-word text is on {same_text} URLs")
        if reasons:
            out.add("soft-404", page_id=page_id, page_url=url, reasons=reasons, words=words, same_text_urls=same_text)
