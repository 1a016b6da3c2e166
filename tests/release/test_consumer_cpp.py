"""C++ from the release's Debian package, as docs/install.md tells a user: the
.deb unpacked with `dpkg-deb -x` into a prefix in a fresh folder outside the
checkout (no root, nothing installed on the machine), install.md's two-file
project built with find_package(pathlock) and with pkg-config using only that
prefix, run on the embedded engine and on a real redis-server on a free port.
The package's control fields, copyright file and Functions libraries are
checked against dist/. CTest release_consumer_cpp (fixture release_dist)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "kit"))
from consumer_common import ROOT, dist, fresh_folder, the_deb, unpack_deb, user_env  # noqa: E402
from kitlib import RedisServer  # noqa: E402


def install_doc_blocks():
    """install.md's C++ section: its CMakeLists.txt, main.cpp and the printed lines."""
    with open(os.path.join(ROOT, "docs", "install.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## C++ from the Debian package", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    cmake = [b for lang, b in blocks if lang == "cmake"]
    cpp = [b for lang, b in blocks if lang == "cpp"]
    printed = [b for lang, b in blocks if lang == ""]
    assert len(cmake) == 1 and len(cpp) == 1 and len(printed) == 1, "install.md's C++ section changed shape"
    return cmake[0], cpp[0], printed[0]


@pytest.fixture(scope="module")
def unpacked():
    folder = fresh_folder("cpp")
    deb = the_deb(dist())
    prefix = unpack_deb(deb, folder)
    yield folder, deb, prefix
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def redis():
    server = RedisServer()
    yield server
    server.stop()


def control(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()


def test_package_metadata(unpacked):
    _, deb, prefix = unpacked
    with open(os.path.join(ROOT, "VERSION"), encoding="utf-8") as f:
        version = f.read().strip()
    assert control(deb, "Package") == "pathlock"
    assert control(deb, "Version") == version
    assert os.path.basename(deb).startswith(f"pathlock_{version}_")
    assert re.match(r".+ <[^@\s]+@[^>\s]+>$", control(deb, "Maintainer"))
    depends = control(deb, "Depends")
    for lib in ("libhiredis", "libfmt", "libssl", "libpq", "libstdc++6"):
        assert lib in depends, f"Depends lacks {lib}: {depends}"
    recommends = control(deb, "Recommends")
    for dev in ("libhiredis-dev", "libfmt-dev", "libssl-dev", "libpq-dev"):
        assert dev in recommends, f"Recommends lacks {dev}: {recommends}"
    with open(os.path.join(prefix, "share", "doc", "pathlock", "copyright"), encoding="utf-8") as f:
        copyright_text = f.read()
    assert "License: MIT" in copyright_text
    assert "Permission is hereby granted, free of charge" in copyright_text
    for name in ("bin/pathlock", "bin/pathlock-matrixc", "include/pathlock/engine.hpp", "lib/libpathlock.a",
                 "lib/cmake/pathlock/pathlockConfig.cmake", "lib/pkgconfig/pathlock.pc"):
        assert os.path.isfile(os.path.join(prefix, name)), f"the package lacks /usr/{name}"


def test_functions_libraries_match_dist(unpacked):
    folder, _, prefix = unpacked
    redis_dir = os.path.join(prefix, "share", "pathlock", "redis")
    released = sorted(n for n in os.listdir(os.path.join(dist(), "redis")) if n.endswith(".lua"))
    matrices = sorted(n[:-5] + ".lua" for n in os.listdir(os.path.join(ROOT, "matrix"))
                      if n.endswith(".json") and n != "matrix.schema.json")
    assert released == matrices
    for name in released:
        with open(os.path.join(dist(), "redis", name), "rb") as a, open(os.path.join(redis_dir, name), "rb") as b:
            assert a.read() == b.read(), f"dist/redis/{name} differs from the package's"
    with open(os.path.join(redis_dir, "cloud-drive.lua"), "rb") as a, \
            open(os.path.join(redis_dir, "pathlock_library.lua"), "rb") as b:
        assert a.read() == b.read()
    # The packaged compiler writes the same library from the packaged matrix.
    out = os.path.join(folder, "again.lua")
    subprocess.run([os.path.join(prefix, "bin", "pathlock-matrixc"), "--json",
                    os.path.join(prefix, "share", "pathlock", "matrix", "cloud-drive.json"),
                    "--source-name", "matrix/cloud-drive.json", "--lua", out],
                   check=True, env=user_env(), timeout=60)
    with open(out, "rb") as a, open(os.path.join(redis_dir, "cloud-drive.lua"), "rb") as b:
        assert a.read() == b.read()
    with open(os.path.join(dist(), "redis", "cloud-drive.json"), encoding="utf-8") as f:
        meta = json.load(f)
    with open(out, encoding="utf-8") as f:
        assert f.readline().strip() == f"#!lua name={meta['library']}"


def run_example(program, redis):
    env = user_env()
    embedded = subprocess.run([program], capture_output=True, text=True, env=env, timeout=60)
    on_redis = subprocess.run([program, redis.url], capture_output=True, text=True, env=env, timeout=60)
    return embedded, on_redis


def test_example_with_find_package(unpacked, redis):
    folder, _, prefix = unpacked
    cmake_text, cpp, printed = install_doc_blocks()
    app = os.path.join(folder, "app-cmake")
    os.makedirs(app)
    with open(os.path.join(app, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write(cmake_text)
    with open(os.path.join(app, "main.cpp"), "w", encoding="utf-8") as f:
        f.write(cpp)
    env = user_env()
    subprocess.run(["cmake", "-S", app, "-B", os.path.join(app, "build"), f"-DCMAKE_PREFIX_PATH={prefix}"],
                   check=True, capture_output=True, env=env, timeout=300)
    with open(os.path.join(app, "build", "CMakeCache.txt"), encoding="utf-8") as f:
        found = re.search(r"^pathlock_DIR:PATH=(.*)$", f.read(), re.M).group(1)
    assert os.path.realpath(found).startswith(prefix + os.sep), f"find_package found pathlock at {found}"
    done = subprocess.run(["cmake", "--build", os.path.join(app, "build")], capture_output=True, text=True,
                          env=env, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    for run in run_example(os.path.join(app, "build", "locks"), redis):
        assert run.returncode == 0, run.stderr
        assert run.stdout == printed


def test_example_with_pkg_config(unpacked, redis):
    folder, _, prefix = unpacked
    _, cpp, printed = install_doc_blocks()
    app = os.path.join(folder, "app-pkg-config")
    os.makedirs(app)
    with open(os.path.join(app, "main.cpp"), "w", encoding="utf-8") as f:
        f.write(cpp)
    env = user_env(PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--define-prefix", "--cflags", "--libs", "pathlock"], check=True,
                           capture_output=True, text=True, env=env, timeout=60).stdout.split()
    assert f"-I{prefix}/include" in flags, flags
    done = subprocess.run(["g++", "-std=c++20", "main.cpp", "-o", "locks", *flags], cwd=app, capture_output=True,
                          text=True, env=env, timeout=400)
    assert done.returncode == 0, done.stderr
    for run in run_example(os.path.join(app, "locks"), redis):
        assert run.returncode == 0, run.stderr
        assert run.stdout == printed
