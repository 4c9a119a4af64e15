"""Near-duplicate benchmark: the MinHash LSH grouping finalize runs (audits.checks.content.near_duplicate_groups),
timed with its peak memory on N synthetic page signatures, without a database.

python -m bench.near_duplicates [--pages 100000] [--seed 0]

Texts are 300 words drawn from a 20,000-word vocabulary; 1 % of the pages get a 95 %-similar twin (must be
found) and 1 % a 70 %-similar one (must not be). Signatures are made with the crawl's own `text_signature`
(timed apart: that cost is paid in the fetch threads, page by page); the grouping is what finalize pays at once.
It prints a block and one `NEAR_DUPLICATES_JSON {...}` line; exit 1 when fewer than 99 % of the planted pairs
are found (MinHash estimates: with 128 values a 95 % pair reads under 90 % about 2 times in 1,000) or a 70 % pair
is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

import django
import psutil

from bench.rss import RssSampler

DEFAULT_PAGES = 100_000
WORDS_PER_PAGE = 300
VOCABULARY_WORDS = 20_000
TWIN_SHARE = 0.01  # of the pages, each for the 95 % and the 70 % twins
MIB = 1024 * 1024
MIN_RECALL = 0.99
JSON_PREFIX = "NEAR_DUPLICATES_JSON "


def _twin(words: list[str], same_share: float, rng: random.Random) -> list[str]:
    keep = round(len(words) * same_share)
    return words[:keep] + [f"twin{rng.randrange(10**9)}" for _ in range(len(words) - keep)]


def run(pages: int, seed: int = 0) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
    # why: Django must be set up before the checks package (its registry reads the models) is imported.
    from audits.checks.content import near_duplicate_groups, signature_values, text_signature

    rng = random.Random(seed)
    vocabulary = [f"word{i}" for i in range(VOCABULARY_WORDS)]
    twins = max(1, round(pages * TWIN_SHARE))
    base_count = pages - 2 * twins
    started = time.perf_counter()
    signatures = []
    close_pairs, far_pairs = set(), set()
    texts_of_originals: list[list[str]] = []
    for n in range(base_count):
        words = rng.choices(vocabulary, k=WORDS_PER_PAGE)
        if n < 2 * twins:
            texts_of_originals.append(words)
        signatures.append(signature_values(text_signature(" ".join(words))))
    for n in range(twins):
        signatures.append(signature_values(text_signature(" ".join(_twin(texts_of_originals[n], 0.95, rng)))))
        close_pairs.add((n, len(signatures) - 1))
    for n in range(twins):
        twin = _twin(texts_of_originals[twins + n], 0.70, rng)
        signatures.append(signature_values(text_signature(" ".join(twin))))
        far_pairs.add((twins + n, len(signatures) - 1))
    del texts_of_originals
    signing_s = time.perf_counter() - started

    rss_before = psutil.Process().memory_info().rss
    found: set[tuple[int, int]] = set()
    with RssSampler(tree=False) as rss:
        started = time.perf_counter()
        # As finalize calls it: the row count known, so the signatures go straight into one array of their size.
        groups = near_duplicate_groups(enumerate(signatures), min_similarity=0.9)
        for index, matches in groups:
            for other, _similarity in matches:
                found.add((min(index, other), max(index, other)))
        grouping_s = time.perf_counter() - started
    result = {
        "pages": pages,
        "signing_s": round(signing_s, 2),
        "signing_ms_per_page": round(signing_s * 1000 / pages, 3),
        "grouping_s": round(grouping_s, 2),
        "grouping_us_per_page": round(grouping_s * 1e6 / pages, 1),
        "rss_before_mib": round(rss_before / MIB, 1),
        "rss_peak_mib": round(rss.peak / MIB, 1),
        "grouping_extra_mib": round((rss.peak - rss_before) / MIB, 1),
        "planted_95": len(close_pairs),
        "found_95": len(close_pairs & found),
        "planted_70": len(far_pairs),
        "reported_70": len(far_pairs & found),
        "other_pairs": len(found - close_pairs - far_pairs),
    }
    return result


def print_result(result: dict) -> None:
    print(f"\n== Near duplicates (MinHash LSH) on {result['pages']:,} synthetic pages ==")
    print(f"signatures (crawl time): {result['signing_s']} s, {result['signing_ms_per_page']} ms a page")
    print(f"grouping (finalize):     {result['grouping_s']} s, {result['grouping_us_per_page']} µs a page")
    print(
        f"memory: RSS {result['rss_before_mib']} MiB before, peak {result['rss_peak_mib']} MiB "
        f"(+{result['grouping_extra_mib']} MiB for the grouping)"
    )
    print(
        f"planted 95 % pairs found: {result['found_95']}/{result['planted_95']}; "
        f"70 % pairs reported: {result['reported_70']}/{result['planted_70']}; other pairs: {result['other_pairs']}"
    )
    print(JSON_PREFIX + json.dumps(result))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = run(args.pages, seed=args.seed)
    print_result(result)
    ok = result["found_95"] >= MIN_RECALL * result["planted_95"] and result["reported_70"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
