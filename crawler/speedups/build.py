"""Build crawler.speedups' C extension in place: `python -m crawler.speedups.build` (`make install` runs it).
Intermediate files go to var/build; the module lands beside its source."""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

SOURCE = Path(__file__).with_name("_speedups.c")
ROOT = SOURCE.parents[2]
BUILD = ROOT / "var" / "build"  # object files and the module before it is copied beside its source


def main() -> int:
    os.chdir(ROOT)  # setuptools places an in-place build relative to the working directory
    extension = Extension(
        "crawler.speedups._speedups",
        [str(SOURCE.relative_to(ROOT))],
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
