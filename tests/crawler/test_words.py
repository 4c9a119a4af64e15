"""crawler.words does in bulk exactly what `" ".join(text.split()).lower()` and `len(text.split())` do."""

import random
import sys

import pytest

from crawler.words import WHITESPACE, first_words, words_of

# Letters whose lower case is special (final sigma, a capital I with a dot that lower-cases to two characters),
# letters past the lower-case table (fullwidth, Deseret), CJK, an emoji, a lone surrogate, and every whitespace.
ALPHABET = (
    list("aZqQ09.-'")
    + ["É", "ß", "Ω", "Σ", "σ", "ς", "İ", "Ж", "ж", "Ａ", "𐐀", "日", "本", "🙂", "\udcff", "ǅ", "Ⅻ"]
    + [chr(c) for c in WHITESPACE]
)


def test_the_whitespace_list_is_pythons():
    assert set(WHITESPACE) == {c for c in range(sys.maxunicode + 1) if chr(c).isspace()}


@pytest.mark.parametrize("seed", range(40))
def test_words_are_what_split_join_and_lower_make(seed):
    rng = random.Random(seed)
    alphabet = ALPHABET if seed % 2 else [c for c in ALPHABET if c.isascii()]  # the ASCII path too
    for length in (0, 1, 2, 5, 50, 2000):
        text = "".join(rng.choice(alphabet) for _ in range(length))
        words = words_of(text)
        assert words.joined == " ".join(text.split()).lower(), repr(text)
        assert words.count == len(text.split()) and words.rest == ""


PARTIAL = ["", "   ", "one", "one two", "one two ", " one\ttwo\u3000thr", "ΟΔΟΣ ΚΑΙ ΣΑΣ", "İstanbul x"]


@pytest.mark.parametrize("text", PARTIAL)
def test_a_last_word_not_ended_is_left_for_the_next_step(text):
    words = words_of(text, partial=True)
    expected = text.split()
    if text and not text[-1].isspace() and expected:
        assert words.rest == expected.pop()
    else:
        assert words.rest == ""
    assert words.joined == " ".join(expected).lower() and words.count == len(expected)


@pytest.mark.parametrize("joined", ["", "a", "a b c d", "ab cd ef", "naïve café au lait"])
def test_first_words(joined):
    for count in range(6):
        assert first_words(joined, count) == " ".join(joined.split(" ")[:count] if joined else [])


# --- issue 27: text written without spaces ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text, count, cjk_chars, cjk_words, units",
    [
        ("東京の天気は晴れです。", 1, 10, 1, 10),  # Japanese: one split() "word", ten characters
        ("我们的网站很快 hello world", 3, 7, 1, 9),  # Chinese beside two English words
        ("ラーメン・カレー", 1, 7, 1, 7),  # the long-vowel mark counts, the middle dot does not
        ("한국어는 띄어쓰기를 합니다", 3, 0, 0, 3),  # Korean puts spaces between words: counted by split()
        ("plain English text", 3, 0, 0, 3),
        ("𠀋𠂉 x", 2, 2, 1, 3),  # supplementary-plane ideographs
    ],
)
def test_cjk_characters_are_counted_beside_the_words(text, count, cjk_chars, cjk_words, units):
    words = words_of(text)
    assert (words.count, words.cjk_chars, words.cjk_words, words.units) == (count, cjk_chars, cjk_words, units)
    assert words.joined == " ".join(text.split()).lower()  # the words themselves are split()'s, as before
