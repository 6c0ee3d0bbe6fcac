"""Every Python and data file of the source package is installed (listed in
gpc/meson.build) and present in the installed package."""

import re
from importlib import resources
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "gpc"


def _source_files():
    return sorted(str(p.relative_to(SOURCE)) for p in SOURCE.rglob("*")
                  if p.is_file() and p.suffix in (".py", ".csv", ".md")
                  and "__pycache__" not in p.parts)


@pytest.mark.skipif(not (SOURCE / "meson.build").exists(),
                    reason="needs the source tree next to the tests")
def test_every_source_file_is_listed_and_installed():
    listed = set(re.findall(r"'([^']+\.(?:py|csv|md))'", (SOURCE / "meson.build")
                            .read_text()))
    files = _source_files()
    assert files, "no source files found"
    missing = [f for f in files if f not in listed]
    assert not missing, f"not listed in gpc/meson.build: {missing}"
    installed = resources.files("gpc")
    absent = [f for f in files if not installed.joinpath(f).is_file()]
    assert not absent, f"not in the installed package: {absent}"


def test_one_version_string():
    # The version is written only in meson.build's project(); the package metadata
    # (pyproject.toml declares it dynamic) and gpc.__version__ both come from it.
    from importlib import metadata

    import gpc

    assert gpc.__version__ == metadata.version("gpc")
    root = SOURCE.parent
    if (root / "meson.build").exists():
        declared = re.search(r"project\([^)]*?version:\s*'([^']+)'",
                             (root / "meson.build").read_text(), re.S).group(1)
        assert gpc.__version__ == declared
        assert not re.search(r"^version\s*=", (root / "pyproject.toml").read_text(),
                             re.M)
