"""crawler.speedups' C minhash gives exactly the minima of the numpy code it stands for
(audits.checks.content._signature_values_numpy) on any text, holds up on hostile input, and `make install` builds
it (`manage.py check` says when it did not)."""

import random

import lxml.html
import numpy as np
import pytest

from audits import apps
from audits.checks import content
from audits.checks.content import (
    PAIR_MINIMA,
    SIGNATURE_SEED,
    SIGNED_TEXT_MAX_BYTES,
    WORD_MINIMA,
    _borrow_orders,
    _signature_values_numpy,
    text_signature,
)
from crawler import speedups

VOCABULARY = ["the", "of", "naïve", "ΟΔΟΣ", "日本", "🙂", "x", "\udcff", "", "w"] + [f"w{i}" for i in range(300)]


@pytest.fixture
def native():
    """The built extension: `make install` builds it, and a test run without it says why."""
    assert speedups.native is not None, "make install builds crawler.speedups (a C compiler and Python's headers)"
    return speedups.native


@pytest.fixture
def minhash(native):
    def signed(text: str) -> bytes:
        return native.minhash(
            text.encode("utf-8", "surrogatepass"),
            _borrow_orders(WORD_MINIMA, SIGNATURE_SEED),
            _borrow_orders(PAIR_MINIMA, SIGNATURE_SEED + 1),
        )

    return signed


def _text(rng: random.Random, words: int, vocabulary=VOCABULARY) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(words))


@pytest.mark.parametrize("seed", range(12))
def test_the_c_minima_are_the_numpy_minima(minhash, seed):
    rng = random.Random(seed)
    # "" in the vocabulary makes empty words (two spaces in a row, a space first or last): hashed as the numpy code
    # hashes them, though a joined text never holds one.
    for words in (1, 2, 3, 7, 60, 128, 129, 1000, 5000, 20000):
        text = _text(rng, words)
        assert minhash(text) == _signature_values_numpy(text), (seed, words)


@pytest.mark.parametrize(
    "text",
    [
        "a",
        " ",
        "  a  ",
        "x" * (SIGNED_TEXT_MAX_BYTES + 10),  # one word past the signed bytes: nothing of it is whole
        " " + "x" * (SIGNED_TEXT_MAX_BYTES + 10),
        "ab " * (SIGNED_TEXT_MAX_BYTES // 3 + 50),  # cut at the last space within the signed bytes
        "a" * (SIGNED_TEXT_MAX_BYTES - 1) + " b",  # the space is the limit's last byte
        "a" * SIGNED_TEXT_MAX_BYTES + " b",  # the space is the first byte past it
        "a" * SIGNED_TEXT_MAX_BYTES,  # exactly the limit: signed whole
    ],
    ids=lambda t: f"{len(t)}-chars",
)
def test_edges_of_the_text_and_of_the_signed_bytes(minhash, text):
    assert minhash(text) == _signature_values_numpy(text)


def test_a_text_of_many_distinct_words_grows_the_table_and_the_next_text_is_unaffected(minhash):
    rng = random.Random(5)
    distinct = " ".join(f"d{i}" for i in range(40_000))  # more distinct words and pairs than a kept table holds
    small = _text(rng, 300)
    before = minhash(small)
    assert minhash(distinct) == _signature_values_numpy(distinct)
    assert minhash(small) == before == _signature_values_numpy(small)


def test_text_signature_is_the_same_with_and_without_the_extension(native, monkeypatch):
    rng = random.Random(9)
    cjk = "東 京 は 晴 れ で す " * 40
    texts = ["", "one", _text(rng, 700), _text(rng, 5000), cjk, "東京は晴れです 東京は雨です"]
    with_c = [text_signature(t) for t in texts] + [text_signature(t, characters=True) for t in texts]
    monkeypatch.setattr(content, "native", None)
    without = [text_signature(t) for t in texts] + [text_signature(t, characters=True) for t in texts]
    assert with_c == without
    assert with_c[0] == "" and all(s.startswith(content.SIGNATURE_PREFIX) for s in with_c[1:6])


@pytest.mark.parametrize(
    "orders, message",
    [
        (np.zeros((128, 128), dtype=np.int32), "square int64"),
        (np.zeros((128, 64), dtype=np.int64), "square int64"),
        (np.zeros((96, 96), dtype=np.int64), "power-of-two"),
        (np.zeros((1, 1), dtype=np.int64), "at least 2"),
        (np.zeros(128, dtype=np.int64), "square int64"),
        (np.zeros((128, 256), dtype=np.int64)[:, ::2], "contiguous"),
    ],
)
def test_orders_of_the_wrong_shape_are_refused(native, orders, message):
    good = _borrow_orders(PAIR_MINIMA, SIGNATURE_SEED + 1)
    with pytest.raises((ValueError, BufferError), match=message):
        native.minhash(b"a b", orders, good)
    with pytest.raises((ValueError, BufferError), match=message):
        native.minhash(b"a b", good, orders)


def test_orders_naming_a_bin_out_of_range_read_nothing_from_outside(native):
    # Every bin names bin 10**6 first: the C code skips it (it never reads past the array) and looks on in its order.
    # A text of one word fills one bin of each half; the others borrow its value, but the one whose order named it
    # first (now 10**6) finds no filled bin and keeps the empty value, 0xFFFFFFFF, at every call.
    orders = np.array(_borrow_orders(WORD_MINIMA, SIGNATURE_SEED))
    orders[:, 0] = 10**6
    values = np.frombuffer(native.minhash(b"one", orders, orders), dtype="<u4")
    assert native.minhash(b"one", orders, orders) == values.tobytes()
    for half in (values[:WORD_MINIMA], values[WORD_MINIMA:]):
        assert len(set(half.tolist()) - {0xFFFFFFFF}) == 1


def test_the_text_must_be_bytes(native):
    with pytest.raises(TypeError):
        native.minhash("a str", _borrow_orders(WORD_MINIMA, 1), _borrow_orders(PAIR_MINIMA, 2))


def test_manage_py_check_warns_when_the_extension_is_not_built(native, monkeypatch):
    assert apps.speedups_built(None) == []
    monkeypatch.setattr(speedups, "native", None)
    (warning,) = apps.speedups_built(None)
    assert warning.id == "sitewarden.W001" and "python -m crawler.speedups.build" in warning.hint


# --- the text walk --------------------------------------------------------------------------------------------------

TEXT_FIELDS = (
    "text_hash", "main_text_hash", "word_count", "main_word_count", "word_unit", "main_text", "short_main_prose",
    "lorem_ipsum", "lorem_excerpt",
)  # fmt: skip
ROLES = ["main", "Main", "navigation", " Navigation ", "NAVIGATION", "banner\u00a0", "\u3000contentinfo",
         "complementary", "presentation", "", "navigation&amp;"]  # fmt: skip
TAGS = ["p", "div", "span", "b", "a", "nav", "header", "footer", "aside", "main", "section", "article", "script",
        "style", "noscript", "template", "svg", "pre", "code", "br", "img", "li", "h1", "td", "x-widget", "o:p",
        "textarea", "button"]  # fmt: skip
WORDS = ["alpha", "Beta", "lorem", "ipsum", "ΣΑΣ", "İstanbul", "東京は晴れ", "naïve", "&amp;", "&nbsp;", "x\u00a0y",
         "\u2028", "🙂", "&#xdcff;", "word"]  # fmt: skip


def _random_markup(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(0, 4 if depth < 5 else 0) + 1):
        if rng.random() < 0.45 or depth >= 5:
            parts.append(rng.choice(WORDS) + rng.choice([" ", "", "\n  ", "\t"]))
            continue
        tag = rng.choice(TAGS)
        role = f' role="{rng.choice(ROLES)}"' if rng.random() < 0.3 else ""
        parts.append(f"<{tag}{role}>{_random_markup(rng, depth + 1)}</{tag}>")
    return "".join(parts)


def _text_fields(body: bytes, monkeypatch, *, python: bool) -> dict:
    from crawler.parse import text as parse_text
    from crawler.parse.data import PageData
    from crawler.parse.document import parse_document

    with monkeypatch.context() as patch:
        if python:
            patch.setattr(parse_text, "native", None)
        page = PageData(base_url="https://example.com/")
        parse_text.page_text(parse_document(body).tree, page, "https://example.com/")
    return {name: getattr(page, name) for name in TEXT_FIELDS}


def _assert_walks_agree(body: bytes, monkeypatch) -> dict:
    in_c = _text_fields(body, monkeypatch, python=False)
    assert in_c == _text_fields(body, monkeypatch, python=True), body[:300]
    return in_c


@pytest.mark.parametrize("seed", range(25))
def test_the_c_text_walk_gives_the_python_walks_words(native, monkeypatch, seed):
    rng = random.Random(seed)
    for _ in range(40):
        _assert_walks_agree(f"<html><body>{_random_markup(rng)}</body></html>".encode(), monkeypatch)


def test_the_c_text_walk_on_the_benchmark_sites_pages(native, monkeypatch, tmp_path):
    from bench.sitegen import generate_site

    generate_site(tmp_path, 30, seed=3, page_kb=40, features=True)
    pages = sorted(tmp_path.rglob("*.html"))
    assert len(pages) >= 30
    counted = [_assert_walks_agree(path.read_bytes(), monkeypatch)["word_count"] for path in pages]
    assert sum(counted) > 30 * 1000  # real pages of words, not empty ones agreeing


@pytest.mark.parametrize(
    "body",
    [
        "<main>in <b>main</b></main> out <main>second</main>",
        "<div role='main'>by role</div><nav>menu</nav> after",
        "<main><main>nested</main></main> page",  # walked apart (the main text on its own): C gives the visible text
        "<template><main>hidden</main></template> shown",
        "<nav role=navigation>a<nav>b</nav>c</nav>tail<header>h</header><p>body</p><aside>x</aside>end",
        "<div role=' Navigation\u00a0'>menu</div><p>text</p>",
        "<p>" + "a<b>b</b> " * 30_000 + "</p>",  # many steps; a word split over two nodes at each
        "<pre>" + "x" * 200_000 + "</pre> y",  # one node longer than a step
        "<p>lorem <i>ipsum</i> dolor</p><nav>lorem ipsum</nav>",
        "",
        "<svg><text>not text</text></svg>tail<script>x</script>y",
    ],
    ids=lambda body: body[:30],
)
def test_the_c_text_walk_on_markup_it_must_model(native, monkeypatch, body):
    _assert_walks_agree(f"<html><body>{body}</body></html>".encode(), monkeypatch)


def test_a_node_the_c_walk_does_not_model_hands_the_page_to_the_python_walk(native, monkeypatch):
    from crawler.parse import text as parse_text

    # crawler.parse.document's parser drops comments; lxml.html's keeps them, and the C walk stops on one.
    tree = lxml.html.fromstring("<html><body><p>one <!-- a comment kept --> two</p></body></html>")
    with pytest.raises(NotImplementedError):
        native.text_walk(tree, (), lambda text: None, None, 1024)
    visible, main = parse_text._one_walk(tree, [], with_main=True)
    monkeypatch.setattr(parse_text, "native", None)
    python_visible, python_main = parse_text._one_walk(tree, [], with_main=True)
    assert (visible.close(), main.close()) == (python_visible.close(), python_main.close())
    assert visible.count == python_visible.count == 1  # iterwalk yields no comment: its tail " two" is not read


def test_the_c_walk_takes_lxml_elements_only(native):
    with pytest.raises(TypeError, match="lxml element"):
        native.text_walk("<p>", (), print, None, 1024)
    tree = lxml.html.fromstring("<p>x</p>")
    with pytest.raises(TypeError, match="lxml element"):
        native.text_walk(tree, ("not an element",), print, print, 1024)


# --- the tree's markers ---------------------------------------------------------------------------------------------

ATTRIBUTES = ['id="root"', 'id="app"', 'id="other"', 'id=" root"', "data-reactroot", 'data-reactroot=""', "ng-app",
              "itemscope", 'typeof="Person"', 'role="main"', 'role="Main"', 'role=" main"', 'xml:id="root"',
              'role="ma&#105;n"', 'id="&#95;_next"']  # fmt: skip


def _marked_markup(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 4 if depth < 6 else 1)):
        if rng.random() < 0.3 or depth >= 6:
            parts.append(rng.choice(WORDS) + " ")
            continue
        tag = rng.choice(["div", "main", "section", "span", "p", "template", "svg"])
        attributes = " ".join(rng.sample(ATTRIBUTES, rng.choice([0, 0, 1, 2])))
        parts.append(f"<{tag} {attributes}>{_marked_markup(rng, depth + 1)}</{tag}>")
    return "".join(parts)


def _markers_agree(tree) -> None:
    from crawler.parse.markers import APP_ROOT_IDS, tree_markers_by_xpath

    mains, app_roots, itemscope, typeof = speedups.native.tree_markers(tree, APP_ROOT_IDS)
    expected = tree_markers_by_xpath(tree)
    # The same elements (lxml gives one proxy per node while it lives), in the same order.
    assert [id(e) for e in mains] == [id(e) for e in expected.mains]
    assert [id(e) for e in app_roots] == [id(e) for e in expected.app_roots]
    assert (itemscope, typeof) == (expected.itemscope, expected.typeof)


@pytest.mark.parametrize("seed", range(20))
def test_the_c_markers_are_the_xpath_markers(native, seed):
    from crawler.parse.document import parse_document

    rng = random.Random(seed)
    found = 0
    for _ in range(50):
        tree = parse_document(f"<html><body>{_marked_markup(rng)}</body></html>".encode()).tree
        _markers_agree(tree)
        found += len(tree.xpath("//main | //@role | //@id"))
    assert found > 100  # the generated pages carry what is compared


def test_the_c_markers_on_the_benchmark_sites_pages(native, tmp_path):
    from bench.sitegen import generate_site
    from crawler.parse.document import parse_document

    generate_site(tmp_path, 20, seed=4, page_kb=40, features=True)
    for path in sorted(tmp_path.rglob("*.html")):
        _markers_agree(parse_document(path.read_bytes()).tree)


def test_the_markers_of_a_subtree_are_its_own(native):
    from crawler.parse.document import parse_document

    tree = parse_document(
        b"<html><body><main>a</main><div id='x'><div role='main' id='app'>b</div></div></body></html>"
    )
    subtree = tree.tree.xpath("//div[@id='x']")[0]
    mains, app_roots, _, _ = native.tree_markers(subtree, ("app",))
    assert [e.get("role") for e in mains] == ["main"] and [e.get("id") for e in app_roots] == ["app"]


def test_the_markers_take_lxml_elements_and_str_ids_only(native):
    tree = lxml.html.fromstring("<p>x</p>")
    with pytest.raises(TypeError, match="lxml element"):
        native.tree_markers("<p>", ("root",))
    with pytest.raises(TypeError, match="str"):
        native.tree_markers(tree, (1,))


# --- the links ------------------------------------------------------------------------------------------------------

SPACES = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())  # what collapse() splits on
HREFS = ['href="/a"', 'href=" /b\t"', 'href=""', "href", 'href="#top"', 'href="  "', 'href="x?a=1&amp;b=2"',
         'href="ﬁ/é"', 'HREF="/upper"', ""]  # fmt: skip
RELS = ['rel="nofollow"', 'rel="NoFollow ugc"', 'rel=""', ""]
ALTS = ['alt="pic"', 'alt="  "', 'alt=""', 'alt=" two\u00a0words "', ""]


def _linked_markup(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 4 if depth < 4 else 1)):
        roll = rng.random()
        if roll < 0.3 or depth >= 4:
            parts.append(rng.choice(WORDS) + rng.choice([" ", "", rng.choice(SPACES), "\n"]))
        elif roll < 0.45:
            parts.append(f"<img {rng.choice(ALTS)}>")
        elif roll < 0.55:
            parts.append(f"<area {rng.choice(HREFS)} {rng.choice(ALTS)} {rng.choice(RELS)}>")
        else:
            tag = rng.choice(["a", "a", "span", "b", "div", "p"])
            attributes = f"{rng.choice(HREFS)} {rng.choice(RELS)}" if tag == "a" else ""
            parts.append(f"<{tag} {attributes}>{_linked_markup(rng, depth + 1)}</{tag}>")
    return "".join(parts)


def _links_agree(tree, max_chars: int = 200) -> list:
    from crawler import limits
    from crawler.parse import page as parse_page

    found = speedups.native.links(tree, max_chars)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(limits, "MAX_ANCHOR_TEXT_CHARS", max_chars)
        expected = [
            (el.tag, el.get("href"), el.get("rel"), parse_page._anchor_text(el)) for el in tree.iter("a", "area")
        ]
    assert found == expected
    return found


@pytest.mark.parametrize("seed", range(20))
def test_the_c_links_are_what_lxml_reads(native, seed):
    from crawler.parse.document import parse_document

    rng = random.Random(seed)
    found = []
    for _ in range(80):
        tree = parse_document(f"<html><body>{_linked_markup(rng)}</body></html>".encode()).tree
        found += _links_agree(tree, max_chars=rng.choice([200, 200, 5, 1, 0]))
    assert sum(1 for _tag, href, _rel, anchor in found if href and anchor) > 40  # links with text were compared
    assert {"a", "area"} <= {tag for tag, *_ in found}


def test_the_c_links_on_the_benchmark_sites_pages(native, tmp_path):
    from bench.sitegen import generate_site
    from crawler.parse.document import parse_document

    generate_site(tmp_path, 20, seed=5, page_kb=40, features=True)
    links = [_links_agree(parse_document(path.read_bytes()).tree) for path in sorted(tmp_path.rglob("*.html"))]
    assert sum(map(len, links)) > 20 * 20


def test_an_anchor_without_text_takes_the_first_image_alt_inside(native):
    from crawler.parse.document import parse_document

    tree = parse_document(
        b"<html><body><a href='/x'> <img alt=' '><span><img alt='\xc2\xa0logo  of us '></span><img alt='no'></a>"
        b"<a href='/y'>text <img alt='not this'></a><area href='/z' alt=' map '></body></html>"
    ).tree
    assert [anchor for *_, anchor in _links_agree(tree)] == ["logo of us", "text", "map"]


def test_a_node_the_c_links_do_not_model_hands_the_page_to_lxml(native):
    from crawler.parse import page as parse_page
    from crawler.parse.data import PageData

    # lxml.html keeps comments (crawler.parse.document's parser drops them): the C reader stops on one.
    tree = lxml.html.fromstring("<html><body><a href='/a'>one <!-- kept --> two</a><a href='/b'>b</a></body></html>")
    with pytest.raises(NotImplementedError):
        native.links(tree, 200)
    page = PageData(base_url="https://example.com/")
    parse_page._links(tree, page, "https://example.com/", is_internal=lambda url: True)
    assert [(link.url, link.anchor) for link in page.links] == [
        ("https://example.com/a", "one two"),
        ("https://example.com/b", "b"),
    ]


def test_the_c_links_take_an_lxml_element_and_a_length(native):
    with pytest.raises(TypeError, match="lxml element"):
        native.links("<a href=x>", 200)
    with pytest.raises(ValueError, match="not negative"):
        native.links(lxml.html.fromstring("<a href=x>y</a>"), -1)


@pytest.mark.parametrize("seed", range(5))
def test_a_page_parses_the_same_with_and_without_the_extension(native, monkeypatch, seed):
    import dataclasses

    from crawler.parse import markers, parse_html
    from crawler.parse import page as parse_page
    from crawler.parse import text as parse_text

    rng = random.Random(seed)
    bodies = [
        f"<html><body>{_marked_markup(rng)}{_random_markup(rng)}{_linked_markup(rng)}</body></html>".encode()
        for _ in range(30)
    ]
    with_c = [dataclasses.asdict(parse_html(body, "https://example.com/")) for body in bodies]
    monkeypatch.setattr(markers, "native", None)
    monkeypatch.setattr(parse_text, "native", None)
    monkeypatch.setattr(parse_page, "native", None)
    assert [dataclasses.asdict(parse_html(body, "https://example.com/")) for body in bodies] == with_c


@pytest.mark.slow
def test_the_c_walk_lower_cases_splits_and_counts_every_code_point_as_python_does(native, monkeypatch):
    # Each character a word of its own (numeric references: the parser writes the character itself), then every
    # character in one word, in steps of the plane: lower-casing (two characters by str.lower() alone), the
    # whitespace set and the CJK ranges are all compared with words_of's.
    codes = [c for c in range(0x20, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    for first in range(0, len(codes), 0x40000):
        part = codes[first : first + 0x40000]
        spaced = " ".join(f"&#x{c:x};" for c in part)
        joined = "".join(f"&#x{c:x};" for c in part[::7])
        words = [_assert_walks_agree(f"<p>{body}</p>".encode(), monkeypatch)["word_count"] for body in (spaced, joined)]
        assert words[0] > len(part) // 2 and words[1] >= 1
