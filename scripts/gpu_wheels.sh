#!/usr/bin/env bash
# The wheels `make gpu-verify` needs on a GPU machine that has JAX, torch, pandas, psutil and nvidia-ml-py but no
# TensorFlow, no Streamlit and no network (docs/GPU.md): Keras and Plotly for every step, Streamlit and what it needs
# for the `live` step. Run here, where pip reaches the package index; carry the folder (about 37 MB).
# Usage: scripts/gpu_wheels.sh [FOLDER] [PYTHON_VERSION]   (defaults: .whl, 3.12)
set -euo pipefail
dest=${1:-.whl} py=${2:-3.12}
mkdir -p "$dest"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 \
         manylinux_2_5_x86_64 any; do
    platforms+=(--platform "$p")
done
# --no-deps: the machine already has numpy, pandas, jinja2, attrs, click, h11, anyio, pyarrow, pillow, requests,
# packaging, rich, h5py, ml-dtypes, absl-py and typing-extensions; these are the rest.
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    "${platforms[@]}" -d "$dest" \
    keras namex optree plotly narwhals orjson \
    "streamlit>=1.67,<1.68" altair pydeck starlette uvicorn python-multipart websockets itsdangerous watchdog \
    jsonschema jsonschema-specifications referencing rpds-py "protobuf<7"
du -sh "$dest"
