# clilib.sh - sourced by the cli_*.sh tests (not a test itself): a temporary directory $tmp,
# removed on exit (a test that needs more clean-up sets its own EXIT trap, which removes $tmp too),
# the ok/bad counters and the closing tally. A test runs its command with stdout in $tmp/out and
# stderr in $tmp/err, so that bad can show them.
#   ok TEXT      one passed check
#   bad TEXT     one failed check; prints the first 20 lines of $tmp/out and $tmp/err
#   finish NAME  prints "NAME: P passed, F failed"; status 0 only when none failed and some passed
#   need_digits NAME  sets $model and $digits (the bundled model and images under $src); exits 77
#                (skipped) when the model is missing
#   need_python3 exits 77 (skipped) when python3 is not on PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() {
  echo "FAIL $*"
  head -n 20 "$tmp/out" "$tmp/err" 2>/dev/null | sed 's/^/    /'
  failed=$((failed + 1))
}
finish() {
  echo "$1: $passed passed, $failed failed"
  [ $failed -eq 0 ] && [ $passed -gt 0 ]
}
need_digits() {
  model=$src/weights/digits
  digits=$src/tests/data/digits
  if [ ! -f "$model/model.safetensors" ]; then
    echo "$1: $model not found (train it with tools/train_digits.py), skipped"
    exit 77
  fi
}
need_python3() {
  command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
}
