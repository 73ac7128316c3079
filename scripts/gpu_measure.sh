#!/usr/bin/env bash
# The real GPU path on a lent GPU machine (no TensorFlow there: Keras 3 on JAX, or torch, carried as wheels in .whl/).
# Usage: scripts/gpu_measure.sh STEP OUTDIR   (STEP: presets | sweeps | after | steps | torch | scaling)
# Every result is a `python -m bench` JSON record; docs/GPU.md reports them.
set -u
step=$1 out=$2
export PYTHONUNBUFFERED=1 BENCH_STORE=/tmp/bench-gpu.sqlite3 KERAS_BACKEND=${KERAS_BACKEND:-jax}
log=$out/log-$step.txt
bench() { echo "+ python -m bench $*" | tee -a "$log"; timeout 400 python3 -m bench "$@" 2>&1 | tail -6 | tee -a "$log"; }
# jit on both sides of every JAX pair: without it JAX runs op by op.
jit=(); [[ $KERAS_BACKEND == jax ]] && jit=(--jit-compile)
# The step floor: does running several steps per compiled call lift it? Model sizes across 1,400x in parameters at
# batch 128 (where the H100's step took ~2 ms whatever the size), 1, 8 and 32 steps per execution, CPU beside it.
steps_sweep() {
    bench sweep --model mlp --sizes xs,m,xl --targets gpu:0,cpu --steps-per-execution 1,8,32 --epochs 3 \
        --batch-size 128 --limit-samples 30000 --sample-interval 0.2 "${jit[@]}" --json "$out/sweep_steps.json"
}
case $step in
presets)
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee -a "$log"
    python3 -c 'import keras, sys; print("keras", keras.__version__, "python", sys.version.split()[0])' | tee -a "$log"
    python3 -m bench devices --json --probe > "$out/devices.json" 2>>"$log"
    timeout 240 python3 -m pytest -q -p no:cacheprovider tests/unit/test_gpu_real.py 2>&1 | tail -8 | tee -a "$log"
    bench compare --targets cpu,gpu:0 --dataset synthetic-mnist --model mlp --size s --epochs 3 --batch-size 128 \
        "${jit[@]}" --json "$out/issue2.json"
    bench compare --targets cpu,gpu:0 --dataset synthetic-mnist --model seed-mnist-dense --epochs 3 --batch-size 32 \
        --limit-samples 60000 "${jit[@]}" --json "$out/mnist.json"
    bench compare --targets cpu,gpu:0 --dataset synthetic-imdb --model seed-text --epochs 3 --batch-size 32 \
        --limit-samples 25000 "${jit[@]}" --json "$out/text.json"
    bench compare --targets cpu,gpu:0 --dataset synthetic-cifar10 --model seed-cifar10-mlp --epochs 3 --batch-size 32 \
        --limit-samples 50000 "${jit[@]}" --json "$out/cifar.json"
    ;;
sweeps)
    bench sweep --model mlp --sizes xs,s,m,l,xl --targets gpu:0,cpu --epochs 3 --batch-size 128 --limit-samples 30000 \
        --sample-interval 0.2 "${jit[@]}" --json "$out/sweep.json"
    # 8 epochs sampled every 0.1 s: MLP xl at batch 2048 runs 0.1 s epochs on an H100, and the diagnosis needs 3
    # samples inside the steady epochs (with 3 epochs at 0.2 s it said `undetermined`, 2026-11-25).
    bench sweep --model mlp --sizes xs,m,xl --targets gpu:0 --batch-sizes 32,256,2048 --epochs 8 \
        --limit-samples 60000 --sample-interval 0.1 "${jit[@]}" --json "$out/sweep_batch.json"
    ;;
after)  # everything that the engine's per-batch callback affects, with the callback Keras may run off the loop
    start=$SECONDS
    left() { (( SECONDS - start < $1 )); }
    timeout 150 python3 scripts/gpu_engine_vs_bare.py "$out/evb_jax.json" 3 2>&1 | tail -8 | tee -a "$log"
    bench compare --targets cpu,gpu:0 --dataset synthetic-mnist --model mlp --size s --epochs 3 --batch-size 128 \
        "${jit[@]}" --json "$out/issue2.json"
    bench compare --targets cpu,gpu:0 --dataset synthetic-mnist --model seed-mnist-dense --epochs 3 --batch-size 32 \
        --limit-samples 60000 "${jit[@]}" --json "$out/mnist.json"
    left 300 && bench sweep --model mlp --sizes xs,s,m,l,xl --targets gpu:0,cpu --epochs 3 --batch-size 128 \
        --limit-samples 30000 --sample-interval 0.2 "${jit[@]}" --json "$out/sweep.json"
    left 430 && bench compare --targets cpu,gpu:0 --dataset synthetic-cifar10 --model seed-cifar10-mlp --epochs 3 \
        --batch-size 32 --limit-samples 15000 "${jit[@]}" --json "$out/cifar.json"
    left 470 && KERAS_BACKEND=torch bench compare --targets cpu,gpu:0 --dataset synthetic-mnist --model mlp --size s \
        --epochs 3 --batch-size 128 --json "$out/torch_issue2.json"
    left 520 && bench compare --targets cpu,gpu:0 --dataset synthetic-imdb --model seed-text --epochs 3 --batch-size 32 \
        --limit-samples 25000 "${jit[@]}" --json "$out/text.json"
    left 560 && steps_sweep
    ;;
steps)
    steps_sweep
    ;;
scaling)  # data-parallel over 1, 2, 4, 8 GPUs (as many as there are), small to large model, same global batch
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if (( gpus < 2 )); then
        echo "scaling: skipped: $gpus GPU(s) here; data-parallel scaling needs two or more" | tee -a "$log"
    else
        counts=1; for k in 2 4 8; do (( k <= gpus )) && counts+=",$k"; done
        bench sweep --model mlp --sizes xs,m,xl --targets gpus --devices "$counts" --epochs 3 --batch-size 256 \
            --limit-samples 60000 --sample-interval 0.2 --no-peak "${jit[@]}" --json "$out/sweep_scaling.json"
    fi
    ;;
torch)  # the torch backend itself (KERAS_BACKEND defaults to jax above)
    export KERAS_BACKEND=torch
    timeout 200 python3 -m pytest -q -p no:cacheprovider tests/unit/test_gpu_real.py 2>&1 | tail -8 | tee -a "$log"
    bench compare --targets cpu,gpu:0 --dataset synthetic-mnist --model mlp --size s --epochs 3 --batch-size 128 \
        --json "$out/torch_issue2.json"
    ;;
esac
