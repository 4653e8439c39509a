#!/bin/bash
# The GPU checks in one go, on a machine with an NVIDIA GPU (docs/gpu.md):
#   1. the GPU test suites (test_gpu_api, test_gpu_conv: 500 random problems
#      per pass and dtype against the CPU engine),
#   2. bench_overhead: libconv vs raw cuDNN with the same algorithm,
#   3. convbench --device cuda --verify on ResNet-50: f32 strict (the
#      default math), f32 with TF32 (--math fast), f16 and bf16; batch 1 and 32,
#   4. the same layers through PyTorch (cudnn.benchmark = True):
#      tools/convbench/torch_peer.py, ratios in gpu_vs_torch.md,
#   5. with GRAPH=1 (a libconv built with cudnn-frontend), the graph-API
#      solver cudnn_graph (AUTO's first choice): test_gpu_conv with it forced
#      and with CONV_CUDNN_GRAPH=0 (legacy only), convbench --algo cudnn_graph in
#      both layouts, its host time per call, and torch_peer on those rows
#      (graph_vs_torch.md).
# Binaries come from $STAGE (tests/gpu/stage_for_gpu.sh) or, without one,
# from $BUILD (a CUDA build made on this machine). Logs go to $OUT.
# Each step has its own time limit, so one that fails or hangs does not
# cost the others.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/libconv-gpu}
# Logs are written to $LOGS and packed into $OUT/gpu-logs.tgz after every
# step (one file: what survives a time limit, and what a tool that brings
# back few files can carry).
LOGS=${LOGS:-/tmp/libconv-gpu-logs}
mkdir -p "$OUT" "$LOGS"
STAGE=${STAGE:-build-cuda/stage}
if [ -d "$STAGE/bin" ]; then
    BIN=$STAGE/bin
    LIBS=$STAGE/lib
else
    BUILD=${BUILD:-build-cuda}
    BIN=$OUT/bin; mkdir -p "$BIN"
    for f in tests/gpu/test_gpu_conv tests/gpu/test_gpu_api tests/gpu/bench_overhead tools/convbench/convbench; do
        ln -sf "$PWD/$BUILD/$f" "$BIN/"
    done
    LIBS=$BUILD/src
fi
# cuDNN: a system one, else pip's nvidia-cudnn-cu13 (what PyTorch uses).
CUDNN_LIB=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$PWD/$LIBS${CUDNN_LIB:+:$CUDNN_LIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    echo "cuDNN lib dir: $CUDNN_LIB"; ls "$CUDNN_LIB" 2>/dev/null | head -20
    python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "CUDA", torch.version.cuda)'
    ldd "$LIBS/libconv.so.0"
} > "$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"

step() {  # step NAME SECONDS command...
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$LOGS/summary.txt"
    tail -n "${TAIL:-25}" "$LOGS/$name.log"
    tar czf "$OUT/gpu-logs.tgz" -C "$LOGS" .
}

step test_gpu_api 120 "$BIN/test_gpu_api"
step test_gpu_conv ${CONV_GPU_TEST_LIMIT:-200} env CONV_TEST_COUNT=${CONV_TEST_COUNT:-500} "$BIN/test_gpu_conv"
TAIL=40 step bench_overhead 120 "$BIN/bench_overhead" 200

# --tune: conv_find_algorithms first (cudnnFind*Ex), as PyTorch's
# cudnn.benchmark searches; TUNE= (empty) times the heuristic's choice.
CB="$BIN/convbench --device cuda --suite resnet50 --verify --warmup 3 --repeats ${REPEATS:-20} ${TUNE---tune}"
for b in 1 32; do
    TAIL=3 step cb_f32_b$b 90 $CB --batch $b --dtype f32 --json "$LOGS/cb_f32_b$b.json"
    TAIL=3 step cb_tf32_b$b 90 $CB --batch $b --dtype f32 --math fast --json "$LOGS/cb_tf32_b$b.json"
    TAIL=3 step cb_f16_b$b 90 $CB --batch $b --dtype f16 --json "$LOGS/cb_f16_b$b.json"
    TAIL=3 step cb_bf16_b$b 90 $CB --batch $b --dtype bf16 --json "$LOGS/cb_bf16_b$b.json"
done
TAIL=12 step torch_peer ${TORCH_LIMIT:-240} python3 tools/convbench/torch_peer.py --warmup 3 \
    --repeats ${REPEATS:-20} --markdown "$LOGS/gpu_vs_torch.md" --json "$LOGS/gpu_vs_torch.json" \
    "$LOGS"/cb_*.json

if [ "${GRAPH:-0}" = 1 ]; then
    step test_gpu_conv_graph ${CONV_GPU_TEST_LIMIT:-200} env CONV_TEST_COUNT=${CONV_TEST_COUNT:-500} \
        CONV_TEST_GPU_ALGO=cudnn_graph "$BIN/test_gpu_conv"
    step test_gpu_conv_legacy ${CONV_GPU_TEST_LIMIT:-200} env CONV_TEST_COUNT=${CONV_TEST_COUNT:-500} \
        CONV_CUDNN_GRAPH=0 "$BIN/test_gpu_conv"
    CBG="$BIN/convbench --device cuda --suite resnet50 --verify --warmup 3 --repeats ${REPEATS:-20} --algo cudnn_graph"
    for b in 1 32; do
        for l in nchw nhwc; do
            TAIL=3 step cbg_f32_${l}_b$b 90 $CBG --batch $b --layout $l --dtype f32 --json "$LOGS/cbg_f32_${l}_b$b.json"
            TAIL=3 step cbg_tf32_${l}_b$b 90 $CBG --batch $b --layout $l --dtype f32 --math fast --json "$LOGS/cbg_tf32_${l}_b$b.json"
            TAIL=3 step cbg_f16_${l}_b$b 90 $CBG --batch $b --layout $l --dtype f16 --json "$LOGS/cbg_f16_${l}_b$b.json"
            TAIL=3 step cbg_bf16_${l}_b$b 90 $CBG --batch $b --layout $l --dtype bf16 --json "$LOGS/cbg_bf16_${l}_b$b.json"
        done
    done
    TAIL=10 step cbg_overhead 60 "$BIN/convbench" --device cuda --overhead --algo cudnn_graph
    TAIL=10 step cb_overhead 60 env CONV_CUDNN_GRAPH=0 "$BIN/convbench" --device cuda --overhead
    TAIL=12 step torch_peer_graph ${TORCH_LIMIT:-240} python3 tools/convbench/torch_peer.py --warmup 3 \
        --repeats ${REPEATS:-20} --markdown "$LOGS/graph_vs_torch.md" --json "$LOGS/graph_vs_torch.json" \
        "$LOGS"/cbg_*.json
fi
cat "$LOGS/summary.txt"
