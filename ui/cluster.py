"""The dashboard on a Ray cluster: BENCH_RAY_ADDRESS set where the server starts sends its runs to the cluster (each
alone on a node's device, a comparison's or sweep's side by side), and the pages show what the cluster holds and
where each run goes. A cluster that cannot be reached leaves the dashboard on this machine, saying why.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from bench.cluster import nodes
from ui.safe_text import escape


@st.cache_resource(show_spinner=False)
def launcher() -> tuple[Any, str | None]:
    """(the launcher onto BENCH_RAY_ADDRESS's cluster, None) once per server; (None, why) when it cannot be used;
    (None, None) when no cluster is set."""
    address = nodes.address_of(None)
    if address is None:
        return None, None
    from bench.cluster.launch import ClusterLauncher

    try:
        return ClusterLauncher(address), None
    except nodes.ClusterError as exc:
        return None, str(exc)


def where_text(snap: Any) -> str:
    """Where a run goes, in words for a table cell: ``node 95a3640e (CPU node_b)``; empty for a local run."""
    where = snap.info.ray if snap.info is not None else None
    if where is None:
        return ""
    return f"node {(where.node_id or '')[:8]} ({where.kind or '?'})"


def state_with_where(snap: Any) -> str:
    """A sweep point's state, with its node when it runs on the cluster."""
    where = where_text(snap)
    return f"{snap.phase} · {where}" if where else str(snap.phase)


def cluster_panel() -> None:
    """The cluster setting as the System page shows it: the address, or why it is not used, and every node with its
    resources and the hardware discovered there."""
    found, why = launcher()
    address = nodes.address_of(None)
    if address is None:
        st.caption(f"Runs train on this machine. To send them to a Ray cluster, start the dashboard with "
                   f"`{nodes.ADDRESS_ENV}=HOST:PORT` (the head's address; docs/CLUSTER.md).")
        return
    if found is None:
        st.error(f"The Ray cluster is not used: {escape(why or '', limit=800)}", icon=":material/lan:")
        return
    try:
        inventory = nodes.inventory(found.address)
    except nodes.ClusterError as exc:
        st.error(f"The Ray cluster cannot be read now: {escape(exc, limit=800)}", icon=":material/lan:")
        return
    st.success(f"Runs go to the Ray cluster at `{escape(found.address)}`: {len(inventory)} node(s). Each run holds a "
               "node's cores (CPU) or a whole GPU; a comparison's or sweep's runs go side by side.",
               icon=":material/lan:")
    st.dataframe([{"node": n["node_id"][:8], "address": n["node_ip"], "kind": n["kind"], "CPUs": n["cpus"],
                   "GPUs": n["gpus"], "accelerator": n["accelerator_type"] or "—",
                   "custom resources": ", ".join(n["custom_resources"]) or "—",
                   "hardware found there": n["hardware"] or n.get("why", "")} for n in inventory],
                 hide_index=True, width="stretch")
