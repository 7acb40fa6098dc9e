#!/usr/bin/env bash
# cli_install.sh - the install tree (tools/cmake/install.cmake) as a library user meets it:
# `cmake --install BUILD --prefix TMP`, the README's example program (README.md, "Install") built
# against it with pkg-config (shared and static) and with find_package(swin) (swin::swin and
# swin::swin_static) and run on a bundled digit; the installed `swin` using TMP/share/swin/digits
# as its default model, also after the tree is moved, and never the source checkout's.
#   bash tests/cli_install.sh SWIN_BINARY SOURCE_DIR BUILD_DIR
# Exit 77 (skip) only when a C compiler, pkg-config or cmake is missing. In a sanitizer build
# (SWIN_SANITIZE=ON) the installed swin.pc and CMake targets add -fsanitize to the link, so the
# example links the sanitizer runtimes that the instrumented libswin needs.
set -u
swin=$1 src=$2 build=$3
cc=${CC:-cc}
for tool in "$cc" pkg-config cmake; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "cli_install: '$tool' not found, skipped (needed to build a program against the install)"
    exit 77
  fi
done
. "$src/tests/clilib.sh"
image=$src/tests/data/digits/0028_8.png want=8   # PyTorch: 8 with p 0.95
prefix=$tmp/prefix

# ---- install
if cmake --install "$build" --prefix "$prefix" >"$tmp/out" 2>"$tmp/err"; then ok "cmake --install"
else bad "cmake --install $build --prefix $prefix"; finish cli_install; exit 1; fi
missing=""
for f in bin/swin lib/libswin.a lib/libswin.so include/swin.h include/swin/image.h include/swin/preprocess.h \
         share/swin/digits/config.json share/swin/digits/model.safetensors share/swin/imagenet_classes.txt \
         lib/pkgconfig/swin.pc lib/cmake/swin/swinConfig.cmake lib/cmake/swin/swinConfigVersion.cmake \
         lib/cmake/swin/swinTargets.cmake; do
  [ -e "$prefix/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "installed files"; else bad "not installed:$missing"; fi
# the public headers include system headers or each other, nothing left behind in src/
private=""
for h in "$prefix"/include/swin.h "$prefix"/include/swin/*.h; do
  for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$h"); do
    [ -f "$(dirname "$h")/$inc" ] || [ -f "$prefix/include/$inc" ] || private="$private ${h#"$prefix"/}:$inc"
  done
done
if [ -z "$private" ]; then ok "public headers are self-contained"; else bad "headers include what is not installed:$private"; fi

# ---- the README's example
extract() {   # the fenced block after the line "<!-- example: NAME -->"
  awk -v m="<!-- example: $1 -->" '$0 == m { f = 1; next }
       f == 1 && /^```/ { f = 2; next }  f == 2 && /^```/ { exit }  f == 2 { print }' "$src/README.md"
}
mkdir -p "$tmp/app"
extract classify.c >"$tmp/app/classify.c"
extract CMakeLists.txt >"$tmp/app/CMakeLists.txt"
if [ -s "$tmp/app/classify.c" ] && [ -s "$tmp/app/CMakeLists.txt" ]; then ok "README example extracted"
else bad "README.md lacks the '<!-- example: classify.c -->' / CMakeLists.txt blocks"; fi

# run_app NAME BINARY: classifies $image with the installed model, prints "<image>: <want>"
run_app() {
  if "$2" "$prefix/share/swin/digits" "$image" >"$tmp/out" 2>"$tmp/err" && grep -qx "$image: $want" "$tmp/out"
  then ok "$1 classifies $(basename "$image") as $want"; else bad "$1: expected '$image: $want'"; fi
}

# static_only NAME BINARY: linked with libswin.a, so libswin.so is not among its NEEDED entries
static_only() {
  command -v readelf >/dev/null 2>&1 || return 0
  if readelf -d "$2" | grep -q 'NEEDED.*libswin'; then bad "$1 needs libswin.so"
  else ok "$1 does not need libswin.so"; fi
}

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
if [ "$(pkg-config --variable=modeldir swin 2>/dev/null)" -ef "$prefix/share/swin/digits" ]; then ok "pkg-config modeldir"
else bad "pkg-config --variable=modeldir swin: '$(pkg-config --variable=modeldir swin 2>&1)'"; fi
cflags="-std=c11 -Wall -Wextra -pedantic -Werror"
# dependencies outside the loader's paths (tools/gpu_check.sh unpacks them into a prefix): an rpath
# for every -L directory of the static link, as CMake does for the find_package builds
rpaths=$(pkg-config --static --libs-only-L swin | sed 's/-L/-Wl,-rpath,/g')
# shared: the example's rpath finds lib/; static: libswin.a by file name (a second plain -lswin
# would find libswin.so), then Libs.private
# shellcheck disable=SC2046,SC2086
if "$cc" $cflags "$tmp/app/classify.c" -o "$tmp/app/classify_pc" $(pkg-config --cflags --libs swin) \
     -Wl,-rpath,"$(pkg-config --variable=libdir swin)" $rpaths >"$tmp/out" 2>"$tmp/err"; then
  ok "pkg-config shared build"; run_app "pkg-config shared" "$tmp/app/classify_pc"
else bad "pkg-config shared build"; fi
# shellcheck disable=SC2046,SC2086
if "$cc" $cflags "$tmp/app/classify.c" -o "$tmp/app/classify_pc_static" $(pkg-config --cflags swin) \
     $(pkg-config --static --libs swin | sed 's/-lswin /-l:libswin.a /') $rpaths >"$tmp/out" 2>"$tmp/err"; then
  ok "pkg-config static build"
  run_app "pkg-config static" "$tmp/app/classify_pc_static"
  static_only "pkg-config static" "$tmp/app/classify_pc_static"
else bad "pkg-config static build"; fi

# ---- find_package(swin)
if cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$prefix" \
         -DCMAKE_C_COMPILER="$(command -v "$cc")" >"$tmp/out" 2>"$tmp/err" &&
   cmake --build "$tmp/app/build" >>"$tmp/out" 2>>"$tmp/err"; then
  ok "find_package(swin) build"
  run_app "swin::swin" "$tmp/app/build/classify"
  run_app "swin::swin_static" "$tmp/app/build/classify_static"
  static_only "swin::swin_static" "$tmp/app/build/classify_static"
else bad "find_package(swin) build"; fi

# ---- the installed command's default model
# help_default BINARY: the default model `classify --help` names: "(default: .../digits)"
help_default() { "$1" classify --help 2>&1 | tr '\n' ' ' | grep -o '(default: [^)]*/digits)' | head -n 1 | sed 's/^(default: //; s/)$//'; }
d=$(help_default "$swin")
if [ "$d" -ef "$src/weights/digits" ]; then ok "build tree default: the checkout's weights/digits"
else bad "build-tree swin classify --help: default '$d', expected $src/weights/digits"; fi
d=$(help_default "$prefix/bin/swin")
if [ "$d" = "$prefix/share/swin/digits" ]; then ok "installed default: $d"
else bad "installed swin classify --help: default '$d', expected $prefix/share/swin/digits"; fi
# moved: still its own share/swin/digits, the .pc file too
mv "$prefix" "$tmp/moved"
d=$(help_default "$tmp/moved/bin/swin")
if [ "$d" = "$tmp/moved/share/swin/digits" ]; then ok "moved tree default: $d"
else bad "moved swin classify --help: default '$d', expected $tmp/moved/share/swin/digits"; fi
if "$tmp/moved/bin/swin" classify "$image" >"$tmp/out" 2>"$tmp/err" && grep -q "^$image: $want " "$tmp/out"
then ok "moved swin classify (no --model) says $want"; else bad "moved swin classify $image"; fi
if [ "$(PKG_CONFIG_PATH=$tmp/moved/lib/pkgconfig pkg-config --variable=modeldir swin)" -ef "$tmp/moved/share/swin/digits" ]
then ok "moved swin.pc"; else bad "moved swin.pc: modeldir '$(PKG_CONFIG_PATH=$tmp/moved/lib/pkgconfig pkg-config --variable=modeldir swin 2>&1)'"; fi
# a copy without share/: names where the model should be, never falls back to the checkout
mkdir -p "$tmp/bare/bin" && cp "$tmp/moved/bin/swin" "$tmp/bare/bin/swin"
"$tmp/bare/bin/swin" classify "$image" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -qF "$tmp/bare/bin/../share/swin/digits" "$tmp/err"; then ok "copy without share/: exit 2 naming bin/../share/swin/digits"
else bad "copy without share/: exit $rc, expected 2 and a message naming $tmp/bare/bin/../share/swin/digits"; fi

finish cli_install
