"""Build crawler.speedups' C extension in place: `python -m crawler.speedups.build` (`make install` runs it).
Intermediate files go to var/build; the module lands beside its sources. The text walk reads lxml's libxml2 tree, so
it is compiled against the headers the installed lxml ships (lxml.get_include()): rebuild after upgrading lxml
(`make install` does, requirements/base.txt pins it)."""

import os
import sys
from pathlib import Path

import lxml
from setuptools import Extension, setup

HERE = Path(__file__).parent
SOURCES = [HERE / name for name in ("_speedups.c", "links.c", "minhash.c", "textwalk.c", "treescan.c")]
ROOT = HERE.parents[1]
BUILD = ROOT / "var" / "build"  # object files and the module before it is copied beside its source


def main() -> int:
    os.chdir(ROOT)  # setuptools places an in-place build relative to the working directory
    extension = Extension(
        "crawler.speedups._speedups",
        [str(source.relative_to(ROOT)) for source in SOURCES],
        include_dirs=[str(HERE.relative_to(ROOT)), *lxml.get_include()],
        depends=[str((HERE / "speedups.h").relative_to(ROOT))],
        extra_compile_args=["-O2", "-Wall", "-Werror=implicit-function-declaration"],
    )
    setup(
        name="sitewarden-speedups",
        ext_modules=[extension],
        packages=[],  # only the extension: no package discovery over the repository
        script_args=[
            "--quiet",
            "build_ext",
            "--inplace",
            "--build-temp",
            str(BUILD / "temp"),
            "--build-lib",
            str(BUILD / "lib"),
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
