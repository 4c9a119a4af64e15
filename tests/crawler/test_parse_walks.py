"""What the page parse's cheaper tree walks must keep: the text XPath's string() gave, the elements and the order
the XPath unions gave, the element classes lxml.html's parser gave."""

import lxml.html

from crawler.parse import parse_document, parse_html

URL = "https://example.com/dir/page"


def page(body_html: str, head: str = ""):
    html = f"<!doctype html><html><head>{head}</head><body>{body_html}</body></html>"
    return parse_html(html.encode("utf-8"), URL)


def test_heading_and_title_text_is_the_subtree_text_without_the_own_tail():
    p = page(
        "<h2>a<b>b</b>c<span>d<i>e</i></span>f<!-- gone --></h2>tail<h3><img alt='x'></h3><h1>plain</h1>",
        head="<title>T<b>i</b>tle</title>",
    )
    assert p.headings == [(2, "abcdef"), (3, ""), (1, "plain")]
    assert p.titles == ["T<b>i</b>tle"]  # <title> holds raw text in HTML: no children to join


def test_svg_titles_are_skipped_at_any_depth():
    body = "<svg><g><a><title>deep</title></a></g></svg><div><title>in body</title></div>"
    p = page(body, head="<title>Real</title>")
    assert p.titles == ["Real", "in body"]


def test_app_root_from_any_of_its_markers_once_each():
    assert page('<p id="x">text</p><div ng-app="a" id="root"></div>').app_root
    assert not page('<div ng-app="a" id="root" data-reactroot="">rendered</div>').app_root


def test_microdata_types_come_after_json_ld_ones_without_repeats():
    p = page(
        '<script type="application/ld+json">{"@type": ["Product", "Offer"]}</script>'
        '<div itemscope itemtype="https://schema.org/Person https://schema.org/Product/">'
        '<div itemprop="knows" itemscope itemtype="https://schema.org/Nested"></div></div>'
        '<div itemscope itemtype="http://schema.org/Event"></div>'
    )
    assert p.structured_data_types == ["Product", "Offer", "Person", "Event"]


def test_protocol_relative_references_in_document_order_only_from_their_attribute():
    p = page(
        '<img src="//a.example/1.png"><script href="//ignored.example/x.js"></script><link rel="icon" src="//no">'
        '<embed src="//b.example/e"><link rel="stylesheet" href="//c.example/s.css"><iframe src="//d.example/">'
    )
    assert p.protocol_relative_resources == ["//a.example/1.png", "//b.example/e", "//c.example/s.css", "//d.example/"]


def test_control_characters_are_dropped_before_parsing():
    p = page("<h1>a\x0bb\x00c</h1><p>clean</p>")
    assert p.headings == [(1, "abc")]


def test_the_tree_has_lxml_html_element_classes():
    tree = parse_document(b"<html><body><FORM><Input><select></select></FORM><p>x</p></body></html>").tree
    assert isinstance(tree.find(".//form"), lxml.html.FormElement)
    assert isinstance(tree.find(".//input"), lxml.html.InputElement)
    assert isinstance(tree.find(".//select"), lxml.html.SelectElement)
    assert type(tree.find(".//p")) is lxml.html.HtmlElement
    assert tree.find(".//p").text_content() == "x"
