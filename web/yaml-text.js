// YAML as the page reads it and writes it: the text read the way kubectl reads it, syntax errors in
// the learner's words, a core error's JSON path found on its line, and JSON written out as YAML.
// Shared by the NodePool editor, the Scheduler view and the playground's scenario editor; no DOM,
// so the node tests read the presets with exactly these functions.
import { Document, LineCounter, isMap, isPair, isSeq, parseAllDocuments, visit } from 'yaml';

// kubectl reads YAML with sigs.k8s.io/yaml over go-yaml v2: YAML 1.1 scalars (yes/no/on/off are
// booleans, 010 is octal), but no base-60 numbers (1:30 stays a string). docs/nodepool.md, "Input".
export const YAML_OPTIONS = {
  version: '1.1',
  uniqueKeys: true,
  customTags: (tags) => tags.filter((tag) => tag.format !== 'TIME'),
};

// The yaml package's error codes in the learner's words: what is wrong and what to change. The
// package's own sentence follows, for anyone who knows YAML's terms.
const YAML_ADVICE = {
  TAB_AS_INDENT: 'A tab indents this line: YAML indents with spaces only. Replace the tab with spaces.',
  BAD_INDENT: 'This line is indented differently from the lines it belongs with: line it up with its siblings (same number of spaces), or two more spaces under its parent.',
  MISSING_CHAR: 'Something is missing here, often a colon after a key ("key: value") or a closing quote or bracket.',
  MULTILINE_IMPLICIT_KEY: 'This line has a key without its colon, or a key that runs on from the line before: write "key: value" on one line.',
  BLOCK_AS_IMPLICIT_KEY: 'A list or map stands where a key should be: check the colon and the indentation of this line.',
  DUPLICATE_KEY: 'This key appears twice in the same map: keep one of them.',
  UNEXPECTED_TOKEN: 'YAML did not expect this character here: check the line for a stray character, a missing space after a colon or after "-".',
  BAD_SCALAR_START: 'A value cannot start with this character unquoted: put the value in quotes.',
  BAD_DQ_ESCAPE: 'A backslash in double quotes starts an escape YAML does not know: use single quotes, or double the backslash.',
  BLOCK_IN_FLOW: 'A block (indented lines) sits inside brackets or braces: write the whole item inside the brackets, or drop them.',
  MULTIPLE_DOCS: 'A second document starts here ("---"): the editor takes one document.',
  NON_STRING_KEY: 'A key must be plain text here: write it without brackets or braces.',
  BAD_ALIAS: 'An alias (*name) points at no anchor (&name) above it.',
  RESOURCE_EXHAUSTION: 'The text expands to too much (aliases inside aliases): write the values out.',
};

const indentOf = (line) => /^ */.exec(line)[0].length;

/**
 * A key indented further than the keys beside it ("  name: gpu" then "   labels: {}") reads to the
 * package as the value running on into a second line that is a key: it reports the line before.
 * The line to fix is the one indented more, as the CLI's reader says.
 */
function overIndented(error, lines) {
  if (error.code !== 'BLOCK_AS_IMPLICIT_KEY' && error.code !== 'MULTILINE_IMPLICIT_KEY') return null;
  const at = error.linePos?.[0]?.line;
  const here = lines[at - 1], next = lines[at];
  if (here === undefined || next === undefined || next.trim() === '' || !/^\s*[^\s#][^:]*:(\s|$)/.test(here)) return null;
  if (indentOf(next) <= indentOf(here)) return null;
  return {
    message: `This line is indented more than the keys above it (${indentOf(next)} spaces against ${indentOf(here)}): line it up with its siblings, or put it under a key that ends with a colon. The line reads: "${next.trim().slice(0, 80)}".`,
    line: at + 1, col: indentOf(here) + 1, code: error.code,
  };
}

/** A YAML error in plain words, with the line the learner must fix quoted. */
export function plainYamlError(error, text) {
  const shifted = overIndented(error, String(text).split(/\r?\n/));
  if (shifted) return shifted;
  const at = error.linePos?.[0];
  const own = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
  const unclosed = /end with a ([\]}])/.exec(own)?.[1];
  const advice = unclosed ? `A "${unclosed === ']' ? '[' : '{'}" is not closed: end it with "${unclosed}" on the same line, or write the items one per line.`
    : YAML_ADVICE[error.code];
  const line = at ? String(text).split(/\r?\n/)[at.line - 1] : undefined;
  const quoted = line !== undefined && line.trim() !== '' ? ` The line reads: "${line.trim().slice(0, 80)}".` : '';
  return { message: advice ? `${advice}${quoted} (YAML: ${own}.)` : `${own}.${quoted}`, line: at?.line, col: at?.col, code: error.code };
}

/**
 * Reads every document of a YAML stream as kubectl would.
 * @returns {{ok: true, docs: {doc, value}[], lineCounter} |
 *           {ok: false, error: {message: string, line?: number, col?: number}}}
 */
export function readYamlDocuments(text) {
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(String(text), { ...YAML_OPTIONS, lineCounter });
  const docs = Array.isArray(parsed) ? parsed : [];
  for (const doc of docs) {
    const error = doc.errors[0];
    // The package appends "at line L, column C:" and a code excerpt; the position is shown apart.
    if (error) return { ok: false, error: plainYamlError(error, text) };
  }
  for (const doc of docs) {
    const error = noJsonForm(doc, lineCounter);
    if (error) return { ok: false, error };
  }
  try {
    return { ok: true, docs: docs.map((doc) => ({ doc, value: doc.toJS({ maxAliasCount: 100 }) })), lineCounter };
  } catch (e) {
    return { ok: false, error: { message: e.message } };
  }
}

/**
 * What YAML can say and JSON (so the API server, and the core) cannot: an infinite or NaN number
 * (.inf, 1e400) and an alias inside the value its anchor names (a value that contains itself). The
 * first such node, with its line; null when there is none.
 */
function noJsonForm(doc, lineCounter) {
  let found = null;
  const where = (node) => lineCounter.linePos(node.range?.[0] ?? 0);
  visit(doc, {
    Scalar(_, node) {
      if (typeof node.value !== 'number' || Number.isFinite(node.value)) return undefined;
      const written = String(node.source ?? node.value);
      found = { message: `The number ${written} has no JSON form (JSON holds finite numbers only, and so does the API server): write a finite number.`, ...where(node) };
      return visit.BREAK;
    },
    Alias(_, node, path) {
      if (!path.some((outer) => outer?.anchor === node.source)) return undefined;
      found = { message: `The alias *${node.source} stands inside the value it names (&${node.source}): that value would contain itself. Write the value out instead.`, ...where(node) };
      return visit.BREAK;
    },
  });
  return found;
}

/** A value as JSON holds it: a YAML 1.1 timestamp becomes its ISO text, as sigs.k8s.io/yaml makes it. */
export function asJson(value) {
  return JSON.parse(JSON.stringify(value ?? null));
}

/**
 * Reads a text that must hold exactly one YAML document (comments aside) of `what`.
 * @returns {{ok: true, value: any, doc, lineCounter} |
 *           {ok: false, empty?: true, error: {message: string, line?: number, col?: number}}}
 */
export function readOneYaml(text, { what }) {
  if (String(text).trim() === '') return { ok: false, empty: true, error: { message: `The editor is empty: write ${what}.` } };
  const read = readYamlDocuments(text);
  if (!read.ok) return read;
  const docs = read.docs.filter(({ doc }) => doc.contents !== null);
  if (docs.length === 0) return { ok: false, empty: true, error: { message: `No ${what} in the text (only comments).` } };
  if (docs.length > 1) {
    const at = read.lineCounter.linePos(docs[1].doc.range[0]);
    return { ok: false, error: { message: `The text holds ${docs.length} documents ("---" starts another); write exactly one: ${what}.`, line: at.line, col: at.col } };
  }
  return { ok: true, value: asJson(docs[0].value), doc: docs[0].doc, lineCounter: read.lineCounter };
}

/** Unescapes one JSON Pointer segment ("nvidia.com~1gpu" → "nvidia.com/gpu"). */
function unescapeSegment(segment) {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/**
 * Where a JSON Pointer (a path from the core) is in the text: the line of its key or item, or of
 * the deepest part that is written when the field itself is not (`exact` false: a default applies).
 * @returns {{line: number, col: number, exact: boolean}}
 */
export function locatePath(doc, lineCounter, pointer) {
  let node = doc.contents;
  let offset = node?.range?.[0] ?? doc.range?.[0] ?? 0;
  let exact = true;
  const segments = pointer ? pointer.split('/').slice(1).map(unescapeSegment) : [];
  for (const segment of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => String(p.key?.value ?? p.key) === segment);
      if (!pair) { exact = false; break; }
      offset = pair.key?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && /^\d+$/.test(segment) && node.items[Number(segment)]) {
      node = node.items[Number(segment)];
      offset = node.range?.[0] ?? offset;
    } else {
      exact = false;
      break;
    }
  }
  const { line, col } = lineCounter.linePos(offset);
  return { line, col, exact };
}

/**
 * A top-level scalar of a one-document text (e.g. `scheduler`): its value and where the value is
 * written ([start, end) offsets), or where a new `key: value` line would go when it is not written.
 * @returns {{value: any, range: [number, number]} | {value: undefined, insertAt: number} | null}
 *   null when the text is not a block mapping the page can edit in place
 */
export function topLevelScalar(doc, key) {
  const map = doc?.contents;
  if (!isMap(map) || map.flow) return null;
  const pair = map.items.find((p) => String(p.key?.value ?? p.key) === key);
  if (!pair) {
    const first = map.items[0]?.key?.range?.[0] ?? map.range?.[0] ?? 0;
    return { value: undefined, insertAt: first };
  }
  const value = pair.value;
  if (!value || value.items || !value.range) return null;
  return { value: value.value, range: [value.range[0], value.range[1]] };
}

/**
 * JSON written out as YAML a learner can read and edit: YAML 1.1 quoting (a "true" or "16" string
 * stays a string when read back), small leaf objects and lists on one line, a header comment and a
 * comment before chosen keys (`comments`: "/json/pointer" → text). Reading the text back gives the
 * same JSON.
 */
export function yamlOfJson(value, { header = '', comments = {}, flowWidth = 72 } = {}) {
  const doc = new Document(value, { version: '1.1' });
  if (header) doc.commentBefore = commentText(header);
  visit(doc, {
    Pair(_, pair, path) {
      const pointer = pointerOf(path, pair);
      if (comments[pointer] && pair.key && typeof pair.key === 'object') pair.key.commentBefore = commentText(comments[pointer]);
    },
    Map(_, node) { flowIfSmall(node, flowWidth); },
    Seq(_, node) { flowIfSmall(node, flowWidth); },
  });
  return doc.toString({ lineWidth: 0 });
}

function commentText(text) {
  return String(text).split('\n').map((line) => (line ? ` ${line}` : '')).join('\n');
}

/** The JSON pointer of a pair from its ancestors (visit's path: Document, then nodes and pairs). */
function pointerOf(path, pair) {
  const parts = [];
  for (let i = 1; i < path.length; i++) {
    const node = path[i];
    if (isPair(node)) parts.push(String(node.key?.value ?? node.key));
    else if (isSeq(node)) {
      const child = path[i + 1] ?? pair;
      parts.push(String(node.items.indexOf(child)));
    }
  }
  parts.push(String(pair.key?.value ?? pair.key));
  return `/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

/** A map or list of scalars only, short enough for one line, is written `{a: 1, b: 2}` / `[x, y]`. */
function flowIfSmall(node, width) {
  const leaves = node.items.every((item) => {
    const v = isPair(item) ? item.value : item;
    return !isMap(v) && !isSeq(v);
  });
  if (leaves && node.items.length && JSON.stringify(node.toJSON()).length <= width) node.flow = true;
}
