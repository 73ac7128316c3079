# GPU-capable image for the GPU-vs-CPU training dashboard.
#
#   docker build -t gpu-bench .
#   docker run --rm --gpus all -p 8501:8501 -v gpu-bench-data:/data gpu-bench
#
# `--gpus all` needs the NVIDIA Container Toolkit on the host; without it the
# same image runs CPU-only. The CUDA/cuDNN runtime comes from the pip wheels
# pulled in by tensorflow[and-cuda]; the driver (and NVML) comes from the host.
FROM python:3.11-slim-bookworm

ARG TENSORFLOW_VERSION=2.21.0

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TF_CPP_MIN_LOG_LEVEL=1 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    BENCH_STORE=/data/runs.sqlite3

# Non-root user with a fixed numeric id (so volume ownership is predictable).
RUN groupadd --gid 10001 app \
    && useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin app \
    && mkdir -p /data \
    && chown 10001:10001 /data

WORKDIR /app

# Dependencies first, so code changes do not invalidate this (large) layer.
COPY requirements.txt ./
RUN pip install --no-cache-dir "tensorflow[and-cuda]==${TENSORFLOW_VERSION}" \
    && pip install --no-cache-dir -r requirements.txt

COPY --chown=10001:10001 . .

USER 10001:10001

VOLUME /data
EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=4).status == 200 else 1)"]

CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501"]
