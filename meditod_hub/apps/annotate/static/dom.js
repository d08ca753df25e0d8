// DOM helpers shared by every module. Text from the release is only ever set with textContent.
export const $ = (sel) => document.querySelector(sel);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}

export const clone = (x) => JSON.parse(JSON.stringify(x));
export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// One shared <datalist> per id, refilled with the given values.
export function datalist(id, values) {
  let node = document.getElementById(id);
  if (!node) { node = el("datalist", {id}); document.body.append(node); }
  node.replaceChildren(...[...new Set(values)].sort().map((v) => el("option", {value: v})));
  return id;
}
