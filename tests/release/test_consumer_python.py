"""A new user's project adds pathlock from the wheel (docs/python.md, "From
an empty project"): in a fresh folder outside the checkout, Debian's
python3 makes a venv, pip installs the wheel offline (--no-index), and the
doc's example runs as written, embedded and against a real redis-server on a
free loopback port. Nothing of the checkout or of a build tree is on any
path, and the environment is the caller's minus PYTHONPATH.

The wheel: PATHLOCK_TEST_DIST (a folder the release command wrote, CTest's
fixture `release_dist`), else tools/release/python.sh writes one
into a temporary folder (minutes: it builds the extension).
"""
import glob
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from consumer_common import empty_project_blocks, release_folder

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSION = (ROOT / "VERSION").read_text(encoding="utf-8").strip()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    dist = release_folder(tmp_path_factory, "python.sh", timeout=1200)
    found = glob.glob(os.path.join(dist, f"pathlock-{VERSION}-*.whl"))
    assert len(found) == 1, f"one pathlock-{VERSION} wheel in {dist}: {found}"
    return found[0]


@pytest.fixture(scope="module")
def project(wheel):
    """An empty project folder with the doc's venv and the wheel installed."""
    with tempfile.TemporaryDirectory(prefix="pathlock-consumer-python-") as d:
        proj = pathlib.Path(d) / "myservice"
        proj.mkdir()
        assert not str(proj).startswith(str(ROOT))
        shutil.copy(wheel, proj)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = "/usr/bin:/bin"   # the doc's `python3` is Debian's (a pyenv shim may come first here)
        shell = [body for lang, body in empty_project_blocks("python.md") if lang == "sh"]
        assert shell, "docs/python.md: no sh block under 'From an empty project'"
        script = "set -e\n" + shell[0].replace("pathlock-VERSION-*.whl", os.path.basename(wheel))
        subprocess.run(["sh", "-c", script], cwd=proj, env=env, check=True, stdout=subprocess.DEVNULL)
        app = [body for lang, body in empty_project_blocks("python.md") if lang == "python"]
        assert app, "docs/python.md: no python block under 'From an empty project'"
        (proj / "app.py").write_text(app[0], encoding="utf-8")
        yield proj, env


def run_app(project, *args):
    proj, env = project
    out = subprocess.run([str(proj / ".venv" / "bin" / "python"), "app.py", *args], cwd=proj, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_installed_from_the_wheel(project):
    proj, env = project
    out = subprocess.run([str(proj / ".venv" / "bin" / "python"), "-c",
                          "import pathlock, sys; print(pathlock.__file__); print(sys.prefix)"],
                         cwd=proj, env=env, capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0].startswith(str(proj / ".venv")), out
    lic = glob.glob(str(proj / ".venv" / "lib" / "python3*" / "site-packages" / f"pathlock-{VERSION}.dist-info" / "LICENSE"))
    assert lic and pathlib.Path(lic[0]).read_bytes() == (ROOT / "LICENSE").read_bytes()


EXPECTED = ["bob refused: held by alice (move_folder on /p/A/C)", "bob after the release: granted"]


def test_example_embedded(project):
    assert run_app(project).splitlines() == EXPECTED


def test_example_on_redis(project, redis_url):
    assert run_app(project, redis_url).splitlines() == EXPECTED
    # a second run on the same server: the library is there already, nothing left held
    assert run_app(project, redis_url).splitlines() == EXPECTED
