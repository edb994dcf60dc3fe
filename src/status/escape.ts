// Text into HTML, SVG and Atom (XML): every value a page interpolates goes through `markup`, in
// element content and in quoted attributes alike. Page titles, names, sections and incident texts
// are written by project members and read by anyone. C0 controls other than tab, newline and
// carriage return (which XML 1.0 cannot hold at all) become U+FFFD.

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

// eslint-disable-next-line no-control-regex
const UNWRITABLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

export const markup = (s: string): string => s.replace(UNWRITABLE, "\ufffd").replace(/[&<>"']/g, (c) => ENTITIES[c]);
