"""The ways a Python user installs the package: pip from the source tree
(offline, --no-build-isolation) and the python3-pathlock Debian package.
Each installed copy is imported by a fresh interpreter that sees only it."""
import os
import shutil
import subprocess
import sys

SOURCE = os.environ.get("PATHLOCK_SOURCE_DIR", "")
BUILD = os.environ.get("PATHLOCK_BUILD_DIR", "")

SMOKE = """
import sys, pathlock
assert pathlock.__file__.startswith(sys.argv[1]), pathlock.__file__
e = pathlock.MemoryEngine()
g = e.acquire("ns", "alice", "delete_folder", {"target": "/p"})
assert g and not e.acquire("ns", "bob", "upload", {"target": "/p/x"})
assert e.release("ns", g.grant.id, g.grant.token)
assert hasattr(pathlock, "RedisEngine")
import os; assert os.path.exists(os.path.join(os.path.dirname(pathlock.__file__), "py.typed"))
print("ok")
"""


def _smoke(site):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = site
    out = subprocess.run([sys.executable, "-c", SMOKE, site], env=env, cwd="/", capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_pip_install_from_source_tree(tmp_path):
    # A copy of clients/python/ (pip writes its egg-info beside setup.py), building
    # the pathlock tree; CMake's build folder is kept in the build tree, so a
    # second run is incremental.
    copy = tmp_path / "python"
    shutil.copytree(os.path.join(SOURCE, "clients", "python"), copy, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = dict(os.environ, PATHLOCK_SOURCE_DIR=SOURCE,
               PATHLOCK_PYTHON_BUILD_DIR=os.path.join(BUILD, "python-pip"),
               PATHLOCK_JOBS=os.environ.get("PATHLOCK_JOBS", "2"))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                    "--disable-pip-version-check", "--target", str(site), str(copy)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    _smoke(str(site))


def test_debian_package(tmp_path):
    deb = subprocess.run([os.path.join(SOURCE, "clients", "python", "make-deb.sh"), BUILD, str(tmp_path)], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert os.path.basename(deb).startswith("python3-pathlock_")
    fields = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Depends"], check=True, capture_output=True,
                            text=True).stdout
    assert "python3-pathlock" in fields and "libhiredis" in fields and "python3 (>=" in fields
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", deb, str(root)], check=True)
    _smoke(str(root / "usr" / "lib" / "python3" / "dist-packages"))
