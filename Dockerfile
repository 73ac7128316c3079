# Image of the GPU-vs-CPU training dashboard, in two variants chosen by VARIANT:
#
#   docker build -t cpu-gpu-bench .                             # gpu (default): tensorflow[and-cuda]
#   docker build --build-arg VARIANT=cpu -t cpu-gpu-bench:cpu .  # cpu: tensorflow-cpu, no CUDA
#   docker run --rm --gpus all -p 8501:8501 -v bench-data:/data cpu-gpu-bench
#
# `--gpus all` needs the NVIDIA driver and the NVIDIA Container Toolkit on the host; without them the gpu
# image runs CPU-only. The CUDA/cuDNN runtime comes from the pip wheels that tensorflow[and-cuda] pulls in;
# the driver (and NVML) comes from the host. BASE_IMAGE lets the same file build on a local Debian base
# that has python/pip in /usr/local (see scripts/image_check.py); the default is the official one.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG VARIANT=gpu
ARG TENSORFLOW_VERSION=2.21.0

LABEL org.opencontainers.image.title="cpu-gpu-bench" \
      org.opencontainers.image.description="Streamlit dashboard: how much faster a network trains on a GPU than a CPU" \
      bench.variant="${VARIANT}"

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TF_CPP_MIN_LOG_LEVEL=1 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    HOME=/home/app \
    BENCH_STORE=/data/runs.sqlite3 \
    BENCH_UPLOAD_DIR=/data/uploads \
    KERAS_HOME=/data/keras

# Non-root user with a fixed numeric id, so that the volume's ownership is predictable (chown 10001 a host dir).
RUN groupadd --gid 10001 app \
    && useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin app \
    && mkdir -p /data \
    && chown 10001:10001 /data

WORKDIR /app

# Dependencies in their own layer, before the code, so that a code change does not reinstall them. The cpu
# variant installs tensorflow-cpu (the same TensorFlow without its CUDA kernels: a 261 MB wheel instead of 572 MB,
# about 1.3 GB less installed) in place of the requirements' `tensorflow` line.
COPY requirements.txt ./
RUN case "${VARIANT}" in \
        gpu) tf="tensorflow[and-cuda]" ;; \
        cpu) tf="tensorflow-cpu" ;; \
        *) echo "VARIANT must be cpu or gpu, not '${VARIANT}'" >&2; exit 2 ;; \
    esac \
    && grep -v -E '^tensorflow([^a-z_-]|$)' requirements.txt > /tmp/requirements-without-tensorflow.txt \
    && pip install --no-cache-dir "${tf}==${TENSORFLOW_VERSION}" -r /tmp/requirements-without-tensorflow.txt \
    && rm /tmp/requirements-without-tensorflow.txt

# The code stays owned by root: the app user writes only to /data and its home. Its bytecode is compiled here, since
# the app user cannot write it (PYTHONDONTWRITEBYTECODE): every start would otherwise compile it again.
COPY . .
RUN python -m compileall -q app.py pages ui bench

USER 10001:10001

VOLUME /data
EXPOSE 8501

HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=4).status == 200 else 1)"]

CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501"]
