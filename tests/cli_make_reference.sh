#!/usr/bin/env bash
# cli_make_reference.sh - tools/make_reference.py makes references that `swin verify` passes:
#   - timm fixture (ref_timm_v1_w7), random input --batch 3 --seed 7: verify PASS, top-1 3/3,
#     one PASS line per stage; the same seed again gives the same tensors; --pick 6 --batch 2
#     keeps the 2 of the 6 draws with the largest top-1 margins (the draws themselves, in order);
#   - transformers fixture (ref_hf_v2_w8), two PNG images: verify PASS, 3 stages, batch 2, and
#     the input equals `swin preprocess` of the same images (the model's own preprocessing);
#   - no config.json: exit 2 naming the directory; no -o: exit 2.
# Needs python3 with torch, safetensors, timm, transformers and Pillow (SWIN_PYTHON overrides the
# interpreter); exits 77 (skipped) naming what is missing.
#   usage: cli_make_reference.sh SWIN_BINARY SOURCE_DIR [BUILD_DIR]
set -u
swin=$1
src=$2
data=$src/tests/data
py=${SWIN_PYTHON:-python3}
make_ref=$src/tools/make_reference.py
source "$src/tests/clilib.sh"

if ! command -v "$py" >/dev/null 2>&1; then
  echo "cli_make_reference: skipped: no $py"
  exit 77
fi
missing=$("$py" -c '
import importlib.util
print(" ".join(m for m in ("torch", "safetensors", "timm", "transformers", "PIL") if importlib.util.find_spec(m) is None))' 2>&1)
if [ $? -ne 0 ] || [ -n "$missing" ]; then
  echo "cli_make_reference: skipped: $py lacks ${missing:-a working importlib} (pip install torch safetensors timm transformers pillow)"
  exit 77
fi

# mk ARGS...: make_reference.py ARGS, stdout/stderr in $tmp/out, $tmp/err, exit code in $rc
mk() { "$py" "$make_ref" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
verify() { "$swin" verify "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
last() { tail -n1 "$tmp/out"; }
nstages() { grep -cE '^stage [0-9] +\[.*  PASS$' "$tmp/out"; }

# ---- timm layout, random input
d=$data/ref_timm_v1_w7
mk "$d" -o "$tmp/timm.safetensors" --batch 3 --seed 7
if [ $rc -eq 0 ] && [ -s "$tmp/timm.safetensors" ] && grep -q 'random normal, seed 7' "$tmp/out"; then
  verify --model "$d" --reference "$tmp/timm.safetensors"
  if [ $rc -eq 0 ] && [[ $(last) =~ ^PASS\ rel\ [0-9.e+-]+\ \<=\ 1e-04,\ top-1\ 3/3$ ]] && [ "$(nstages)" = 2 ] &&
     ! grep -q FAIL "$tmp/out"; then
    ok "timm, random batch 3: $(last)"
  else
    bad "timm reference should PASS with 2 stages and top-1 3/3 (exit $rc)"
  fi
else
  bad "make_reference.py on $d (exit $rc)"
fi
# same_tensors A B: the same tensor names and values (safetensors orders __metadata__ at random)
same_tensors() {
  "$py" -c '
import sys, safetensors.torch as st
a, b = (st.load_file(f) for f in sys.argv[1:3])
sys.exit(0 if a.keys() == b.keys() and all(a[k].shape == b[k].shape and bool((a[k] == b[k]).all()) for k in a) else 1)' "$1" "$2"
}
mk "$d" -o "$tmp/timm2.safetensors" --batch 3 --seed 7
if [ $rc -eq 0 ] && same_tensors "$tmp/timm.safetensors" "$tmp/timm2.safetensors"; then ok "timm, same seed: same tensors"
else bad "make_reference.py with the same seed should write the same tensors (exit $rc)"; fi

# ---- --pick: the --batch of N draws with the largest top-1 margins, in draw order
mk "$d" -o "$tmp/all.safetensors" --batch 6 --seed 7
mk "$d" -o "$tmp/pick.safetensors" --batch 2 --pick 6 --seed 7
if [ $rc -eq 0 ] && grep -qE 'random normal, seed 7, the 2 of 6 draws with the largest top-1 margins: \[[0-5], [0-5]\]' "$tmp/out"; then
  picked=$(sed -nE 's/.*top-1 margins: \[([0-5]), ([0-5])\].*/\1 \2/p' "$tmp/out")
  verify --model "$d" --reference "$tmp/pick.safetensors"
  if [ $rc -eq 0 ] && [[ $(last) =~ ^PASS\ .*top-1\ 2/2$ ]] && "$py" -c '
import sys, safetensors.torch as st
a, p = st.load_file(sys.argv[1]), st.load_file(sys.argv[2])
i = [int(v) for v in sys.argv[3:5]]
L = a["logits"].double()
t = L.topk(2, dim=1)
m = (t.values[:, 0] - t.values[:, 1]) / L.abs().amax(dim=1)
rest = [k for k in range(6) if k not in i]
sys.exit(0 if i[0] < i[1] and bool((p["input"] == a["input"][i]).all()) and min(m[i]) >= max(m[rest]) else 1)' \
     "$tmp/all.safetensors" "$tmp/pick.safetensors" $picked; then
    ok "--pick 6: draws $picked (the largest margins of the 6), $(last)"
  else
    bad "--pick should keep the draws with the largest margins, verify PASS (exit $rc)"
  fi
else
  bad "make_reference.py --pick (exit $rc)"
fi
mk "$d" a.png -o "$tmp/x.safetensors" --pick 4
if [ $rc -eq 2 ] && grep -q -- '--pick 4: for random input only' "$tmp/err"; then ok "--pick with images: exit 2"
else bad "--pick with images should exit 2 (exit $rc)"; fi

# ---- transformers layout, images
d=$data/ref_hf_v2_w8
imgs=("$data/digits/0021_1.png" "$data/digits/0024_4.png")
mk "$d" "${imgs[@]}" -o "$tmp/hf.safetensors"
if [ $rc -eq 0 ] && [ -s "$tmp/hf.safetensors" ] && grep -q 'images: 0021_1.png, 0024_4.png' "$tmp/out"; then
  verify --model "$d" --reference "$tmp/hf.safetensors"
  if [ $rc -eq 0 ] && [[ $(last) =~ ^PASS\ rel\ [0-9.e+-]+\ \<=\ 1e-04,\ top-1\ 2/2$ ]] && [ "$(nstages)" = 3 ] &&
     grep -q '(batch 2)$' "$tmp/out"; then
    ok "transformers, 2 images: $(last)"
  else
    bad "transformers reference should PASS with 3 stages and batch 2 (exit $rc)"
  fi
  "$swin" preprocess --model "$d" --out "$tmp/pre.safetensors" "${imgs[@]}" >"$tmp/out" 2>"$tmp/err"
  "$py" -c '
import sys, safetensors.torch as st
a, b = (st.load_file(f)["input"] for f in sys.argv[1:3])
print(f"max|diff| {float((a - b).abs().max()) if a.shape == b.shape else -1:.3g} {list(a.shape)} {list(b.shape)}")
sys.exit(0 if a.shape == b.shape and bool((a == b).all()) else 1)' "$tmp/hf.safetensors" "$tmp/pre.safetensors" >"$tmp/out" 2>"$tmp/err"
  if [ $? -eq 0 ]; then ok "transformers preprocessing == swin preprocess: $(cat "$tmp/out")"
  else bad "make_reference.py's input should equal swin preprocess of the same images"; fi
else
  bad "make_reference.py on $d with images (exit $rc)"
fi

# ---- refusals
mk "$tmp" -o "$tmp/x.safetensors"
if [ $rc -eq 2 ] && grep -q "^make_reference: $tmp: no config.json" "$tmp/err" && [ ! -e "$tmp/x.safetensors" ]; then
  ok "no config.json: $(head -n1 "$tmp/err")"
else
  bad "a directory without config.json should exit 2 with a message (exit $rc)"
fi
mk "$data/ref_timm_v1_w7"
if [ $rc -eq 2 ] && grep -q -- '-o/--out' "$tmp/err"; then ok "no -o: exit 2"; else bad "no -o should exit 2 (exit $rc)"; fi

finish cli_make_reference
