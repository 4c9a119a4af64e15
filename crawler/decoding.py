"""Bounded gzip/deflate decoding: never more decoded bytes than asked for, so a decompression bomb costs no more
than a plain large body (crawler.fetch reads answers through it, crawler.discovery gzip'd sitemaps)."""

import zlib


class ZlibDecoder:
    """Incremental gzip/deflate decoding that never produces more than asked for."""

    def __init__(self, coding: str):
        self._gzip = coding in ("gzip", "x-gzip")
        # gzip: 32 + MAX_WBITS also accepts a zlib header (servers mix them up); deflate: zlib
        # stream, falling back to raw deflate (what some servers send) on the first error.
        self._obj = zlib.decompressobj(32 + zlib.MAX_WBITS if self._gzip else zlib.MAX_WBITS)
        self._started = False
        self.pending = b""  # input left over when max_length was reached: decoded by the next call

    def decompress(self, data: bytes, max_length: int) -> bytes:
        data = self.pending + data if self.pending else data
        out = []
        while data and max_length > 0:
            try:
                chunk = self._obj.decompress(data, max_length)
            except zlib.error:
                if self._gzip or self._started:
                    raise
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                self._started = True
                continue
            self._started = True
            out.append(chunk)
            max_length -= len(chunk)
            if self._obj.eof:
                data = self._obj.unused_data
                if not (self._gzip and data[:2] == b"\x1f\x8b"):
                    data = b""
                    break  # trailing junk after the stream is ignored, as browsers do
                self._obj = zlib.decompressobj(32 + zlib.MAX_WBITS)  # next gzip member
            else:
                data = self._obj.unconsumed_tail  # non-empty only when max_length was reached
        self.pending = data
        return b"".join(out)


def decompress_capped(data: bytes, cap: int) -> tuple[bytes, bool]:
    """gzip (or zlib) `data` decoded up to `cap` bytes: (decoded, truncated). zlib.error on bad data."""
    decoded = ZlibDecoder("gzip").decompress(data, cap + 1)
    return decoded[:cap], len(decoded) > cap
