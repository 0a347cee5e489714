#!/usr/bin/python3
"""sanitizer_env.py — what a Python process needs to load a sanitized libgpuingest.

Why: a -Db_sanitize build's libgpuingest.so calls into its sanitizer's
runtime, which the compiler links into executables, not into shared
libraries; /usr/bin/python3 has none, so dlopen fails (undefined symbol
__asan_...).  Preloading the runtime makes the library run checked inside
Python, with leak detection off (the interpreter keeps its memory at exit).
ThreadSanitizer's runtime cannot be preloaded into an uninstrumented Python
(it crashes), so those builds skip the Python tests.

GI_SANITIZE is what tests/meson.build's test setups set: empty or "none"
for a plain build.

    python3 sanitizer_env.py LIBRARY   prints NAME=VALUE lines for `env`
                                       (none for a plain build), exit 77
                                       with a line for ThreadSanitizer
"""
import os
import platform
import shutil
import subprocess
import sys


class Unsupported(Exception):
    """This build's sanitizer cannot run inside Python."""


def _compiler(library):
    """clang or gcc, from the library's .comment section (clang's line names it)."""
    try:
        comment = subprocess.run(["readelf", "-p", ".comment", library], capture_output=True, text=True).stdout
    except OSError:
        comment = ""
    return "clang" if "clang" in comment else "gcc"


def environment(library, env=None):
    """The variables to add for a Python that loads `library`, or {}."""
    env = os.environ if env is None else env
    sanitize = env.get("GI_SANITIZE", "")
    if sanitize in ("", "none"):
        return {}
    if "thread" in sanitize:
        raise Unsupported(f"a -Db_sanitize={sanitize} build: ThreadSanitizer's runtime cannot be loaded into "
                          f"Python (the plain and ASan builds run this test)")
    kind = "asan" if "address" in sanitize else "ubsan"
    cc = _compiler(library)
    if cc == "clang":
        name = f"libclang_rt.{kind if kind == 'asan' else 'ubsan_standalone'}-{platform.machine()}.so"
    else:
        name = f"lib{kind}.so"
    tool = shutil.which(cc)
    runtime = subprocess.run([tool, f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip() \
        if tool else ""
    if not runtime or not os.path.isabs(runtime) or not os.path.exists(runtime):
        raise Unsupported(f"a -Db_sanitize={sanitize} build, and {cc} does not say where {name} is")
    preload = " ".join(p for p in (runtime, env.get("LD_PRELOAD", "")) if p)
    return {"LD_PRELOAD": preload, "ASAN_OPTIONS": env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"}


def main():
    if len(sys.argv) != 2:
        print("usage: sanitizer_env.py LIBRARY", file=sys.stderr)
        return 2
    try:
        for name, value in environment(sys.argv[1]).items():
            print(f"{name}={value}")
    except Unsupported as e:
        print(f"SKIP: {e}")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
