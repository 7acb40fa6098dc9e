#!/usr/bin/env bash
# fetch_model.sh - download a Swin model directory from the Hugging Face hub.
#
#   tools/fetch_model.sh NAME [DEST]
#     NAME  hub repository, e.g. microsoft/swin-tiny-patch4-window7-224
#           or timm/swin_tiny_patch4_window7_224.ms_in1k
#     DEST  directory to create or fill (default: weights/<last part of NAME> in the project)
#
# Fetches config.json and model.safetensors (both required) and preprocessor_config.json (when
# the repository has one) from $SWIN_HUB_URL/NAME/resolve/main/ (default https://huggingface.co).
# HF_TOKEN, when set, is sent for gated or private repositories. Each file is downloaded to a
# temporary name in DEST and moved into place only when complete, so an interrupted run never
# leaves a partial file behind. Then: swin classify --model DEST image.jpg
# Exit status: 0 done, 1 download failed, 2 usage error or curl missing.
# Test: tests/cli_fetch.sh (against a local HTTP server).
set -u

prog=fetch_model.sh
die() { echo "$prog: $2" >&2; exit "$1"; }

command -v curl >/dev/null 2>&1 || die 2 "curl not found: install curl (apt-get install curl) and retry"
case "${1:-}" in
  -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "" | -*) die 2 "usage: $prog NAME [DEST]  (e.g. $prog microsoft/swin-tiny-patch4-window7-224)" ;;
esac
[ $# -le 2 ] || die 2 "usage: $prog NAME [DEST] (got $# arguments)"
name=$1
case "$name" in
  */*) ;;
  *) die 2 "'$name' is not a hub repository name (expected OWNER/NAME)" ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${2:-$root/weights/${name##*/}}
base=${SWIN_HUB_URL:-https://huggingface.co}
base=${base%/}

created=0
[ -d "$dest" ] || created=1
mkdir -p "$dest" || die 1 "$dest: cannot create the directory"
tmp="" ok=0
cleanup() {
  if [ -n "$tmp" ]; then rm -f "$tmp"; fi
  if [ "$ok" = 0 ] && [ "$created" = 1 ]; then rmdir "$dest" 2>/dev/null; fi
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# fetch FILE REQUIRED: 0 done, 1 failed (message printed), 3 absent and optional
fetch() {
  local file=$1 required=$2 url="$base/$name/resolve/main/$1" code rc
  local auth=()
  [ -n "${HF_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $HF_TOKEN")
  tmp=$(mktemp "$dest/.$file.partial.XXXXXX") || { echo "$prog: $dest: cannot write" >&2; return 1; }
  code=$(curl -sS -L --retry 2 --connect-timeout 20 ${auth[@]+"${auth[@]}"} -o "$tmp" -w '%{http_code}' "$url")
  rc=$?
  if [ $rc -ne 0 ]; then
    [ "$code" = 000 ] && code=""
    echo "$prog: $url: download failed (curl exit $rc${code:+, HTTP $code}); nothing kept" >&2
    return 1
  fi
  case "$code" in
    200) ;;
    404)
      rm -f "$tmp"
      [ "$required" = 0 ] && return 3
      echo "$prog: $url: not found (HTTP 404): is '$name' a hub repository with $file?" >&2
      return 1 ;;
    401 | 403)
      echo "$prog: $url: HTTP $code: the repository is gated or private; set HF_TOKEN" >&2
      return 1 ;;
    *)
      echo "$prog: $url: HTTP $code" >&2
      return 1 ;;
  esac
  if [ "$file" = model.safetensors ] && ! check_safetensors "$tmp"; then
    echo "$prog: $url: truncated or not a safetensors file; nothing kept" >&2
    return 1
  fi
  mv -f "$tmp" "$dest/$file" || return 1
  tmp=""
  return 0
}

# A safetensors file starts with a little-endian u64 header length N, then N bytes of JSON
# starting with '{'; the file must hold at least 8 + N bytes.
check_safetensors() {
  local f=$1 size n
  size=$(wc -c <"$f") || return 1
  [ "$size" -ge 10 ] || return 1
  n=$(od -An -t u8 -N 8 "$f" | tr -d ' ') || return 1
  [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" -le $((size - 8)) ] || return 1
  [ "$(od -An -c -j 8 -N 1 "$f" | tr -d ' ')" = "{" ]
}

got=()
for f in config.json model.safetensors; do
  fetch "$f" 1 || exit 1
  got+=("$f")
done
fetch preprocessor_config.json 0
case $? in
  0) got+=(preprocessor_config.json) ;;
  3) ;;
  *) exit 1 ;;
esac
ok=1
echo "$dest: ${got[*]}"
echo "try: swin classify --model $dest IMAGE"
