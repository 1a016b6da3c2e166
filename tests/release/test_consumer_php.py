"""A new user's PHP project adds pathlock with composer (docs/php.md, "From
an empty project"): in a fresh folder outside the checkout, the doc's
composer.json names the artifact repository that tools/release/php.sh
wrote, `composer require pathlock/pathlock` installs it (packagist stays
enabled and is unreachable here: composer must not need it), and the doc's
example runs against a real redis-server on a free loopback port, with the
Functions library the composer package holds (Library::bundled()).

PATHLOCK_TEST_DIST: the folder the release command wrote (CTest's fixture
`release_dist`), else tools/release/php.sh writes one into a
temporary folder.
"""
import os
import pathlib
import subprocess
import tempfile

import pytest

from consumer_common import empty_project_blocks, release_folder

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    d = release_folder(tmp_path_factory, "php.sh")
    assert os.path.isfile(os.path.join(d, "composer", f"pathlock-pathlock-{VERSION}.zip"))
    return d


@pytest.fixture(scope="module")
def project(dist):
    with tempfile.TemporaryDirectory(prefix="pathlock-consumer-php-") as d:
        proj = pathlib.Path(d) / "myservice"
        proj.mkdir()
        assert not str(proj).startswith(str(ROOT))
        # composer's cache and home inside the temporary folder: nothing of this machine's composer
        env = dict(os.environ, COMPOSER_HOME=str(pathlib.Path(d) / "composer-home"))
        blocks = empty_project_blocks("php.md")
        shell = [b for lang, b in blocks if lang == "sh"]
        assert shell, "docs/php.md: no sh block under 'From an empty project'"
        script = "set -e\n" + shell[0].replace("/path/to/dist", dist)
        subprocess.run(["sh", "-c", script], cwd=proj, env=env, check=True, timeout=240,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        php = [b for lang, b in blocks if lang == "php"]
        assert php, "docs/php.md: no php block under 'From an empty project'"
        (proj / "app.php").write_text(php[0], encoding="utf-8")
        yield proj, env


def test_installed_from_the_artifact(project):
    proj, _ = project
    pkg = proj / "vendor" / "pathlock" / "pathlock"
    assert (pkg / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    bundled = (pkg / "library" / "pathlock_library.lua").read_text(encoding="utf-8")
    assert bundled.startswith("#!lua name="), bundled[:80]
    lock = (proj / "composer.lock").read_text(encoding="utf-8")
    assert f'"version": "{VERSION}"' in lock and '"type": "zip"' in lock and '"MIT"' in lock


def test_example_on_redis(project, redis_url):
    proj, env = project
    for _ in range(2):   # a second run: the library is loaded already, nothing was left held
        out = subprocess.run(["php", "app.php", redis_url], cwd=proj, env=env, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stdout.splitlines() == [
            "bob: refused: target /p/A/C/x is locked by move_folder 'alice' on /p/A/C (held_ancestor)",
            "bob after the release: granted",
        ]
