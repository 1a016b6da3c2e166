"""One version, one license (VERSION and LICENSE at the repository's root).

Every package's metadata takes its version from VERSION and names the MIT
license, and each client folder that is published on its own (Go module,
npm package, composer package, Python project) carries a byte-identical copy
of LICENSE, so the license travels inside every artifact. The generated C++
header is checked too when CTest gives its path (PATHLOCK_VERSION_HEADER).
"""
import json
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
LICENSE = (ROOT / "LICENSE").read_bytes()


def found(path, pattern):
    match = re.search(pattern, (ROOT / path).read_text(encoding="utf-8"), re.M)
    assert match, f"{path}: no match for {pattern!r}"
    return match.group(1)


def test_version_is_semver():
    assert re.fullmatch(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)", VERSION), VERSION


def test_license_is_mit():
    assert LICENSE.startswith(b"MIT License\n")


@pytest.mark.parametrize("path,pattern", [
    ("clients/go/client.go", r'^const Version = "([^"]+)"'),
    ("clients/php/src/LockEngine.php", r"public const VERSION = '([^']+)';"),
])
def test_source_constants(path, pattern):
    assert found(path, pattern) == VERSION


def test_npm_package_and_lockfile():
    package = json.loads((ROOT / "clients/node/package.json").read_text(encoding="utf-8"))
    lock = json.loads((ROOT / "clients/node/package-lock.json").read_text(encoding="utf-8"))
    assert (package["version"], package["license"]) == (VERSION, "MIT")
    assert lock["version"] == VERSION and lock["packages"][""]["version"] == VERSION


def test_composer():
    composer = json.loads((ROOT / "clients/php/composer.json").read_text(encoding="utf-8"))
    assert (composer["version"], composer["license"]) == (VERSION, "MIT")


def test_python_project():
    text = (ROOT / "clients/python/pyproject.toml").read_text(encoding="utf-8")
    assert 'license = { text = "MIT" }' in text
    assert '"VERSION"' in (ROOT / "clients/python/setup.py").read_text(encoding="utf-8")


def test_cmake_reads_the_file():
    assert "project(pathlock VERSION ${pathlock_version_from_file}" in (ROOT / "CMakeLists.txt").read_text()


def test_generated_header():
    header = os.environ.get("PATHLOCK_VERSION_HEADER")
    if not header:
        pytest.skip("PATHLOCK_VERSION_HEADER not given (CTest gives it)")
    assert f'#define PATHLOCK_VERSION_STRING "{VERSION}"' in pathlib.Path(header).read_text()


@pytest.mark.parametrize("folder", ["clients/go", "clients/node", "clients/php", "clients/python"])
def test_each_package_ships_the_license(folder):
    assert (ROOT / folder / "LICENSE").read_bytes() == LICENSE, f"{folder}/LICENSE differs from LICENSE"
