#!/usr/bin/env bash
# cli_fetch.sh - tools/fetch_model.sh against a local HTTP server (127.0.0.1 only) serving a hub
# layout made here: OWNER/NAME/resolve/main/FILE. Checks
#   - a full model (config, safetensors, preprocessor config): files arrive byte for byte;
#   - a model without preprocessor_config.json: fetched, the optional file skipped;
#   - a missing repository (HTTP 404): exit 1, message names URL and 404, nothing left behind;
#   - a truncated model.safetensors: exit 1, "truncated", no partial file left;
#   - usage errors and a missing curl: exit 2.
# The server is killed on exit whatever happens. Skips (77) without python3 or curl.
#   usage: cli_fetch.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
src=$2
fetch=$src/tools/fetch_model.sh
command -v python3 >/dev/null 2>&1 || { echo "cli_fetch: python3 not found, skipped"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "cli_fetch: curl not found, skipped"; exit 77; }

source "$src/tests/clilib.sh"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---- fixture hub
hub=$tmp/hub
mk() { mkdir -p "$hub/$1/resolve/main"; }
safetensors() { # a valid little safetensors file: header {"__metadata__":{}} padded to 24 bytes
  printf '\x18\x00\x00\x00\x00\x00\x00\x00{"__metadata__":{}}     ' >"$1"
}
mk org/full
echo '{"model_type": "swin", "image_size": 224}' >"$hub/org/full/resolve/main/config.json"
safetensors "$hub/org/full/resolve/main/model.safetensors"
echo '{"do_resize": true, "size": 224}' >"$hub/org/full/resolve/main/preprocessor_config.json"
mk org/nopre
echo '{"architecture": "swin_tiny_patch4_window7_224"}' >"$hub/org/nopre/resolve/main/config.json"
safetensors "$hub/org/nopre/resolve/main/model.safetensors"
mk org/broken
echo '{}' >"$hub/org/broken/resolve/main/config.json"
printf '\x00\x10\x00\x00\x00\x00\x00\x00{"a":' >"$hub/org/broken/resolve/main/model.safetensors"

# ---- server on a free port (port 0: the kernel picks; the log line says which)
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$hub" >"$tmp/server.log" 2>&1 &
server=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/.* port \([0-9][0-9]*\).*/\1/p' "$tmp/server.log" | head -n1)
  [ -n "$port" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "cli_fetch: the local HTTP server did not start:"; cat "$tmp/server.log"; exit 1
fi
export SWIN_HUB_URL=http://127.0.0.1:$port
run() { bash "$fetch" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# ---- full model
run org/full "$tmp/full"
if [ $rc -eq 0 ] && cmp -s "$tmp/full/config.json" "$hub/org/full/resolve/main/config.json" &&
  cmp -s "$tmp/full/model.safetensors" "$hub/org/full/resolve/main/model.safetensors" &&
  cmp -s "$tmp/full/preprocessor_config.json" "$hub/org/full/resolve/main/preprocessor_config.json" &&
  grep -q "config.json model.safetensors preprocessor_config.json" "$tmp/out"; then
  ok "org/full: three files, identical"
else bad "org/full (rc $rc)"; fi
if [ -z "$(find "$tmp/full" -name '.*partial*')" ]; then ok "org/full: no temporary files left"
else bad "org/full: temporary files left: $(ls -A "$tmp/full")"; fi

# ---- no preprocessor_config.json
run org/nopre "$tmp/nopre"
if [ $rc -eq 0 ] && [ -f "$tmp/nopre/model.safetensors" ] && [ ! -e "$tmp/nopre/preprocessor_config.json" ]; then
  ok "org/nopre: optional preprocessor_config.json skipped"
else bad "org/nopre (rc $rc)"; fi

# ---- 404
run org/missing "$tmp/missing"
if [ $rc -eq 1 ] && grep -q "404" "$tmp/err" && grep -q "org/missing/resolve/main/config.json" "$tmp/err" &&
  [ ! -e "$tmp/missing" ]; then
  ok "org/missing: exit 1, 404 reported with the URL, no directory left"
else bad "org/missing (rc $rc)"; fi

# ---- truncated safetensors into an existing directory
mkdir -p "$tmp/broken"
run org/broken "$tmp/broken"
if [ $rc -eq 1 ] && grep -q "truncated" "$tmp/err" && [ ! -e "$tmp/broken/model.safetensors" ] &&
  [ -z "$(find "$tmp/broken" -name '.*partial*')" ]; then
  ok "org/broken: truncated safetensors refused, no partial file"
else bad "org/broken (rc $rc): $(ls -A "$tmp/broken")"; fi

# ---- usage errors
run
if [ $rc -eq 2 ] && grep -q "usage" "$tmp/err"; then ok "no arguments: exit 2"; else bad "no arguments (rc $rc)"; fi
run notarepo
if [ $rc -eq 2 ] && grep -q "OWNER/NAME" "$tmp/err"; then ok "bad name: exit 2"; else bad "bad name (rc $rc)"; fi
run a/b c d
if [ $rc -eq 2 ]; then ok "too many arguments: exit 2"; else bad "too many arguments (rc $rc)"; fi
bashbin=$(command -v bash)
PATH=$tmp/nowhere "$bashbin" "$fetch" org/full "$tmp/nocurl" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "curl not found" "$tmp/err"; then ok "curl missing: exit 2"
else bad "curl missing (rc $rc)"; fi

finish cli_fetch
