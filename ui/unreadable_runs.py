"""History's lines for the stored runs this version cannot read (``bench.store.UnreadableRun``): what is wrong,
their raw rows to download and a delete, so that one odd row neither takes the page down nor hides. What a line
shows of the row (its reason quotes what a column held) is outside text, escaped."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from bench.vocab import records
from bench.store import Store, UnreadableRun
from ui import common
from ui.safe_text import escape

REASON_SHOWN = 440  # characters of a line shown; the raw download has all of the row


def show(store: Store, unreadable: Sequence[UnreadableRun], *, key: str) -> None:
    """One line per unreadable run, with "Download raw" (its rows as stored, as JSON: ``export N --raw``) and, for
    a session that may delete runs, "Delete" with a confirmation."""
    if not unreadable:
        return
    st.markdown(f"**{len(unreadable)} stored run(s) cannot be read by this version**, and are left out of the "
                f"table: each can be downloaded as the store holds it, or deleted.")
    for run in unreadable:
        text, download, delete = st.columns([7, 3, 2], vertical_alignment="center")
        text.markdown(escape(run.message, limit=REASON_SHOWN))  # "run #N cannot be read here: REASON", as text
        download.download_button("Download raw", _raw_json(store, run.id), f"run-{run.id}.raw.json",
                                 "application/json", icon=":material/download:", key=f"{key}_raw_{run.id}",
                                 on_click="ignore")
        if common.can_control():
            with delete.popover("Delete", icon=":material/delete:"):
                st.write(f"Delete run #{run.id:d} for good?")
                if st.button("Yes, delete", type="primary", key=f"{key}_delete_{run.id}"):
                    with common.store_errors():
                        store.delete_run(run.id)
                    st.rerun()


def _raw_json(store: Store, run_id: int) -> Callable[[], str]:
    """The download's content, read when the button is pressed (``Store.raw_run``, as ``export N --raw``)."""
    def content() -> str:
        raw = store.raw_run(run_id)
        return records.json_text(raw.to_dict() if raw is not None else {"id": run_id, "deleted": True})
    return content
