#!/usr/bin/env bash
# The install tests, one step per ctest test (see CMakeLists.txt):
#   stage     cmake --install into a temporary prefix, then move the prefix
#   pkgconfig a plain Makefile C program built with `pkg-config conv`
#   static    the same, linked statically through `pkg-config --static`
#   cmake     a CMake project using find_package(conv), versions checked
#   examples  examples/c built with its own Makefile
#   package   CPack .tar.gz and .deb: contents, control fields, a consumer
#             built against the unpacked .deb
#   lintian   the .debs through lintian: no tag but those docs/packaging.md
#             explains (skipped without lintian)
# Every step after `stage` uses the moved prefix only. Settings come from the
# environment (CMakeLists.txt passes them): CONV_SOURCE_DIR CONV_BUILD_DIR
# WORK VERSION LIBDIR INCLUDEDIR PKGCONFIGDIR CMAKEDIR STATIC CC CMAKE CPACK
# GENERATOR.
set -euo pipefail

step="$1"
: "${WORK:?}" "${CONV_SOURCE_DIR:?}" "${CONV_BUILD_DIR:?}" "${VERSION:?}"
here="$(cd "$(dirname "$0")" && pwd)"
major="${VERSION%%.*}"
prefix="$WORK/moved/somewhere else/prefix"  # a space in the path, on purpose
libdir="$prefix/$LIBDIR"

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

# Runs a program and shows what it printed.
run_prog() { note "run $*"; "$@"; }

# pkg-config looking at the moved prefix first.
use_prefix_pc() {
  export PKG_CONFIG_PATH="$prefix/$PKGCONFIGDIR"
  local found
  found="$(pkg-config --variable=pcfiledir conv)"
  found="${found//\\ / }"   # pkg-config escapes the space
  [ "$(realpath "$found")" = "$(realpath "$prefix/$PKGCONFIGDIR")" ] ||
    fail "pkg-config finds conv.pc in $found, not in the moved prefix"
}

case "$step" in
stage)
  rm -rf "$WORK"
  mkdir -p "$WORK/moved/somewhere else"
  note "cmake --install $CONV_BUILD_DIR --prefix $WORK/stage"
  "$CMAKE" --install "$CONV_BUILD_DIR" --prefix "$WORK/stage" > "$WORK/install.log"
  mv "$WORK/stage" "$prefix"
  note "installed, then moved to $prefix"
  # The files the issue lists, in the GNU directories.
  for f in "$INCLUDEDIR/conv.h" "$LIBDIR/libconv.so" "$LIBDIR/libconv.so.$major" \
           "$LIBDIR/libconv.so.$VERSION" "$PKGCONFIGDIR/conv.pc" \
           "$CMAKEDIR/convConfig.cmake" "$CMAKEDIR/convConfigVersion.cmake" \
           "$CMAKEDIR/convTargets.cmake"; do
    [ -e "$prefix/$f" ] || fail "$f is not installed"
  done
  [ "$(readlink "$libdir/libconv.so")" = "libconv.so.$major" ] ||
    fail "libconv.so does not point at libconv.so.$major"
  [ "$(readlink "$libdir/libconv.so.$major")" = "libconv.so.$VERSION" ] ||
    fail "libconv.so.$major does not point at libconv.so.$VERSION"
  soname="$(readelf -d "$libdir/libconv.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [ "$soname" = "libconv.so.$major" ] || fail "SONAME is '$soname', not libconv.so.$major"
  if readelf -d "$libdir/libconv.so.$VERSION" | grep -E '\((RPATH|RUNPATH)\)'; then
    fail "the installed library keeps an RPATH"
  fi
  if [ "$STATIC" = ON ]; then
    [ -f "$libdir/libconv.a" ] || fail "libconv.a is not installed"
    [[ "$(nm -g --defined-only "$libdir/libconv.a")" == *" T conv_forward"* ]] ||
      fail "libconv.a does not define conv_forward"
  fi
  # Relocatable: no file of the package names the staging prefix or the build.
  if grep -rIl -e "$WORK/stage" -e "$CONV_BUILD_DIR" "$prefix/$PKGCONFIGDIR/conv.pc" \
       "$prefix/$CMAKEDIR" "$prefix/$INCLUDEDIR/conv.h"; then
    fail "the files above name the install or build directory"
  fi
  note "layout, SONAME $soname, symlinks and relocatability OK"
  ;;

pkgconfig)
  use_prefix_pc
  got="$(pkg-config --modversion conv)"
  [ "$got" = "$VERSION" ] || fail "pkg-config --modversion conv says $got, not $VERSION"
  note "pkg-config --cflags --libs conv: $(pkg-config --cflags --libs conv)"
  rm -rf "$WORK/pkgconfig" && mkdir -p "$WORK/pkgconfig"
  cp "$here/consumer/consumer.c" "$here/consumer/Makefile" "$WORK/pkgconfig/"
  make -C "$WORK/pkgconfig" CC="$CC"
  readelf -d "$WORK/pkgconfig/consumer" | grep "NEEDED.*\[libconv.so.$major\]" > /dev/null ||
    fail "the program does not need libconv.so.$major"
  LD_LIBRARY_PATH="$libdir" run_prog "$WORK/pkgconfig/consumer"
  ;;

static)
  use_prefix_pc
  libs="$(pkg-config --static --libs conv)"
  note "pkg-config --static --libs conv: $libs"
  for l in -lconv -lopenblas -lstdc++ -lpthread -lm; do
    [[ " $libs " == *" $l "* ]] || fail "pkg-config --static --libs conv lacks $l"
  done
  rm -rf "$WORK/static" && mkdir -p "$WORK/static"
  cp "$here/consumer/consumer.c" "$here/consumer/Makefile" "$WORK/static/"
  make -C "$WORK/static" CC="$CC" STATIC=1
  if readelf -d "$WORK/static/consumer" | grep 'NEEDED.*libconv' > /dev/null; then
    fail "the static program still needs libconv.so"
  fi
  run_prog "$WORK/static/consumer"   # no LD_LIBRARY_PATH: nothing of libconv to load
  ;;

cmake)
  src="$WORK/cmake-src" bld="$WORK/cmake-build"
  rm -rf "$src" "$bld" && mkdir -p "$src"
  cp "$here/consumer/consumer.c" "$here/consumer/CMakeLists.txt" "$src/"
  want_static=OFF
  [ "$STATIC" = ON ] && want_static=ON
  # The version file: same major, not newer than installed.
  mkdir -p "$WORK/cmake-versions"
  cat > "$WORK/cmake-versions/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(conv_versions LANGUAGES C)
foreach(req IN LISTS REQUESTS)
  string(REPLACE ":" ";" pair "${req}")
  list(GET pair 0 version)
  list(GET pair 1 expect)
  unset(conv_DIR CACHE)
  find_package(conv ${version} CONFIG QUIET)
  if(conv_FOUND)
    set(got FOUND)
  else()
    set(got NOTFOUND)
  endif()
  message(STATUS "find_package(conv ${version}): ${got}")
  if(NOT got STREQUAL expect)
    message(FATAL_ERROR "find_package(conv ${version}) should be ${expect}")
  endif()
endforeach()
CMAKE
  IFS=. read -r vmaj vmin vpat <<< "$VERSION"
  requests="$vmaj.$vmin:FOUND;$VERSION:FOUND;$vmaj:FOUND;$((vmaj + 1)).0:NOTFOUND"
  requests+=";$vmaj.$((vmin + 1)):NOTFOUND"
  [ "$vmaj" -gt 0 ] && requests+=";$((vmaj - 1)).0:NOTFOUND"
  "$CMAKE" -S "$WORK/cmake-versions" -B "$WORK/cmake-versions/build" -G "$GENERATOR" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_PREFIX_PATH="$prefix" "-DREQUESTS=$requests" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF | grep 'find_package(conv'
  # The consumer proper.
  "$CMAKE" -S "$src" -B "$bld" -G "$GENERATOR" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DEXPECT_PREFIX="$prefix" \
    -DWANT_STATIC=$want_static -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  "$CMAKE" --build "$bld" --parallel 2
  # CMake's build RPATH finds the moved libconv.so: no LD_LIBRARY_PATH.
  run_prog "$bld/consumer"
  if [ "$want_static" = ON ]; then
    if readelf -d "$bld/consumer_static" | grep 'NEEDED.*libconv' > /dev/null; then
      fail "conv::conv_static linked libconv.so"
    fi
    run_prog "$bld/consumer_static"
  fi
  ;;

examples)
  use_prefix_pc
  rm -rf "$WORK/examples" && mkdir -p "$WORK/examples"
  cp -r "$CONV_SOURCE_DIR/examples/c/." "$WORK/examples/"
  make -C "$WORK/examples" CC="$CC" run
  # PKG_CONFIG_PATH on make's command line only (README's form; GNU Make
  # 4.3 does not pass it to $(shell) by itself).
  make -C "$WORK/examples" clean
  (unset PKG_CONFIG_PATH; make -C "$WORK/examples" CC="$CC" PKG_CONFIG_PATH="$prefix/$PKGCONFIGDIR" run)
  if [ "$STATIC" = ON ]; then
    make -C "$WORK/examples" clean
    make -C "$WORK/examples" CC="$CC" STATIC=1 run
  fi
  ;;

package)
  command -v dpkg-deb > /dev/null || { echo "dpkg-deb not found: skipped"; exit 77; }
  out="$WORK-packages"
  rm -rf "$out"
  note "cpack -G 'TGZ;DEB'"
  "$CPACK" --config "$CONV_BUILD_DIR/CPackConfig.cmake" -G "TGZ;DEB" -B "$out" > "$out.log" 2>&1 ||
    { cat "$out.log"; fail "cpack failed"; }
  rm -rf "$out/_CPack_Packages"
  ls -l "$out"
  runtime=("$out"/libconv${major}_*.deb) dev=("$out"/libconv-dev_*.deb) tgz=("$out"/libconv-*.tar.gz)
  for f in "${runtime[0]}" "${dev[0]}" "${tgz[0]}"; do
    [ -f "$f" ] || fail "cpack did not make $f"
  done
  field() { dpkg-deb -f "$1" "$2"; }
  arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
  [ "$(field "$runtime" Package)" = "libconv$major" ] || fail "runtime package name"
  [ "$(field "$dev" Package)" = "libconv-dev" ] || fail "dev package name"
  for d in "$runtime" "$dev"; do
    [ "$(field "$d" Version)" = "$VERSION" ] || fail "$(basename "$d"): Version $(field "$d" Version)"
    [ "$(field "$d" Architecture)" = "$arch" ] || fail "$(basename "$d"): Architecture"
    [ -n "$(field "$d" Maintainer)" ] || fail "$(basename "$d"): no Maintainer"
    [ -n "$(field "$d" Description)" ] || fail "$(basename "$d"): no Description"
  done
  depends="$(field "$runtime" Depends)"
  note "libconv$major Depends: $depends"
  [[ "$depends" == *libopenblas* || "$depends" == *libblas* ]] ||
    fail "libconv$major does not depend on OpenBLAS"
  [[ "$depends" == *libstdc++6* ]] || fail "libconv$major does not depend on libstdc++6"
  # Loads anywhere: the optional libraries are suggested, never required.
  if [[ "$depends" =~ (cudnn|cuda|nccl|mpi) ]]; then
    fail "libconv$major depends on ${BASH_REMATCH[1]}: it must load without it"
  fi
  note "libconv$major Suggests: $(field "$runtime" Suggests)"
  note "libconv-dev Depends: $(field "$dev" Depends)"
  [[ "$(field "$dev" Depends)" == *"libconv$major (= $VERSION)"* ]] ||
    fail "libconv-dev does not depend on libconv$major (= $VERSION)"
  if command -v dpkg-shlibdeps > /dev/null && command -v file > /dev/null; then
    [[ "$(dpkg-deb --ctrl-tarfile "$runtime" | tar -t)" == *shlibs* ]] ||
      fail "libconv$major has no shlibs file"
  fi
  # Contents: runtime = the shared library only; dev = the rest.
  list() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|'; }
  expect_in() { list "$1" | grep -x "$2" > /dev/null || { list "$1"; fail "$(basename "$1") lacks $2"; }; }
  expect_in "$runtime" "/usr/$LIBDIR/libconv.so.$VERSION"
  expect_in "$runtime" "/usr/$LIBDIR/libconv.so.$major"
  if list "$runtime" | grep -E 'conv\.h|\.pc$|\.cmake$|libconv\.a$|libconv\.so$'; then
    fail "the runtime package carries development files"
  fi
  expect_in "$dev" "/usr/$INCLUDEDIR/conv.h"
  expect_in "$dev" "/usr/$LIBDIR/libconv.so"
  expect_in "$dev" "/usr/$PKGCONFIGDIR/conv.pc"
  expect_in "$dev" "/usr/$CMAKEDIR/convConfig.cmake"
  expect_in "$dev" "/usr/$CMAKEDIR/convConfigVersion.cmake"
  [ "$STATIC" = ON ] && expect_in "$dev" "/usr/$LIBDIR/libconv.a"
  top="$(basename "$tgz" .tar.gz)"
  for f in "$INCLUDEDIR/conv.h" "$LIBDIR/libconv.so.$VERSION" "$PKGCONFIGDIR/conv.pc" \
           "$CMAKEDIR/convConfig.cmake"; do
    tar -tzf "$tgz" | grep -x "$top/$f" > /dev/null || fail "$(basename "$tgz") lacks $top/$f"
  done
  # The unpacked .debs, as a sysroot: conv.pc names /usr there.
  root="$out/root"
  dpkg-deb -x "$runtime" "$root" && dpkg-deb -x "$dev" "$root"
  grep -x "prefix=/usr" "$root/usr/$PKGCONFIGDIR/conv.pc" > /dev/null ||
    fail "the .deb's conv.pc does not say prefix=/usr"
  export PKG_CONFIG_PATH="$root/usr/$PKGCONFIGDIR" PKG_CONFIG_SYSROOT_DIR="$root"
  mkdir -p "$out/consumer"
  cp "$here/consumer/consumer.c" "$here/consumer/Makefile" "$out/consumer/"
  make -C "$out/consumer" CC="$CC"
  LD_LIBRARY_PATH="$root/usr/$LIBDIR" run_prog "$out/consumer/consumer"
  unset PKG_CONFIG_SYSROOT_DIR
  # The tarball, unpacked anywhere (its conv.pc is relocatable).
  mkdir -p "$out/tgz" && tar -xzf "$tgz" -C "$out/tgz"
  export PKG_CONFIG_PATH="$out/tgz/$top/$PKGCONFIGDIR"
  make -C "$out/consumer" clean && make -C "$out/consumer" CC="$CC"
  LD_LIBRARY_PATH="$out/tgz/$top/$LIBDIR" run_prog "$out/consumer/consumer"
  ;;

lintian)
  command -v lintian > /dev/null || { echo "lintian not found: skipped"; exit 77; }
  out="$WORK-lintian"
  rm -rf "$out"
  "$CPACK" --config "$CONV_BUILD_DIR/CPackConfig.cmake" -G DEB -B "$out" > "$out.log" 2>&1 ||
    { cat "$out.log"; fail "cpack failed"; }
  # Each suppressed tag is explained in docs/packaging.md.
  explained=no-copyright-file,no-changelog,maintscript-calls-ldconfig
  explained+=,pkg-config-multi-arch-wrong-dir,pkg-config-unavailable-for-cross-compilation
  tags="$(lintian --suppress-tags "$explained" --tag-display-limit 0 "$out"/*.deb 2>&1 |
          grep -v 'running with root privileges' || true)"
  [ -z "$tags" ] || { echo "$tags"; fail "lintian reports tags docs/packaging.md does not explain"; }
  note "lintian: only the explained tags ($explained)"
  ;;

*)
  fail "unknown step $step"
  ;;
esac
echo "$step: OK"
