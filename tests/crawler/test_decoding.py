"""crawler.decoding: bounded gzip/deflate decoding."""

import gzip

from crawler.decoding import decompress_capped


def test_decompress_capped():
    data = gzip.compress(b"a" * 1000)
    assert decompress_capped(data, 2000) == (b"a" * 1000, False)
    assert decompress_capped(data, 10) == (b"a" * 10, True)
    two_members = gzip.compress(b"one ") + gzip.compress(b"two")
    assert decompress_capped(two_members, 100) == (b"one two", False)
