// The loader of this element: its code is ui/static/live.js, fetched once per browser from the address in its data.
export default function (component) {
  const url = component.data && component.data.script;
  if (!url) return;
  import(new URL(url, window.location.href).href).then((m) => m.headerElement(component))
    .catch((err) => console.error("live_header", err));
}
