// Safe rendering of the core's plain-text prose (variant text, hints, explanations) into DOM nodes.
//
// The texts are plain text with a little structure: blank lines separate paragraphs, lines that
// start with "- " or "* " are list items, and `backticks` mark code (metric names, YAML fields).
// Everything goes through textContent, never innerHTML.

/** Replaces the children of `container` with the rendered text. */
export function renderText(container, text) {
  container.replaceChildren(...textBlocks(String(text ?? '')));
}

/** Renders text into a DocumentFragment of block elements. */
export function textFragment(text) {
  const fragment = document.createDocumentFragment();
  fragment.append(...textBlocks(String(text ?? '')));
  return fragment;
}

function textBlocks(text) {
  const blocks = [];
  for (const chunk of text.replace(/\r\n/g, '\n').split(/\n\s*\n/)) {
    const lines = chunk.split('\n').filter((line) => line.trim() !== '');
    if (lines.length === 0) continue;
    let paragraph = [];
    let list = null;
    const flushParagraph = () => {
      if (paragraph.length) {
        const p = document.createElement('p');
        appendInline(p, paragraph.join('\n'));
        blocks.push(p);
        paragraph = [];
      }
    };
    for (const line of lines) {
      const item = /^\s*[-*]\s+(.*)$/.exec(line);
      if (item) {
        flushParagraph();
        if (!list) {
          list = document.createElement('ul');
          blocks.push(list);
        }
        const li = document.createElement('li');
        appendInline(li, item[1]);
        list.append(li);
      } else {
        list = null;
        paragraph.push(line);
      }
    }
    flushParagraph();
  }
  return blocks;
}

/** Appends `text` to `element`, turning `code` spans into <code> and keeping single line breaks. */
export function appendInline(element, text) {
  const parts = String(text).split('`');
  parts.forEach((part, i) => {
    if (part === '') return;
    if (i % 2 === 1 && i < parts.length - 1) {
      const code = document.createElement('code');
      code.textContent = part;
      element.append(code);
    } else {
      const lines = (i % 2 === 1 ? '`' + part : part).split('\n');
      lines.forEach((line, j) => {
        if (j > 0) element.append(document.createElement('br'));
        element.append(line);
      });
    }
  });
}

/** Shorthand for document.createElement with properties and children. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key in node && typeof value !== 'string') node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}
