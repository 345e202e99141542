// Metnos web chat: the model's text as markdown, safely, and as it streams in.
// markdown-it (raw HTML off) turns the text into HTML; DOMPurify then keeps only the tags and
// attributes markdown produces. The result is a DOM fragment, never a string put into
// innerHTML. Both libraries are vendored next to this file (see README.md there).
"use strict";

window.MetnosRender = (() => {
  const md = window.markdownit({ html: false, linkify: false, typographer: false, breaks: true });
  const PURIFY = {
    ALLOWED_TAGS: ["p", "br", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li", "a",
                   "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr",
                   "th", "td", "s", "del"],
    ALLOWED_ATTR: ["href", "title", "start"],
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  };
  window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  });

  // Replace `element`'s children with `text` rendered as sanitised markdown.
  function markdown(element, text) {
    element.replaceChildren(window.DOMPurify.sanitize(md.render(text || ""), PURIFY));
  }

  // A bubble whose text streams in: `add` appends a piece (a new `think` starts over) and
  // re-renders at most every `everyMs`; `finish` shows the final text at once.
  function streaming(body, everyMs) {
    let text = "";
    let think = null;
    let timer = null;
    const flush = () => { timer = null; markdown(body, text); };
    return {
      add(piece, n) {
        if (n !== think) { think = n; text = ""; }
        text += piece;
        if (timer === null) timer = setTimeout(flush, everyMs);
      },
      finish(final) {
        if (timer !== null) { clearTimeout(timer); timer = null; }
        text = final;
        markdown(body, final);
      },
      get text() { return text; },
    };
  }

  return { markdown, streaming };
})();
