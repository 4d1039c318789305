# The compiler cache that scripts/test.sh's release trees (build, build-clang16) and the image's build stage
# (Containerfile, given one by scripts/image.sh --ccache DIR) share: the same g++ and flags on the same sources
# (Debian 12's g++ on the machine and in the build base), so each file is compiled once per run where it was
# compiled three times. Paths under the source root are made relative to the build directory (the trees and
# the image's /src/build sit at the same depth), the compiler is known by its content (the image's is another
# file of the same package), the locale is not part of a result (the container has none set; it changes only
# the diagnostics, and the build has none: -Werror), and the compiler's dependency output is the manifest (no
# extra preprocessing).
# shellcheck shell=sh disable=SC2034 # CCACHE_CMAKE_ARGS is read by the files that source this one

# ccache_env ROOT DIR: ccache's settings for builds of the sources at ROOT with the cache at DIR.
ccache_env() {
    export CCACHE_DIR="$2" CCACHE_BASEDIR="$1" CCACHE_COMPILERCHECK=content CCACHE_NOHASHDIR=1 CCACHE_DEPEND=1 \
        CCACHE_SLOPPINESS=locale
}

# CMake's arguments that compile through ccache.
CCACHE_CMAKE_ARGS="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
